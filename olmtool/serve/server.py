"""Start the registry gRPC API and catalogd's HTTP API over one catalog, and stop them.

Both servers share one :class:`CatalogIndex` (one blob store); stopping drains in-flight
gRPC calls for a grace period, flips health to NOT_SERVING first so that probes see the
shutdown, and deletes the anonymous blob store.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import grpc
from grpc_health.v1 import health

from olmtool.catalog import OpmCompat
from olmtool.errors import PortTaken
from olmtool.serve.grpc_server import RequestLog, create_grpc_server
from olmtool.serve.http import CatalogdServer
from olmtool.serve.index import CatalogIndex, build_index
from olmtool.serve.limits import ServerLimits


@dataclass
class RunningServer:
    """Handles of a started :func:`start_server`; a context manager that stops it."""

    index: CatalogIndex
    grpc_address: str  # host:port for grpc.insecure_channel
    catalog_name: str
    http_url: str | None = None  # http://host:port, None when HTTP is off
    catalog_url: str | None = None  # http://host:port/catalogs/<name>
    owns_index: bool = True  # stop() closes the index only when start_server built it
    _grpc: grpc.Server | None = field(default=None, repr=False)
    _health: health.HealthServicer | None = field(default=None, repr=False)
    _http: CatalogdServer | None = field(default=None, repr=False)

    def stop(self, grace: float = 2.0) -> None:
        """Stop both servers (in-flight gRPC calls get ``grace`` seconds) and the index."""
        if self._health is not None:
            self._health.enter_graceful_shutdown()
        if self._http is not None:
            self._http.stop()
            self._http = None
        if self._grpc is not None:
            self._grpc.stop(grace).wait()
            self._grpc = None
        if self.owns_index:
            self.index.close()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def start_server(
    root: str | Path,
    *,
    grpc_port: int = 0,
    http_port: int | None = 0,
    host: str = "127.0.0.1",
    catalog_name: str | None = None,
    cache_dir: str | Path | None = None,
    log: RequestLog | None = None,
    index: CatalogIndex | None = None,
    limits: ServerLimits | None = None,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> RunningServer:
    """Index ``root`` (unless ``index`` is given) and serve it; port 0 picks a free port.

    ``http_port=None`` leaves catalogd's HTTP API off. ``catalog_name`` (the URL's
    ``/catalogs/<name>``) defaults to the catalog directory's name. ``log`` receives one
    line per request. ``limits`` bounds connections, threads, timeouts and request sizes
    (:class:`ServerLimits`; the defaults suit a catalog server). ``opm_compat`` 1.26
    answers gRPC exactly as opm v1.26 does (no deprecations, no synthesized CSVs). Raises
    InputError when the catalog does not load and :class:`~olmtool.errors.PortTaken` when a port
    cannot be bound.
    """
    root = Path(root)
    owns_index = index is None
    if index is None:
        index = build_index(root, cache_dir=cache_dir)
    name = catalog_name or (root.resolve().name if root.is_dir() else root.resolve().parent.name)
    running = RunningServer(index, "", name, owns_index=owns_index)
    try:
        _start_grpc(running, host, grpc_port, log, limits, opm_compat)
        if http_port is not None:
            running._http = _start_http(index, name, host, http_port, log, limits)
            running.http_url = running._http.url
            running.catalog_url = running._http.catalog_url
    except BaseException:
        running.stop(grace=0)
        raise
    return running


def _start_grpc(
    running: RunningServer,
    host: str,
    port: int,
    log: RequestLog | None,
    limits: ServerLimits | None,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> None:
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    problem = _bind_problem(host, port)
    if problem:
        raise _port_error("grpc_port", port, f"cannot serve gRPC on {address}: {problem}")
    server, health_servicer = create_grpc_server(
        running.index, log=log, limits=limits, opm_compat=opm_compat
    )
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if not bound:
        server.stop(0)
        raise _port_error(
            "grpc_port", port, f"cannot serve gRPC on {address}: the port is in use or not allowed"
        )
    server.start()
    running._grpc, running._health = server, health_servicer
    running.grpc_address = address.rsplit(":", 1)[0] + f":{bound}"


def _bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound, checked first so that the user reads one line
    from us rather than gRPC core's log of its own failed bind."""
    if port == 0:
        return None
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _start_http(
    index: CatalogIndex,
    name: str,
    host: str,
    port: int,
    log: RequestLog | None,
    limits: ServerLimits | None,
) -> CatalogdServer:
    try:
        server = CatalogdServer(index, name, host=host, port=port, log=log, limits=limits)
    except OSError as exc:
        raise _port_error(
            "http_port", port, f"cannot serve HTTP on {host}:{port}: {exc.strerror or exc}"
        ) from None
    server.start()
    return server


def _port_error(argument: str, port: int, problem: str) -> PortTaken:
    # for HTTP the command's 0 means "off", so only gRPC's message offers it
    free = " (0: any free one)" if argument == "grpc_port" else ""
    return PortTaken(f"{port}: {problem}; choose another port{free}", port=port, argument=argument)
