"""The distribution client against an in-memory registry and token server (unit tests:
``httpx.MockTransport``, no network except one refused loopback connection)."""

from __future__ import annotations

import base64
import json
import re
import uuid
from pathlib import Path

import httpx
import pytest

from olmtool.errors import InputError
from olmtool.images import (
    Challenge,
    Credentials,
    Image,
    RegistryClient,
    RegistryError,
    build_image,
    docker_credentials,
    parse_challenges,
    parse_reference,
    pull,
    pull_all,
    push,
)
from olmtool.images.image import OCI_INDEX, canonical_json, digest_of
from olmtool.ports import free_port

REF = "fake.example/etcd/bundle:0.1.0"
IMAGE = build_image(
    {"manifests/x.yaml": b"x: 1\n"}, {"operators.operatorframework.io.bundle.package.v1": "etcd"}
)
USER = Credentials("alice", "wonder:land")
REALM = "https://auth.example/token"
_ROUTE = re.compile(r"^/v2/(?P<repo>.+)/(?P<kind>blobs|manifests)/(?P<rest>.+)$")


class FakeRegistry:
    """Just enough of the distribution API, with Basic or Bearer auth, to drive the client."""

    def __init__(
        self,
        auth: str | None = None,
        *,
        users: dict[str, str] | None = None,
        absolute: bool = False,
    ):
        self.auth = auth
        self.users = users if users is not None else {USER.username: USER.password}
        self.absolute = absolute
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, tuple[bytes, str]] = {}
        self.tokens: dict[str, set[str]] = {}
        self.log: list[httpx.Request] = []
        self.token_requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "auth.example":
            return self._token(request)
        self.log.append(request)
        route = _ROUTE.match(request.url.path)
        scope = None
        if route:
            action = "pull" if request.method in ("GET", "HEAD") else "push"
            scope = f"repository:{route['repo']}:{action}"
        if not self._authorized(request, scope):
            return self._challenge(scope)
        if request.url.path == "/v2/":
            return httpx.Response(200, json={})
        if route and route["kind"] == "blobs":
            return self._blob(request, route["repo"], route["rest"])
        if route:
            return self._manifest(request, route["rest"])
        return _error(404, "NOT_FOUND", "no route")

    def _authorized(self, request: httpx.Request, scope: str | None) -> bool:
        header = request.headers.get("authorization", "")
        if self.auth is None:
            return True
        if self.auth == "basic":
            return header in {_basic(u, p) for u, p in self.users.items()}
        granted = self.tokens.get(header.removeprefix("Bearer "), set())
        return header.startswith("Bearer ") and (scope is None or _covers(granted, scope))

    def _challenge(self, scope: str | None) -> httpx.Response:
        if self.auth == "basic":
            header = 'Basic realm="fake"'
        else:
            header = f'Bearer realm="{REALM}",service="fake"'
            header += f',scope="{scope}"' if scope else ""
        response = _error(401, "UNAUTHORIZED", "authentication required")
        response.headers["WWW-Authenticate"] = header
        return response

    def _token(self, request: httpx.Request) -> httpx.Response:
        self.token_requests.append(request)
        if request.url.params.get("service") != "fake":
            return httpx.Response(400, json={"details": "bad service"})
        header = request.headers.get("authorization")
        if self.users and header not in {_basic(u, p) for u, p in self.users.items()}:
            return _error(401, "UNAUTHORIZED", "bad credentials")
        token = uuid.uuid4().hex
        self.tokens[token] = set(request.url.params.get_list("scope"))
        key = "access_token" if len(self.tokens) % 2 else "token"
        return httpx.Response(200, json={key: token})

    def _blob(self, request: httpx.Request, repo: str, rest: str) -> httpx.Response:
        if rest.startswith("uploads/") and request.method == "POST":
            location = f"/v2/{repo}/blobs/uploads/{uuid.uuid4().hex}?_state=s3"
            if self.absolute:
                location = f"https://fake.example{location}"
            return httpx.Response(202, headers={"Location": location})
        if rest.startswith("uploads/") and request.method == "PUT":
            assert request.url.params["_state"] == "s3", "the upload's own query was dropped"
            digest = request.url.params["digest"]
            if digest_of(request.content) != digest:
                return _error(400, "DIGEST_INVALID", "provided digest did not match")
            self.blobs[digest] = request.content
            return httpx.Response(201, headers={"Docker-Content-Digest": digest})
        if rest not in self.blobs:
            return _error(404, "BLOB_UNKNOWN", "blob unknown to registry")
        return httpx.Response(200, content=b"" if request.method == "HEAD" else self.blobs[rest])

    def _manifest(self, request: httpx.Request, reference: str) -> httpx.Response:
        if request.method == "PUT":
            media_type = request.headers["content-type"]
            digest = digest_of(request.content)
            self.manifests[reference] = self.manifests[digest] = (request.content, media_type)
            return httpx.Response(201, headers={"Docker-Content-Digest": digest})
        if reference not in self.manifests:
            return _error(404, "MANIFEST_UNKNOWN", "manifest unknown")
        content, media_type = self.manifests[reference]
        return httpx.Response(200, content=content, headers={"Content-Type": media_type})

    def store(self, image: Image, tag: str) -> None:
        for blob in image.blobs():
            self.blobs[blob.digest] = blob.data
        self.manifests[tag] = self.manifests[image.digest] = (image.manifest, image.media_type)

    def count(self, method: str, fragment: str = "") -> int:
        return sum(1 for r in self.log if r.method == method and fragment in r.url.path)


