"""Pushing and pulling images over the OCI distribution API, with no container engine.

>>> digest = push(build_image(files, labels), "127.0.0.1:5000/etcd/bundle:0.1.0")
>>> pull("127.0.0.1:5000/etcd/bundle:0.1.0").files()

Loopback registries are spoken to over plain HTTP (as docker and podman do), others over
HTTPS; ``OLMTOOL_REGISTRY_CA`` adds a CA bundle to trust. Credentials come from the
``auth`` argument, else, for a loopback registry a running local cluster serves, from the
cluster's state, else from the docker/podman config file; Basic and Bearer-token
challenges are both answered. A refusal with 401 names the login sent and its source.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import socket
import ssl
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import certifi
import httpx

from olmtool import __version__
from olmtool.errors import InputError, OlmtoolError
from olmtool.images.credentials import Credentials, auth_file, default_credentials
from olmtool.images.image import (
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    INDEXES,
    OCI_INDEX,
    OCI_MANIFEST,
    Blob,
    Image,
    digest_of,
    parse_manifest,
    select_platform,
)
from olmtool.images.reference import Reference, is_loopback, parse_reference

Progress = Callable[[int, int], None]
"""Called with ``(done_bytes, total_bytes)`` after each blob is transferred or skipped."""

CA_ENV = "OLMTOOL_REGISTRY_CA"
MANIFEST_ACCEPT = ", ".join((OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST))
_CHALLENGE_PART = re.compile(r'\s*([\w.-]+)(?:\s*=\s*("(?:[^"\\]|\\.)*"|[^,\s]*))?\s*,?')


class RegistryError(OlmtoolError):
    """A registry refused a request, could not be reached, or served inconsistent data."""


@dataclass(frozen=True)
class Challenge:
    """One ``WWW-Authenticate`` challenge: ``scheme`` in lower case and its parameters."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)


def push(
    image: Image,
    ref: Reference | str,
    *,
    auth: Credentials | None = None,
    insecure: bool | None = None,
    progress: Progress | None = None,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """Upload ``image``'s blobs (skipping those present) and tag it; returns its digest.

    ``transport`` replaces the network (``httpx.MockTransport`` in tests).
    """
    ref = _as_reference(ref)
    if ref.digest and ref.digest != image.digest:
        raise RegistryError(f"push {ref}: the image's digest is {image.digest}")
    with RegistryClient(ref, "push", auth=auth, insecure=insecure, transport=transport) as client:
        client.ping()
        blobs = image.blobs()
        total, done = sum(len(blob.data) for blob in blobs), 0
        for blob in blobs:
            client.upload_blob(blob)
            done += len(blob.data)
            if progress:
                progress(done, total)
        for target in filter(None, (ref.tag, ref.digest)):
            client.put_manifest(target, image)
    return image.digest


def pull(
    ref: Reference | str,
    *,
    auth: Credentials | None = None,
    insecure: bool | None = None,
    progress: Progress | None = None,
    architecture: str = "amd64",
    os: str = "linux",
    transport: httpx.BaseTransport | None = None,
) -> Image:
    """Download the image ``ref`` names (the ``os/architecture`` one of an index)."""
    ref = _as_reference(ref)
    with RegistryClient(ref, "pull", auth=auth, insecure=insecure, transport=transport) as client:
        client.ping()
        return _pull_with(client, progress, architecture=architecture, os=os)


def pull_all(
    refs: Sequence[Reference | str],
    *,
    workers: int = 8,
    auth: Credentials | None = None,
    insecure: bool | None = None,
    architecture: str = "amd64",
    os: str = "linux",
    transport: httpx.BaseTransport | None = None,
) -> Iterator[Image]:
    """Every image ``refs`` name, in that order, pulled ``workers`` at a time over shared
    connections (each registry asked ``GET /v2/`` once), at most ``workers`` ahead of the
    consumer. A failed pull raises its RegistryError where its image would be yielded."""
    parsed = [_as_reference(ref) for ref in refs]
    pinged: dict[str, Future[None]] = {}
    lock = threading.Lock()
    with (
        _http_client(transport=transport) as http,
        ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="pull") as pool,
    ):

        def pull_one(ref: Reference) -> Image:
            with RegistryClient(ref, "pull", auth=auth, insecure=insecure, http=http) as client:
                with lock:  # one ping per registry, shared by every pull from it
                    first = ref.registry not in pinged
                    if first:
                        pinged[ref.registry] = Future()
                    ping = pinged[ref.registry]
                if first:
                    try:
                        client.ping()
                        ping.set_result(None)
                    except BaseException as exc:
                        ping.set_exception(exc)
                ping.result()
                return _pull_with(client, None, architecture=architecture, os=os)

        pending: deque[Future[Image]] = deque()
        try:
            for ref in parsed:
                pending.append(pool.submit(pull_one, ref))
                if len(pending) > workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # the consumer stopped early or a pull failed: do not wait for the rest
            pool.shutdown(wait=True, cancel_futures=True)


