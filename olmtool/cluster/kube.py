"""A thin layer over the ``kubernetes`` client that speaks plain dicts.

The generated models validate every field on the way in and out; olmtool's clients (the
OLM engine, install, test upgrade, the cluster's DNS and provisioner) only need JSON
documents, so requests go through the client's ``ApiClient`` (kubeconfig loading, TLS,
auth, connection pool) and answers are parsed as JSON. Watches are the client's
``list_*`` calls with ``watch=True``, read line by line as JSON events.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from olmtool.errors import ClusterUnreachable

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


class Kube:
    """JSON requests against the apiserver a kubeconfig names.

    ``outage_grace`` (seconds, 0: off) makes :meth:`request` ride out an apiserver
    outage: a request that cannot reach the server (connection refused or lost, timed
    out, 429/502/503/504) is sent again with back-off (0.5 s doubling, at most 5 s) until
    it gets through or the outage has lasted ``outage_grace``, then
    :class:`~olmtool.errors.ClusterUnreachable` is raised. ``on_outage`` gets a line when
    an outage starts and when the server is back (a progress callback)."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        pool_size: int = 32,
        outage_grace: float = 0.0,
        on_outage: Callable[[str], None] | None = None,
    ) -> None:
        self.kubeconfig = Path(kubeconfig)
        self.outage_grace = outage_grace
        self.on_outage = on_outage
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
        configuration.connection_pool_maxsize = pool_size
        self.configuration = configuration
        self.api_client = kubernetes.client.ApiClient(configuration)
        self.core = kubernetes.client.CoreV1Api(self.api_client)
        self.storage = kubernetes.client.StorageV1Api(self.api_client)

    @property
    def server(self) -> str:
        return str(self.configuration.host)

    @property
    def ca_file(self) -> str | None:
        return self.configuration.ssl_ca_cert

    def close(self) -> None:
        with contextlib.suppress(Exception):  # best effort at shutdown
            self.api_client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> JSON:
        """Send one request; the answer as a dict. Raises ``ApiException`` on non-2xx
        (with ``outage_grace``, see the class)."""
        if self.outage_grace <= 0:
            return self._send(method, path, query, body, content_type, timeout)
        return self._through_outage(method, path, query, body, content_type, timeout)

    def _through_outage(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float,
    ) -> JSON:
        started: float | None = None
        delay = 0.5
        while True:
            try:
                answer = self._send(method, path, query, body, content_type, timeout)
            except Exception as exc:
                problem = connection_problem(exc)
                if problem is None or not problem.retry:
                    if started is not None and method == "POST" and status_of(exc) == 409:
                        # an earlier attempt was carried out before its connection broke
                        meta = body.get("metadata") if isinstance(body, dict) else None
                        name = (meta or {}).get("name")
                        if name:
                            return self._send("GET", f"{path}/{name}", None, None, "", timeout)
                    raise
                now_ = time.monotonic()
                if started is None:
                    started = now_
                    self._say(
                        f"apiserver {self.server} unreachable ({problem.text}); retrying for "
                        f"up to {self.outage_grace:g} s"
                    )
                waited = now_ - started
                if waited >= self.outage_grace:
                    raise ClusterUnreachable(
                        f"apiserver {self.server} unreachable for {waited:.0f} s "
                        f"({problem.text}); gave up after retrying for {self.outage_grace:g} s",
                        server=self.server,
                    ) from None
                time.sleep(min(delay, self.outage_grace - waited))
                delay = min(delay * 2, 5.0)
                continue
            if started is not None:
                self._say(
                    f"apiserver {self.server} is back after {time.monotonic() - started:.0f} s"
                )
            return answer

    def _say(self, line: str) -> None:
        if self.on_outage is not None:
            self.on_outage(line)
        else:
            log.warning("%s", line)

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float,
    ) -> JSON:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        method, url, headers, body, _ = self.api_client.param_serialize(
            method,
            path,
            query_params=params or None,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api_client.call_api(method, url, headers, body, _request_timeout=timeout)
        data = response.read()
        if not 200 <= response.status < 300:
            raise ApiException(
                status=response.status,
                reason=response.reason,
                body=data.decode(errors="replace") if data else None,
            )
        return json.loads(data) if data else {}

    def get(self, path: str, **query: Any) -> JSON:
        return self.request("GET", path, query=query)

    def get_or_none(self, path: str) -> JSON | None:
        try:
            return self.get(path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, path: str, body: JSON) -> JSON:
        return self.request("POST", path, body=body)

    def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> JSON:
        return self.request("PATCH", path, body=body, content_type=content_type)

    def put(self, path: str, body: JSON) -> JSON:
        return self.request("PUT", path, body=body)

    def delete(self, path: str, body: JSON | None = None) -> JSON:
        return self.request("DELETE", path, body=body)


def status_of(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, ApiException) else None


# answers of an apiserver that is starting, overloaded or behind a proxy whose backend is
# away: worth sending again during an outage
RETRY_STATUSES = (429, 502, 503, 504)


@dataclass(frozen=True)
class ConnectionProblem:
    """Why a request did not reach the apiserver: ``text`` for a message (``connection
    refused``), ``retry`` whether the same request may get through later (a certificate
    the client rejects will not)."""

    text: str
    retry: bool = True


def connection_problem(exc: BaseException) -> ConnectionProblem | None:
    """The problem when ``exc`` (raised by a request) means the apiserver was not reached
    or answered as a server in trouble does; None for an answer (and anything else)."""
    if isinstance(exc, ApiException):
        if exc.status in RETRY_STATUSES:
            return ConnectionProblem(f"{exc.status} {exc.reason}")
        if exc.status == 0 and str(exc.reason or "").startswith("SSLError"):
            return _tls_problem(str(exc.reason).partition("\n")[2])
        return None
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        return connection_problem(exc.reason) or ConnectionProblem(_plain(exc.reason))
    if isinstance(exc, urllib3.exceptions.SSLError):
        return _tls_problem(str(exc.args[0] if exc.args else exc))
    if isinstance(exc, urllib3.exceptions.NameResolutionError):
        return ConnectionProblem(f"cannot resolve the host name ({_plain(exc)})")
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return ConnectionProblem(_plain(exc).partition("new connection: ")[2] or _plain(exc))
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
        return ConnectionProblem("connection timed out")
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return ConnectionProblem("no answer in time (read timed out)")
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return ConnectionProblem(f"connection lost ({_plain(exc)})")
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return ConnectionProblem(_plain(exc))
    return None


def _tls_problem(text: str) -> ConnectionProblem:
    verify = "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text
    return ConnectionProblem(f"TLS failed: {text.strip() or 'handshake'}", retry=not verify)


def _plain(exc: BaseException) -> str:
    """An exception's text without errno prefixes (``[Errno 111] Connection refused``)."""
    text = str(exc.args[-1] if isinstance(exc, OSError) and exc.args else exc)
    if isinstance(exc, urllib3.exceptions.ProtocolError) and len(exc.args) > 1:
        text = f"{exc.args[0]}: {exc.args[1]}"
    return re.sub(r"\[Errno -?\d+\] ", "", text).strip().rstrip(".")


class Streams:
    """The open watch responses of an agent, so stopping it can end them at once (a
    watch left open delays the apiserver's own shutdown)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[Any] = set()

    def add(self, response: Any) -> None:
        with self._lock:
            self._open.add(response)

    def discard(self, response: Any) -> None:
        with self._lock:
            self._open.discard(response)

    def close(self) -> None:
        with self._lock:
            responses = list(self._open)
        for response in responses:
            with contextlib.suppress(Exception):
                if hasattr(response, "shutdown"):
                    response.shutdown()  # interrupts a blocking read (urllib3 >= 2.3)
                response.close()


def watch_forever(
    list_func: Callable[..., Any],
    on_event: Callable[[str, JSON], None],
    on_sync: Callable[[list[JSON]], None],
    stop: threading.Event,
    *,
    what: str,
    streams: Streams | None = None,
    timeout: int = 60,
    **selectors: Any,
) -> None:
    """List then watch ``list_func`` (a ``list_*`` method of the client) until ``stop`` is
    set, relisting when the watch expires (410 Gone) or fails.

    ``on_sync`` gets every object after each (re)list; ``on_event`` each later change
    (``ADDED``/``MODIFIED``/``DELETED``).
    """
    streams = streams or Streams()
    resource_version: str | None = None
    while not stop.is_set():
        try:
            if resource_version is None:
                listed = json.loads(list_func(_preload_content=False, **selectors).data)
                resource_version = listed["metadata"]["resourceVersion"]
                on_sync(listed.get("items") or [])
            for event in _stream(list_func, resource_version, timeout, stop, streams, selectors):
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    resource_version = None  # 410 Gone (or another error): relist
                    break
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    resource_version = rv
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    on_event(kind, obj)
        except Exception as exc:
            if stop.is_set():
                return
            if status_of(exc) != 410:
                log.warning("watch %s failed: %s; retrying", what, _short(exc))
                stop.wait(1.0)
            resource_version = None


def _stream(
    list_func: Callable[..., Any],
    resource_version: str,
    timeout: int,
    stop: threading.Event,
    streams: Streams,
    selectors: Mapping[str, Any],
) -> Iterator[JSON]:
    """The events of one watch request (the server ends it after ``timeout`` seconds)."""
    response = list_func(
        watch=True,
        resource_version=resource_version,
        timeout_seconds=timeout,
        allow_watch_bookmarks=True,
        _preload_content=False,
        _request_timeout=timeout + 15,
        **selectors,
    )
    streams.add(response)
    try:
        if not 200 <= response.status < 300:
            raise ApiException(status=response.status, reason=response.reason)
        for line in iter_resp_lines(response):
            if stop.is_set():
                return
            if line:
                yield json.loads(line)
    finally:
        streams.discard(response)
        with contextlib.suppress(Exception):
            response.close()
            response.release_conn()


def _short(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return f"{exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"