def _covers(granted: set[str], scope: str) -> bool:
    repo, _, action = scope.rpartition(":")
    return any(g.rpartition(":")[0] == repo and action in g.rpartition(":")[2] for g in granted)


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(
        status, json={"errors": [{"code": code, "message": message, "detail": None}]}
    )


def _transport(fake: FakeRegistry) -> httpx.MockTransport:
    return httpx.MockTransport(fake)


# -- challenges -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('Basic realm="fake"', [Challenge("basic", {"realm": "fake"})]),
        (
            'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
            'scope="repository:library/busybox:pull,push"',
            [
                Challenge(
                    "bearer",
                    {
                        "realm": "https://auth.docker.io/token",
                        "service": "registry.docker.io",
                        "scope": "repository:library/busybox:pull,push",
                    },
                )
            ],
        ),
        (
            "bearer realm=https://a/t, service=s",
            [Challenge("bearer", {"realm": "https://a/t", "service": "s"})],
        ),
        (
            'Basic realm="a \\"b\\"", Bearer realm="https://t"',
            [Challenge("basic", {"realm": 'a "b"'}), Challenge("bearer", {"realm": "https://t"})],
        ),
        ("", []),
    ],
)
def test_parse_challenges(header: str, expected: list[Challenge]) -> None:
    assert parse_challenges(header) == expected


# -- auth flows -------------------------------------------------------------------------


def test_bearer_push_and_pull_fetch_one_token_each() -> None:
    fake = FakeRegistry("bearer")
    progress: list[tuple[int, int]] = []
    digest = push(
        IMAGE, REF, auth=USER, transport=_transport(fake), progress=lambda *p: progress.append(p)
    )
    assert digest == IMAGE.digest
    assert len(fake.token_requests) == 1  # cached for every later request of the push
    (token_request,) = fake.token_requests
    assert token_request.url.params.get_list("scope") == ["repository:etcd/bundle:pull,push"]
    assert token_request.headers["authorization"] == _basic(USER.username, USER.password)
    total = sum(len(b.data) for b in IMAGE.blobs())
    assert progress[-1] == (total, total) and len(progress) == 2

    pulled = pull(REF, auth=USER, transport=_transport(fake))
    assert pulled == IMAGE
    assert len(fake.token_requests) == 2
    assert fake.token_requests[1].url.params.get_list("scope") == ["repository:etcd/bundle:pull"]


