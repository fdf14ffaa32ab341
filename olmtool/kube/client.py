"""The client: JSON requests against the apiserver a kubeconfig names.

The generated models of the ``kubernetes`` package validate every field on the way in
and out; olmtool only needs JSON documents, so requests go through the client's
``ApiClient`` (kubeconfig loading, TLS, auth, connection pool) and answers are parsed as
JSON.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from olmtool.errors import ClusterUnreachable
from olmtool.kube.failures import connection_problem, status_of
from olmtool.kube.types import JSON, MERGE_PATCH

log = logging.getLogger(__name__)


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
        send = functools.partial(self._send, method, path, query, body, content_type, timeout)
        if self.outage_grace <= 0:
            return send()
        return self._through_outage(send, method, path, body, timeout)

    def _through_outage(
        self, send: Callable[[], JSON], method: str, path: str, body: Any, timeout: float
    ) -> JSON:
        started: float | None = None
        delay = 0.5
        while True:
            try:
                answer = send()
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