def _pull_with(
    client: RegistryClient, progress: Progress | None, *, architecture: str, os: str
) -> Image:
    ref = client.ref
    data, media_type = client.get_manifest(ref.identifier, ref.digest)
    manifest = client.check(parse_manifest, data, media_type)
    if manifest["mediaType"] in INDEXES:
        chosen = client.check(select_platform, manifest, architecture=architecture, os=os)
        data, media_type = client.get_manifest(chosen["digest"], chosen["digest"])
        manifest = client.check(parse_manifest, data, media_type)
    descriptors = [manifest["config"], *manifest["layers"]]
    total, done, blobs = sum(int(d.get("size", 0)) for d in descriptors), 0, []
    for descriptor in descriptors:
        blobs.append(client.get_blob(descriptor["digest"]))
        done += len(blobs[-1])
        if progress:
            progress(done, max(total, done))
    return Image(data, blobs[0], tuple(blobs[1:]), manifest["mediaType"])


def parse_challenges(header: str) -> list[Challenge]:
    """The challenges of a ``WWW-Authenticate`` header, in order.

    >>> parse_challenges('Bearer realm="https://a/t",scope="repository:x:pull,push"')[0].params
    {'realm': 'https://a/t', 'scope': 'repository:x:pull,push'}
    """
    parsed: list[tuple[str, dict[str, str]]] = []
    for match in _CHALLENGE_PART.finditer(header):
        name, value = match.group(1), match.group(2)
        if value is None:
            parsed.append((name.lower(), {}))
        elif parsed:
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            parsed[-1][1][name.lower()] = value
    return [Challenge(scheme, params) for scheme, params in parsed]