def test_bearer_token_for_a_narrower_scope_is_upgraded() -> None:
    fake = FakeRegistry("bearer", users={})  # anonymous tokens, like Docker Hub for pulls
    fake.store(IMAGE, "0.1.0")
    with RegistryClient(parse_reference(REF), "pull", transport=_transport(fake)) as client:
        client.scope = ""  # as if we asked for nothing: the registry's challenge scope is used
        client.ping()
        assert client.get_blob(IMAGE.blobs()[0].digest) == IMAGE.config
        client.get_blob(IMAGE.blobs()[1].digest)
    scopes = [r.url.params.get_list("scope") for r in fake.token_requests]
    assert scopes == [[], ["repository:etcd/bundle:pull"]]


def test_bearer_token_server_refusal_is_one_line() -> None:
    fake = FakeRegistry("bearer")
    with pytest.raises(RegistryError) as caught:
        pull(REF, auth=Credentials("alice", "wrong"), transport=_transport(fake))
    assert str(caught.value) == (
        f"pull {REF} refused: token server said 401 UNAUTHORIZED: bad credentials"
        " (user 'alice', login given as the auth argument)"
    )


def test_basic_auth() -> None:
    fake = FakeRegistry("basic")
    push(IMAGE, REF, auth=USER, transport=_transport(fake))
    assert pull(REF, auth=USER, transport=_transport(fake)).files() == IMAGE.files()


def test_basic_auth_wrong_password_tries_once(tmp_path: Path) -> None:
    fake = FakeRegistry("basic")
    with pytest.raises(
        RegistryError,
        match=r"^push .* refused: 401 UNAUTHORIZED: authentication required"
        r" \(user 'alice', login given as the auth argument\)$",
    ):
        push(IMAGE, REF, auth=Credentials("alice", "nope"), transport=_transport(fake))
    assert len(fake.log) == 2


def test_no_credentials_says_where_it_looked(tmp_path: Path) -> None:
    fake = FakeRegistry("basic")
    with pytest.raises(RegistryError) as caught:
        push(IMAGE, REF, transport=_transport(fake))
    assert str(caught.value) == (
        f"push {REF} refused: 401 UNAUTHORIZED: authentication required"
        f" (no credentials for fake.example in the auth argument or {tmp_path / 'no-auth.json'})"
    )


def test_credentials_from_the_auth_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    auth_file = tmp_path / "auth.json"
    encoded = base64.b64encode(b"alice:wonder:land").decode()
    auth_file.write_text(json.dumps({"auths": {"fake.example": {"auth": encoded}}}))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth_file))
    fake = FakeRegistry("basic")
    assert push(IMAGE, REF, transport=_transport(fake)) == IMAGE.digest


def test_a_refused_login_from_the_auth_file_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth_file = tmp_path / "auth.json"
    encoded = base64.b64encode(b"alice:stale").decode()
    auth_file.write_text(json.dumps({"auths": {"fake.example": {"auth": encoded}}}))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth_file))
    with pytest.raises(RegistryError) as caught:
        push(IMAGE, REF, transport=_transport(FakeRegistry("basic")))
    assert str(caught.value) == (
        f"push {REF} refused: 401 UNAUTHORIZED: authentication required"
        f" (user 'alice', login from {auth_file} (auths['fake.example']))"
    )


# -- docker config files ----------------------------------------------------------------


def _auths(path: Path, auths: dict[str, object]) -> Path:
    path.write_text(json.dumps({"auths": auths}))
    return path


def _encoded(user: str, password: str) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_docker_config_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REGISTRY_AUTH_FILE")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    _auths(
        tmp_path / "config.json",
        {
            "https://index.docker.io/v1/": _encoded("hub", "1"),
            "quay.io": _encoded("quay", "2"),
            "quay.io/etcd": _encoded("quay-etcd", "3"),
            "https://ghcr.io": {"username": "gh", "password": "4"},
            "127.0.0.1:5000": {"identitytoken": "unsupported"},
        },
    )
    assert docker_credentials("docker.io", "library/busybox") == Credentials("hub", "1")
    assert docker_credentials("quay.io", "other/x") == Credentials("quay", "2")
    assert docker_credentials("quay.io", "etcd/bundle") == Credentials("quay-etcd", "3")
    assert docker_credentials("ghcr.io") == Credentials("gh", "4")
    assert docker_credentials("127.0.0.1:5000") is None
    assert docker_credentials("example.com") is None
    assert "4" not in repr(docker_credentials("ghcr.io"))


