"""Watches: a ``list_*`` call of the client with ``watch=True``, read line by line as
JSON events, relisted when it expires."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from olmtool.kube.failures import status_of
from olmtool.kube.types import JSON

log = logging.getLogger(__name__)


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


def configure_logging(*, verbose: bool = False) -> None:
    """The log lines of an agent that watches the apiserver (the OLM engine, the cluster
    DNS, the provisioner): timestamped, and without urllib3's retry chatter."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("urllib3").setLevel(logging.WARNING)
