"""Services on the node: a user-space proxy in the spirit of kube-proxy's userspace mode.

:class:`ServiceProxy` follows Services and Endpoints (list + watch). For every Service
with a ClusterIP in the cluster's Service network and each of its TCP ports that has a
ready endpoint, it listens on ``ClusterIP:port`` on the host (the ``local`` route of
:mod:`.netns` makes every ClusterIP an address of the host) and forwards each
connection to one ready endpoint, round robin, trying the next one when a connection
fails. A port without ready endpoints is not listened on, so clients are refused at
once, as kube-proxy rejects them. ``default/kubernetes`` forwards to the apiserver's own
address (from the kubeconfig) and is also always served on the network's
``apiserver_service_ip:443``, what ``KUBERNETES_SERVICE_HOST`` names. UDP and SCTP ports,
NodePorts and external IPs are not supported.

Containers' ``hostPort`` ports are forwarded the same way, from ``hostIP:hostPort`` (or
``0.0.0.0``) on the host to ``podIP:containerPort``; a port that cannot be bound is
reported back (the agent turns it into a ``HostPortConflict`` Event on the Pod).

The forwarding runs on one asyncio loop in its own thread (:class:`Forwarder`); the
watches run on two more threads and only hand it new tables.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ipaddress
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.node.env import service_links
from olmtool.cluster.node.kube import Kube, Streams, watch_forever
from olmtool.cluster.node.network import ServiceEntry

log = logging.getLogger(__name__)

JSON = dict[str, Any]
Address = tuple[str, int]
Routes = dict[Address, tuple[Address, ...]]
SERVICES = "services"  # the Forwarder group of the Services' listeners
APISERVER = ("default", "kubernetes")
CONNECT_TIMEOUT = 5.0
CHUNK = 256 * 1024
SYNC_TIMEOUT = 15.0


# -- what follows from Services and Endpoints (pure) ------------------------------------


def has_cluster_ip(service: JSON) -> bool:
    ip = (service.get("spec") or {}).get("clusterIP")
    return bool(ip) and ip != "None"


def service_entries(services: Iterable[JSON]) -> tuple[ServiceEntry, ...]:
    """The hosts-file entries of the Services with a ClusterIP, sorted."""
    entries = [
        ServiceEntry(s["metadata"]["namespace"], s["metadata"]["name"], s["spec"]["clusterIP"])
        for s in services
        if has_cluster_ip(s)
    ]
    return tuple(sorted(entries, key=lambda e: (e.namespace, e.name)))


def ready_backends(endpoints: JSON | None, port_name: str) -> tuple[Address, ...]:
    """The ready ``address:port`` pairs of ``endpoints`` for the Service port named
    ``port_name`` (Endpoints name their ports after the Service's), TCP only."""
    backends: list[Address] = []
    for subset in (endpoints or {}).get("subsets") or []:
        for port in subset.get("ports") or []:
            if (port.get("name") or "") != port_name or port.get("protocol", "TCP") != "TCP":
                continue
            for address in subset.get("addresses") or []:
                backends.append((str(address["ip"]), int(port["port"])))
    return tuple(backends)


def service_routes(
    services: Iterable[JSON],
    endpoints: Mapping[tuple[str, str], JSON],
    network: ClusterNetwork,
    apiserver: Address,
) -> Routes:
    """``ClusterIP:port`` -> its ready backends, for every TCP port of every Service
    whose ClusterIP is in the Service network and that has a ready endpoint."""
    cidr = ipaddress.IPv4Network(network.service_cidr)
    routes: Routes = {(network.apiserver_service_ip, 443): (apiserver,)}
    for service in services:
        if not has_cluster_ip(service):
            continue
        ip = str(service["spec"]["clusterIP"])
        with contextlib.suppress(ValueError):
            if ipaddress.IPv4Address(ip) not in cidr:
                continue  # not an address of this host: it could not be bound
        key = (service["metadata"]["namespace"], service["metadata"]["name"])
        for port in service["spec"].get("ports") or []:
            if port.get("protocol", "TCP") != "TCP":
                continue
            name = str(port.get("name") or "")
            backends = (
                (apiserver,) if key == APISERVER else ready_backends(endpoints.get(key), name)
            )
            if backends:
                routes[(ip, int(port["port"]))] = backends
    return routes


def host_port_routes(pod: JSON, pod_ip: str) -> Routes:
    """``hostIP:hostPort`` (``0.0.0.0`` without a hostIP) -> ``podIP:containerPort`` for
    the TCP ``hostPort`` ports of a Pod's containers."""
    routes: Routes = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if not port.get("hostPort") or port.get("protocol", "TCP") != "TCP":
                continue
            listen = (str(port.get("hostIP") or "0.0.0.0"), int(port["hostPort"]))
            routes[listen] = ((pod_ip, int(port["containerPort"])),)
    return routes


def apiserver_address(server: str) -> Address:
    url = urlparse(server)
    return (url.hostname or "127.0.0.1", url.port or 443)


# -- the forwarder ------------------------------------------------------------------------

BindError = Callable[[str, Address, OSError], None]
"""``(group, address, error)``: a listener of ``group`` could not be bound."""


class _Backends:
    """A listener's backends, handed out round robin."""

    def __init__(self, addresses: tuple[Address, ...]) -> None:
        self.addresses = addresses
        self._next = 0

    def order(self) -> list[Address]:
        """Every backend, starting with the next one in turn."""
        if not self.addresses:
            return []
        start = self._next % len(self.addresses)
        self._next += 1
        return [*self.addresses[start:], *self.addresses[:start]]


class Forwarder:
    """TCP listeners that forward each connection to one of their backends, on an
    asyncio loop of its own thread. Listeners come in groups (the Services, each Pod's
    host ports); :meth:`set_routes` replaces a group's."""

    def __init__(self, on_bind_error: BindError) -> None:
        self.on_bind_error = on_bind_error
        self._groups: dict[str, Routes] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="node-agent-proxy", daemon=True
        )
        self._servers: dict[Address, tuple[str, asyncio.Server]] = {}
        self._backends: dict[Address, _Backends] = {}
        self._failed: set[tuple[str, Address]] = set()  # reported once per group update
        self._connections: set[asyncio.Task[None]] = set()
        self._reconciling: asyncio.Lock | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Close every listener and connection, and end the thread."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):  # a stuck loop must not keep the agent up
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def set_routes(
        self, group: str, routes: Mapping[Address, Sequence[Address]]
    ) -> concurrent.futures.Future[None]:
        """Make ``group``'s listeners ``routes`` (an empty mapping removes the group);
        returns a future done once the listeners are in place."""
        with self._lock:
            if routes:
                self._groups[group] = {k: tuple(v) for k, v in routes.items()}
            else:
                self._groups.pop(group, None)
            self._failed = {f for f in self._failed if f[0] != group}
        if self._loop.is_closed():  # stopped: a late caller changes nothing
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return asyncio.run_coroutine_threadsafe(self._reconcile(), self._loop)

    def listening(self) -> set[Address]:
        return set(self._servers)

    # -- on the loop ------------------------------------------------------------------------

    def _wanted(self) -> dict[Address, tuple[str, tuple[Address, ...]]]:
        """Every address to listen on, with its group; the first group to ask wins."""
        wanted: dict[Address, tuple[str, tuple[Address, ...]]] = {}
        clashes = []
        with self._lock:
            for group, routes in self._groups.items():
                for address, backends in routes.items():
                    if address in wanted and wanted[address][0] != group:
                        clashes.append((group, address, wanted[address][0]))
                        continue
                    wanted[address] = (group, backends)
        for group, address, holder in clashes:
            self._report(group, address, OSError(f"already forwarded for {holder}"))
        return wanted

    async def _reconcile(self) -> None:
        if self._reconciling is None:
            self._reconciling = asyncio.Lock()
        async with self._reconciling:
            wanted = self._wanted()
            for address, (group, server) in list(self._servers.items()):
                if wanted.get(address, ("",))[0] != group:
                    server.close()
                    del self._servers[address]
            for address, (group, backends) in wanted.items():
                current = self._backends.get(address)
                if current is None or current.addresses != backends:
                    self._backends[address] = _Backends(backends)
                if address not in self._servers:
                    await self._listen(group, address)
            for address in set(self._backends) - set(wanted):
                del self._backends[address]

    async def _listen(self, group: str, address: Address) -> None:
        if (group, address) in self._failed:
            return

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(address, reader, writer)

        try:
            server = await asyncio.start_server(serve, address[0], address[1], reuse_address=True)
        except OSError as exc:
            self._report(group, address, exc)
            return
        self._servers[address] = (group, server)

    def _report(self, group: str, address: Address, error: OSError) -> None:
        with self._lock:
            if (group, address) in self._failed:
                return
            self._failed.add((group, address))
        try:
            self.on_bind_error(group, address, error)
        except Exception:  # a reporting bug must not stop the forwarding
            log.exception("reporting a bind error failed")

    async def _serve(
        self, address: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            backends = self._backends.get(address)
            upstream = await _connect(backends.order() if backends else [])
            if upstream is None:
                writer.transport.abort()  # a reset: nothing serves this address now
                return
            await _splice(reader, writer, *upstream)
        finally:
            self._connections.discard(task)

    async def _shutdown(self) -> None:
        for _, server in self._servers.values():
            server.close()
        self._servers.clear()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=5)