def test_docker_config_default_and_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REGISTRY_AUTH_FILE")
    monkeypatch.delenv("DOCKER_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert docker_credentials("quay.io") is None
    (tmp_path / ".docker").mkdir()
    _auths(tmp_path / ".docker/config.json", {"quay.io": _encoded("q", "p")})
    assert docker_credentials("quay.io") == Credentials("q", "p")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{", "cannot read registry credentials"),
        ('{"auths": {"quay.io": {"auth": "!!"}}}', "not base64"),
    ],
)
def test_docker_config_errors_name_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, problem: str
) -> None:
    path = tmp_path / "auth.json"
    path.write_text(content)
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(path))
    with pytest.raises(InputError, match=problem) as caught:
        docker_credentials("quay.io")
    assert str(path) in str(caught.value)


# -- uploads, manifests, transport ------------------------------------------------------


@pytest.mark.parametrize("absolute", [False, True], ids=["relative-location", "absolute-location"])
def test_push_uploads_then_skips(absolute: bool) -> None:
    fake = FakeRegistry(absolute=absolute)
    push(IMAGE, REF, transport=_transport(fake))
    assert fake.count("PUT", "/blobs/uploads/") == 2
    push(IMAGE, REF, transport=_transport(fake))
    assert fake.count("PUT", "/blobs/uploads/") == 2  # second push: HEAD says present
    assert fake.count("HEAD") == 4
    assert fake.manifests["0.1.0"] == (IMAGE.manifest, IMAGE.media_type)


def test_push_by_digest_puts_tag_and_digest() -> None:
    fake = FakeRegistry()
    push(IMAGE, f"{REF}@{IMAGE.digest}", transport=_transport(fake))
    assert fake.count("PUT", "/manifests/0.1.0") == 1
    assert fake.count("PUT", f"/manifests/{IMAGE.digest}") == 1
    other = "sha256:" + "0" * 64
    with pytest.raises(RegistryError, match="the image's digest is sha256:"):
        push(IMAGE, f"{REF}@{other}", transport=_transport(fake))


def test_pull_picks_linux_amd64_from_an_index() -> None:
    fake = FakeRegistry()
    arm = build_image({"arm": b"1"}, {}, architecture="arm64")
    fake.store(IMAGE, "amd")
    fake.store(arm, "arm")
    index = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {
                    "mediaType": arm.media_type,
                    "digest": arm.digest,
                    "size": len(arm.manifest),
                    "platform": {"architecture": "arm64", "os": "linux"},
                },
                {
                    "mediaType": IMAGE.media_type,
                    "digest": IMAGE.digest,
                    "size": len(IMAGE.manifest),
                    "platform": {"architecture": "amd64", "os": "linux"},
                },
            ],
        }
    )
    fake.manifests["multi"] = (index, OCI_INDEX)
    assert pull("fake.example/etcd/bundle:multi", transport=_transport(fake)) == IMAGE
    assert (
        pull("fake.example/etcd/bundle:multi", architecture="arm64", transport=_transport(fake))
        == arm
    )
    with pytest.raises(RegistryError, match=r"^pull .*: no linux/ppc64le image in the index"):
        pull("fake.example/etcd/bundle:multi", architecture="ppc64le", transport=_transport(fake))


def test_pull_verifies_digests() -> None:
    fake = FakeRegistry()
    fake.store(IMAGE, "0.1.0")
    layer = IMAGE.blobs()[1].digest
    fake.blobs[layer] = b"tampered"
    with pytest.raises(
        RegistryError, match=f"blob {layer} arrived with digest {digest_of(b'tampered')}"
    ):
        pull(REF, transport=_transport(fake))
    fake.manifests["sha256:" + "0" * 64] = (IMAGE.manifest, IMAGE.media_type)
    with pytest.raises(RegistryError, match=r"manifest sha256:0{64} arrived with digest"):
        pull(f"fake.example/etcd/bundle@sha256:{'0' * 64}", transport=_transport(fake))