class RegistryClient:
    """One conversation with one repository: scheme, TLS, credentials and cached tokens.

    ``action`` ("push" or "pull") picks the token scope and starts every error message.
    """

    def __init__(
        self,
        ref: Reference,
        action: str,
        *,
        auth: Credentials | None = None,
        insecure: bool | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        http: httpx.Client | None = None,
    ):
        self.ref = ref
        self.action = action
        self.credentials = (
            auth if auth is not None else default_credentials(ref.registry, ref.repository)
        )
        self.base = httpx.URL(f"{_scheme(ref.registry, insecure)}://{ref.api_host}")
        self.scope = f"repository:{ref.repository}:{'pull,push' if action == 'push' else 'pull'}"
        self._owns_http = http is None
        self._http = http or _http_client(timeout=timeout, transport=transport)
        self._authorization: str | None = None
        self._tokens: dict[tuple[str, str, tuple[str, ...]], str] = {}

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def ping(self) -> None:
        """``GET /v2/``: checks it is a registry and settles authentication up front."""
        response = self.request("GET", "/v2/", ok=(200, 401))
        if response.status_code == 401 and not _is_bearer(response):
            raise self._refused(response)

    def upload_blob(self, blob: Blob) -> bool:
        """Upload ``blob`` in one PUT unless the registry has it; True if it was sent."""
        path = f"/v2/{self.ref.repository}/blobs/{blob.digest}"
        if self.request("HEAD", path, ok=(200, 404)).status_code == 200:
            return False
        started = self.request("POST", f"/v2/{self.ref.repository}/blobs/uploads/", ok=(202,))
        location = started.headers.get("location")
        if not location:
            raise RegistryError(f"{self.action} {self.ref}: upload started without a Location")
        url = started.url.join(location).copy_merge_params({"digest": blob.digest})
        headers = {"Content-Type": "application/octet-stream"}
        self.request("PUT", url, headers=headers, content=blob.data, ok=(201, 204))
        return True

    def put_manifest(self, target: str, image: Image) -> None:
        response = self.request(
            "PUT",
            f"/v2/{self.ref.repository}/manifests/{target}",
            headers={"Content-Type": image.media_type},
            content=image.manifest,
            ok=(200, 201, 204),
        )
        stored = response.headers.get("docker-content-digest")
        if stored and stored != image.digest:
            raise RegistryError(
                f"{self.action} {self.ref}: registry stored digest {stored}, not {image.digest}"
            )

    def get_manifest(self, target: str, expected: str | None) -> tuple[bytes, str | None]:
        """The manifest bytes and Content-Type; ``expected`` is the digest they must have."""
        response = self.request(
            "GET",
            f"/v2/{self.ref.repository}/manifests/{target}",
            headers={"Accept": MANIFEST_ACCEPT},
        )
        self._verify(response.content, expected, "manifest")
        media_type = response.headers.get("content-type", "").partition(";")[0].strip()
        return response.content, media_type or None

    def get_blob(self, digest: str) -> bytes:
        response = self.request("GET", f"/v2/{self.ref.repository}/blobs/{digest}")
        self._verify(response.content, digest, "blob")
        return response.content

    def check(self, parse: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``parse``, reporting its InputError as this registry serving bad data."""
        try:
            return parse(*args, **kwargs)
        except InputError as exc:
            raise RegistryError(f"{self.action} {self.ref}: {exc.message}") from None

    def request(
        self,
        method: str,
        target: str | httpx.URL,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        ok: Sequence[int] = (200,),
    ) -> httpx.Response:
        """Send, answering 401 challenges (each at most once), and insist on an ``ok`` status."""
        url = self.base.join(target)
        answered: set[tuple[str, str, str]] = set()
        while True:
            response = self._send(method, url, headers, content)
            if response.status_code != 401:
                break
            challenge = _supported(response)
            if challenge is None:
                break
            key = (
                challenge.scheme,
                challenge.params.get("realm", ""),
                challenge.params.get("scope", ""),
            )
            if key in answered or (authorization := self._answer(challenge)) is None:
                break
            answered.add(key)
            self._authorization = authorization
        if response.status_code not in ok:
            raise self._refused(response)
        return response

    def _send(
        self,
        method: str,
        url: httpx.URL,
        headers: Mapping[str, str] | None,
        content: bytes | None,
    ) -> httpx.Response:
        sent = dict(headers or {})
        if self._authorization and url.netloc == self.base.netloc:
            sent["Authorization"] = self._authorization  # never to another host
        try:
            return self._http.request(method, url, headers=sent, content=content)
        except httpx.TransportError as exc:
            raise RegistryError(
                f"cannot reach registry {self.ref.registry}: {_transport_problem(exc)}"
            ) from None

    def _answer(self, challenge: Challenge) -> str | None:
        """The Authorization header answering ``challenge``, or None if we cannot."""
        if challenge.scheme == "basic":
            return _basic(self.credentials) if self.credentials else None
        realm = challenge.params.get("realm", "")
        service = challenge.params.get("service", "")
        scopes = tuple(dict.fromkeys(filter(None, (challenge.params.get("scope"), self.scope))))
        key = (realm, service, scopes)
        cached = self._tokens.get(key)
        if cached is None or f"Bearer {cached}" == self._authorization:
            cached = self._tokens[key] = self._fetch_token(realm, service, scopes)
        return f"Bearer {cached}"

    def _fetch_token(self, realm: str, service: str, scopes: tuple[str, ...]) -> str:
        if not realm.startswith(("https://", "http://")):
            raise RegistryError(f"{self.action} {self.ref}: bad token realm {realm!r}")
        params = [("service", service)] if service else []
        params += [("scope", scope) for scope in scopes]
        headers = {"Authorization": _basic(self.credentials)} if self.credentials else {}
        try:
            response = self._http.get(realm, params=params, headers=headers)
        except httpx.TransportError as exc:
            host = httpx.URL(realm).netloc.decode()
            raise RegistryError(
                f"cannot reach token server {host}: {_transport_problem(exc)}"
            ) from None
        if response.status_code != 200:
            raise RegistryError(
                f"{self.action} {self.ref} refused: token server said {_describe(response)}"
                + self._credentials_hint(response)
            )
        try:
            body = response.json()
            return str(body.get("token") or body["access_token"])
        except (ValueError, KeyError, AttributeError):
            raise RegistryError(f"{self.action} {self.ref}: token server sent no token") from None

    def _verify(self, data: bytes, expected: str | None, what: str) -> None:
        if expected and digest_of(data) != expected:
            raise RegistryError(
                f"{self.action} {self.ref}: {what} {expected} arrived with digest {digest_of(data)}"
            )

    def _refused(self, response: httpx.Response) -> RegistryError:
        return RegistryError(
            f"{self.action} {self.ref} refused: {_describe(response)}"
            + self._credentials_hint(response)
        )

    def _credentials_hint(self, response: httpx.Response) -> str:
        """For a 401: the login sent and where it came from, or where none was found."""
        if response.status_code != 401:
            return ""
        if self.credentials:
            return f" ({self.credentials.describe()})"
        hint = f" (no credentials for {self.ref.registry} in the auth argument or {auth_file()}"
        if is_loopback(self.ref.registry):  # perhaps an olmtool cluster's registry
            hint += (
                "; no running local cluster serves it: an olmtool cluster's login is the "
                "docker config `olmtool cluster status` shows"
            )
        return hint + ")"


def _as_reference(ref: Reference | str) -> Reference:
    return ref if isinstance(ref, Reference) else parse_reference(ref)


def _scheme(registry: str, insecure: bool | None) -> str:
    """HTTP for loopback unless told otherwise, HTTPS elsewhere unless ``insecure``."""
    if insecure is None:
        return "http" if is_loopback(registry) else "https"
    return "http" if insecure else "https"


def _http_client(
    *, timeout: float = 60.0, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    return httpx.Client(
        verify=_tls_verify(),
        timeout=timeout,
        follow_redirects=True,
        headers={"User-Agent": f"olmtool/{__version__}"},
        transport=transport,
    )


def _tls_verify() -> ssl.SSLContext:
    """The system-independent default (certifi), plus ``$OLMTOOL_REGISTRY_CA`` when set."""
    return _tls_context(os.environ.get(CA_ENV) or "")


@functools.lru_cache(maxsize=4)
def _tls_context(extra: str) -> ssl.SSLContext:
    """Built once per process: loading certifi's bundle costs about 40 ms of CPU."""
    context = ssl.create_default_context(cafile=certifi.where())
    if not extra:
        return context
    try:
        context.load_verify_locations(cafile=extra)
    except (OSError, ssl.SSLError) as exc:
        raise RegistryError(f"{CA_ENV}={extra}: cannot load CA bundle ({exc})") from None
    return context


def _supported(response: httpx.Response) -> Challenge | None:
    for challenge in _challenges(response):
        if challenge.scheme == "basic" or (
            challenge.scheme == "bearer" and "realm" in challenge.params
        ):
            return challenge
    return None


def _challenges(response: httpx.Response) -> Iterator[Challenge]:
    for header in response.headers.get_list("www-authenticate"):
        yield from parse_challenges(header)


def _is_bearer(response: httpx.Response) -> bool:
    return any(challenge.scheme == "bearer" for challenge in _challenges(response))


def _basic(credentials: Credentials) -> str:
    raw = f"{credentials.username}:{credentials.password}".encode()
    return f"Basic {base64.b64encode(raw).decode()}"


def _describe(response: httpx.Response) -> str:
    """``401 UNAUTHORIZED: authentication required`` from a distribution error body."""
    status = f"{response.status_code}"
    try:
        first = response.json()["errors"][0]
        code, message = str(first.get("code", "")), str(first.get("message", ""))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return f"{status} {response.reason_phrase}{_plain_text(response)}".strip()
    text = ": ".join(part for part in (f"{status} {code}".strip(), message) if part)
    return " ".join(text.split())[:300]


def _plain_text(response: httpx.Response) -> str:
    """A short plain-text body as ``": text"`` (Go's TLS server explains a 400 that way)."""
    kind = response.headers.get("content-type", "text/plain")
    text = " ".join(response.text.split()) if kind.startswith("text/plain") else ""
    return f": {text}" if text and len(text) <= 200 else ""


def _transport_problem(exc: httpx.TransportError) -> str:
    """A short reason for a failed connection, with a hint where one helps."""
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"unknown host ({cause.strerror})"
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate not trusted ({cause.verify_message}); set {CA_ENV} to its CA"
        if isinstance(cause, ssl.SSLError):
            return f"TLS handshake failed ({cause.reason}); is it a plain-HTTP registry?"
    text = " ".join(str(exc).split())
    if "Connection refused" in text:
        return "connection refused"
    return text or type(exc).__name__


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