async def _connect(
    backends: Sequence[Address],
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A connection to the first backend that accepts one (kube-proxy's userspace mode
    tries the endpoints in turn, too)."""
    for host, port in backends:
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            log.debug("backend %s:%d refused a connection: %s", host, port, exc)
    return None


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until both sides finished; an end of one direction is passed on as
    a half close, an error resets both connections."""
    pipes = [
        asyncio.create_task(_pipe(reader, up_writer)),
        asyncio.create_task(_pipe(up_reader, writer)),
    ]
    try:
        done, _ = await asyncio.wait(pipes, return_when=asyncio.FIRST_EXCEPTION)
        if any(task.exception() for task in done):
            writer.transport.abort()
            up_writer.transport.abort()
        await asyncio.wait(pipes)
    finally:
        for task in pipes:
            task.cancel()
        for side in (writer, up_writer):
            side.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof() and not writer.is_closing():
        writer.write_eof()


# -- the proxy: watches + forwarder -------------------------------------------------------


class ServiceProxy:
    """Follows Services and Endpoints for the node agent: the Forwarder's Service
    listeners, the Services' hosts-file entries and environment variables.

    ``on_names`` is called (from a watch thread) when the hosts-file entries changed;
    ``on_bind_error`` when a listener cannot be bound (its group: ``services`` or a Pod
    uid)."""

    def __init__(
        self,
        kube: Kube,
        network: ClusterNetwork,
        stop: threading.Event,
        streams: Streams,
        *,
        on_names: Callable[[], None],
        on_bind_error: BindError,
    ) -> None:
        self.kube = kube
        self.network = network
        self.apiserver = apiserver_address(kube.server)
        self.stop_event = stop
        self.streams = streams
        self.on_names = on_names
        self.forwarder = Forwarder(on_bind_error)
        self._lock = threading.Lock()
        self._services: dict[tuple[str, str], JSON] = {}
        self._endpoints: dict[tuple[str, str], JSON] = {}
        self._entries: tuple[ServiceEntry, ...] = ()
        self._synced = {"services": threading.Event(), "endpoints": threading.Event()}
        self.threads: list[threading.Thread] = []

    def start(self, sync_timeout: float = SYNC_TIMEOUT) -> None:
        """Start forwarding; returns once Services and Endpoints were listed and their
        listeners bound (or after ``sync_timeout`` seconds), so Pods started next find
        them."""
        self.forwarder.start()
        self._push_routes()  # the apiserver, at once
        for what, list_func in (
            ("services", self.kube.core.list_service_for_all_namespaces),
            ("endpoints", self.kube.core.list_endpoints_for_all_namespaces),
        ):
            thread = threading.Thread(
                target=self._watch, args=(what, list_func), name=f"node-agent-{what}", daemon=True
            )
            thread.start()
            self.threads.append(thread)
        for synced in self._synced.values():
            synced.wait(sync_timeout)
        with contextlib.suppress(concurrent.futures.TimeoutError):
            self._push_routes().result(sync_timeout)

    def stop(self) -> None:
        """Stop forwarding (the watches end with the agent's stop event)."""
        self.forwarder.stop()

    def entries(self) -> tuple[ServiceEntry, ...]:
        with self._lock:
            return self._entries

    def links(self, namespace: str, enable_links: bool) -> dict[str, str]:
        """The Service variables of a container starting now in ``namespace``."""
        with self._lock:
            services = list(self._services.values())
        return service_links(services, namespace, enable_links)

    def publish_host_ports(self, uid: str, pod: JSON, pod_ip: str) -> None:
        self.forwarder.set_routes(uid, host_port_routes(pod, pod_ip))

    def withdraw_host_ports(self, uid: str) -> None:
        self.forwarder.set_routes(uid, {})

    # -- watches ------------------------------------------------------------------------

    def _watch(self, what: str, list_func: Callable[..., Any]) -> None:
        table = self._services if what == "services" else self._endpoints

        def on_sync(items: list[JSON]) -> None:
            with self._lock:
                table.clear()
                table.update({_key(item): item for item in items})
            self._changed()
            self._synced[what].set()

        def on_event(kind: str, item: JSON) -> None:
            with self._lock:
                if kind == "DELETED":
                    table.pop(_key(item), None)
                else:
                    table[_key(item)] = item
            self._changed()

        watch_forever(
            list_func, on_event, on_sync, self.stop_event, what=what, streams=self.streams
        )

    def _changed(self) -> None:
        self._push_routes()
        with self._lock:
            entries = service_entries(self._services.values())
            changed, self._entries = entries != self._entries, entries
        if changed:
            self.on_names()

    def _push_routes(self) -> concurrent.futures.Future[None]:
        with self._lock:
            services = list(self._services.values())
            routes = service_routes(services, self._endpoints, self.network, self.apiserver)
        return self.forwarder.set_routes(SERVICES, routes)


def _key(item: JSON) -> tuple[str, str]:
    meta = item.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