def test_pull_missing_tag() -> None:
    with pytest.raises(RegistryError) as caught:
        pull("fake.example/etcd/bundle:nope", transport=_transport(FakeRegistry()))
    assert str(caught.value) == (
        "pull fake.example/etcd/bundle:nope refused: 404 MANIFEST_UNKNOWN: manifest unknown"
    )


def test_not_a_registry() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(404, html="<html>nope</html>"))
    with pytest.raises(
        RegistryError, match=r"^pull fake.example/etcd/bundle:0.1.0 refused: 404 Not Found$"
    ):
        pull(REF, transport=transport)


def test_closed_port_cannot_be_reached() -> None:
    port = free_port()
    with pytest.raises(RegistryError) as caught:
        pull(f"127.0.0.1:{port}/etcd/bundle:0.1.0")
    assert str(caught.value) == f"cannot reach registry 127.0.0.1:{port}: connection refused"


@pytest.mark.parametrize(
    ("registry", "insecure", "scheme"),
    [
        ("127.0.0.1:5000", None, "http"),
        ("localhost:5000", None, "http"),
        ("[::1]:5000", None, "http"),
        ("127.0.0.1:5000", False, "https"),
        ("quay.io", None, "https"),
        ("registry.lan:5000", True, "http"),
    ],
)
def test_scheme(registry: str, insecure: bool | None, scheme: str) -> None:
    with RegistryClient(parse_reference(f"{registry}/a/b"), "pull", insecure=insecure) as client:
        assert str(client.base) == f"{scheme}://{registry}"


def test_docker_hub_goes_to_its_api_host() -> None:
    with RegistryClient(parse_reference("busybox"), "pull") as client:
        assert str(client.base) == "https://registry-1.docker.io"


def test_bad_ca_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLMTOOL_REGISTRY_CA", str(tmp_path / "missing.pem"))
    with pytest.raises(RegistryError, match=r"^OLMTOOL_REGISTRY_CA=.*missing\.pem: cannot load"):
        pull(REF)


# -- many pulls -------------------------------------------------------------------------


def test_pull_all_keeps_the_order_and_asks_each_registry_once_who_it_is() -> None:
    fake = FakeRegistry("bearer")
    images = [build_image({f"f{n}": str(n).encode()}, {"n": str(n)}) for n in range(12)]
    for number, image in enumerate(images):
        fake.store(image, f"{number}")
    refs = [f"fake.example/etcd/bundle:{number}" for number in reversed(range(12))]
    pull(refs[0], auth=USER, transport=_transport(fake))
    one_ping = sum(1 for r in fake.log if r.url.path == "/v2/")  # 401, token, 200
    fake.log.clear()
    pulled = list(pull_all(refs, workers=3, auth=USER, transport=_transport(fake)))
    assert pulled == list(reversed(images))
    assert sum(1 for r in fake.log if r.url.path == "/v2/") == one_ping


def test_pull_all_raises_where_the_failed_image_would_come() -> None:
    fake = FakeRegistry()
    fake.store(IMAGE, "0.1.0")
    refs = [REF, "fake.example/etcd/bundle:nope", REF]
    pulled = pull_all(refs, workers=2, transport=_transport(fake))
    assert next(pulled) == IMAGE
    with pytest.raises(RegistryError, match=r"^pull fake.example/etcd/bundle:nope refused: 404"):
        next(pulled)


def test_pull_all_reports_an_unreachable_registry_once_per_image() -> None:
    port = free_port()
    refs = [f"127.0.0.1:{port}/etcd/bundle:{n}" for n in range(3)]
    with pytest.raises(RegistryError, match=f"cannot reach registry 127.0.0.1:{port}"):
        list(pull_all(refs))


def test_the_tls_context_is_built_once_per_process() -> None:
    with (
        RegistryClient(parse_reference("quay.io/a/b"), "pull") as one,
        RegistryClient(parse_reference("quay.io/a/c"), "pull") as two,
    ):
        assert one._http._transport._pool._ssl_context is two._http._transport._pool._ssl_context
