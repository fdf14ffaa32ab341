"""The kubelet API of the node agent: what the apiserver calls for ``kubectl logs`` and
``kubectl exec``.

An HTTPS server on the node address (127.0.0.1), on its own thread and asyncio loop,
with a serving certificate signed by the cluster CA. Every client must present a
certificate signed by that CA (the apiserver's ``--kubelet-client-certificate``), so
other local processes cannot read logs or exec into Pods. The Node reports the port as
``status.daemonEndpoints.kubeletEndpoint.Port``.

* ``GET /containerLogs/{namespace}/{pod}/{container}``: ``follow``, ``previous``,
  ``tailLines``, ``sinceSeconds``, ``sinceTime``, ``timestamps``, ``limitBytes``, from
  the log files the agent writes (:mod:`.logs`); ``follow`` streams (chunked) until the
  container instance exits.
* ``GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}?command=...``: upgraded to
  SPDY/3.1 (remotecommand v1-v4, kubectl and client-go up to 1.29) or WebSocket
  (``v4``/``v5.channel.k8s.io``, the Python client and kubectl >= 1.30); the command
  runs per :mod:`.containerexec`.
* ``GET /healthz``, ``GET /pods``.

Client mistakes get the HTTP errors kubelet returns (plain-text messages that kubectl
shows as they are), never a traceback in the agent's log.

>>> server = KubeletServer(host, serving_cert, ca_bytes)
>>> server.start(); server.port
>>> server.stop()   # ends every stream and kills running exec commands
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import h11
from wsproto.utilities import generate_accept_token

from olmtool.cluster.node import containerexec, execsession, logs, spdy, wschannel
from olmtool.cluster.node.containerexec import ExecError, ExecOptions
from olmtool.cluster.node.logs import LogFilter, LogOptions, LogOptionsError

if TYPE_CHECKING:
    from olmtool.cluster.node.containers import Container
    from olmtool.cluster.node.worker import PodWorker

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MAX_HEADERS = 64 * 1024
FOLLOW_POLL = 0.2  # seconds between reads of a followed log
CLOCK_TICK = 1.0  # seconds between samples of the running containers' log sizes


class KubeletHost(Protocol):
    """What the kubelet API needs of the node agent."""

    def pod_workers(self) -> list[PodWorker]:
        """The Pod workers of the node now (a snapshot)."""
        ...


class HttpError(Exception):
    """Answered as ``status`` with ``message`` as a plain-text body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Request:
    """One parsed request (headers with lowercase names)."""

    def __init__(self, event: h11.Request) -> None:
        self.method = event.method.decode()
        target = urllib.parse.urlsplit(event.target.decode())
        self.path = urllib.parse.unquote(target.path)
        self.query = urllib.parse.parse_qs(target.query, keep_blank_values=True)
        self.headers: dict[str, list[str]] = {}
        for name, value in event.headers:
            self.headers.setdefault(name.decode().lower(), []).append(value.decode())

    def header(self, name: str) -> str:
        return ", ".join(self.headers.get(name) or [])

    def header_values(self, name: str) -> list[str]:
        return [v.strip() for value in self.headers.get(name) or [] for v in value.split(",")]

    @property
    def upgrade(self) -> str:
        """The protocol asked for by ``Connection: Upgrade``, lowercase ("" if none)."""
        if not any(v.lower() == "upgrade" for v in self.header_values("connection")):
            return ""
        return self.header("upgrade").strip().lower()


def tls_context(cert: Path, key: Path, client_ca: bytes) -> ssl.SSLContext:
    """Server TLS that requires a client certificate signed by ``client_ca``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    context.load_verify_locations(cadata=client_ca.decode())
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["http/1.1"])  # no h2: exec upgrades need HTTP/1.1
    return context


class KubeletServer:
    """The kubelet API on ``address``:``port`` (0: any free port), until :meth:`stop`."""

    def __init__(
        self,
        host: KubeletHost,
        cert: Path,
        key: Path,
        client_ca: bytes,
        address: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.host = host
        self.address = address
        self.port = port
        self._context = tls_context(cert, key, client_ca)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._stopping: asyncio.Event | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._clocks: dict[Path, logs.TimeIndex] = {}

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Listen (returns once bound; raises if it cannot)."""
        self._thread = threading.Thread(target=self._run, name="kubelet-api", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._failure is not None:
            raise self._failure
        log.info("kubelet API listening on https://%s:%d", self.address, self.port)

    def stop(self, timeout: float = 10.0) -> None:
        """Close the listener, end every connection (exec commands are killed)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.set_exception_handler(_quiet_exceptions)
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:
            self._failure = exc
        finally:
            self._ready.set()
            loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(
            self._accept,
            self.address,
            self.port,
            ssl=self._context,
            ssl_handshake_timeout=10,
            limit=MAX_HEADERS,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        clock = asyncio.create_task(self._log_clock())
        await self._stopping.wait()
        self._server.close()
        clock.cancel()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(clock, *self._connections, return_exceptions=True)
        await self._server.wait_closed()

    # -- connections ---------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await Connection(self, reader, writer).serve()
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # the server stops
        except Exception:
            log.exception("kubelet API: connection failed")
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 2)

    # -- Pods and containers -------------------------------------------------------------

    def find_worker(self, namespace: str, name: str) -> PodWorker:
        found = [
            w
            for w in self.host.pod_workers()
            if w.namespace == namespace and w.name == name and not w.done.is_set()
        ]
        if not found:
            raise HttpError(404, f'pod "{name}" does not exist')
        return found[-1]

    def find_container(self, worker: PodWorker, name: str) -> Container:
        for container in worker.all_containers:
            if container.name == name:
                return container
        raise HttpError(404, f'container "{name}" not found in pod "{worker.name}"')

    async def _log_clock(self) -> None:
        """Sample the log size of every running container, so lines get times."""
        while True:
            now = time.time()
            seen = set()
            for worker in self.host.pod_workers():
                for container in worker.all_containers:
                    if container.process is None:
                        continue
                    files = logs.instance_logs(worker.dir, container.name)
                    if not files:
                        continue
                    clock = self._clocks.get(files[-1]) or logs.TimeIndex(files[-1])
                    self._clocks[files[-1]] = clock
                    clock.sample(now)
                    seen.add(files[-1])
            for path in set(self._clocks) - seen:
                self._clocks[path].sample(now)  # its last lines, then forget it
                del self._clocks[path]
            await asyncio.sleep(CLOCK_TICK)


def _quiet_exceptions(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """TLS handshakes of clients without a valid certificate, resets: one line each."""
    exc = context.get("exception")
    if isinstance(exc, ssl.SSLError | ConnectionError | OSError):
        log.debug("kubelet API: %s: %s", context.get("message"), exc)
        return
    loop.default_exception_handler(context)


class Connection:
    """One client connection: HTTP/1.1 requests (kept alive) until one upgrades it."""

    def __init__(
        self, server: KubeletServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADERS)

    async def serve(self) -> None:
        while True:
            try:
                event = await self._next_event()
            except h11.RemoteProtocolError as exc:
                with contextlib.suppress(h11.LocalProtocolError):
                    await self.respond(exc.error_status_hint, f"bad request: {exc}")
                return
            if not isinstance(event, h11.Request):
                return  # closed
            request = Request(event)
            upgraded = await self._handle(request)
            if upgraded or self.http.our_state is h11.MUST_CLOSE:
                return
            # read what is left of the request (exec and logs have no body)
            while (event := await self._next_event()) is not h11.PAUSED and not isinstance(
                event, h11.EndOfMessage | h11.ConnectionClosed
            ):
                pass
            if self.http.our_state is not h11.DONE or self.http.their_state is not h11.DONE:
                return
            self.http.start_next_cycle()

    async def _next_event(self) -> Any:
        while True:
            event = self.http.next_event()
            if event is h11.NEED_DATA:
                self.http.receive_data(await self.reader.read(65536))
                continue
            return event

    async def send(self, event: Any) -> None:
        data = self.http.send(event)
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def respond(
        self,
        status: int,
        body: str | bytes,
        content_type: str = "text/plain; charset=utf-8",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        raw = body.encode() if isinstance(body, str) else body
        fields = [
            ("Content-Type", content_type),
            ("Content-Length", str(len(raw))),
            ("X-Content-Type-Options", "nosniff"),
            *(headers or {}).items(),
        ]
        await self.send(h11.Response(status_code=status, headers=fields))
        await self.send(h11.Data(data=raw))
        await self.send(h11.EndOfMessage())

    # -- routing -------------------------------------------------------------------------

    async def _handle(self, request: Request) -> bool:
        """Answer ``request``; True when the connection was upgraded (and is done)."""
        parts = [p for p in request.path.split("/") if p]
        try:
            route = self._route(request.method, parts)
            if route is None:
                raise HttpError(404, "404 page not found")
            return bool(await route(request, parts))
        except HttpError as exc:
            # a refused upgrade ends the connection: the client expects nothing more
            close = {"Connection": "close"} if request.upgrade else None
            await self.respond(exc.status, exc.message + "\n", headers=close)
            return False

    def _route(
        self, method: str, parts: list[str]
    ) -> Callable[[Request, list[str]], Awaitable[bool | None]] | None:
        if not parts:
            return None
        read_only = method == "GET"
        if parts == ["healthz"] and read_only:
            return self._healthz
        if parts == ["pods"] and read_only:
            return self._pods
        if parts[0] == "containerLogs" and len(parts) == 4:
            return self._logs if read_only else _method_not_allowed
        if parts[0] == "exec" and len(parts) in (4, 5):
            return self._exec if method in ("GET", "POST") else _method_not_allowed
        return None

    async def _healthz(self, request: Request, parts: list[str]) -> None:
        await self.respond(200, "ok")

    async def _pods(self, request: Request, parts: list[str]) -> None:
        items = [w.current_pod() for w in self.server.host.pod_workers() if not w.done.is_set()]
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
        await self.respond(200, json.dumps(body), "application/json")

    # -- logs ----------------------------------------------------------------------------

    async def _logs(self, request: Request, parts: list[str]) -> None:
        _, namespace, pod, name = parts
        try:
            options = LogOptions.from_query(request.query, time.time())
        except LogOptionsError as exc:
            raise HttpError(400, str(exc)) from None
        worker = self.server.find_worker(namespace, pod)
        container = self.server.find_container(worker, name)
        log_file, live = _log_source(worker, container, options.previous)
        instance = container.instance
        data, offset, log_filter = await asyncio.to_thread(logs.render_log, log_file, options)
        headers = [("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked")]
        await self.send(h11.Response(status_code=200, headers=headers))
        if data:
            await self.send(h11.Data(data=data))
        if options.follow and live and not log_filter.done:
            await self._follow(log_file, offset, log_filter, container, instance)
        await self.send(h11.EndOfMessage())

    async def _follow(
        self,
        log_file: Path,
        offset: int,
        log_filter: LogFilter,
        container: Container,
        instance: int,
    ) -> None:
        """Stream what the instance writes until it exits (or the client leaves)."""
        gone = asyncio.create_task(self.reader.read(1))  # EOF: the client went away
        try:
            with log_file.open("rb") as handle:
                handle.seek(offset)
                while not gone.done():
                    # checked before reading: once it ended, this read gets the rest
                    running = container.instance == instance and container.process is not None
                    chunk = handle.read()
                    if chunk:
                        out = log_filter.feed(chunk, time.time())
                        if out:
                            await self.send(h11.Data(data=out))
                    if not running or log_filter.done:
                        return
                    await asyncio.wait({gone}, timeout=FOLLOW_POLL)
        finally:
            gone.cancel()

    # -- exec ----------------------------------------------------------------------------

    async def _exec(self, request: Request, parts: list[str]) -> bool:
        namespace, pod, name = parts[1], parts[2], parts[-1]
        try:
            options = ExecOptions.from_query(request.query)
        except ExecError as exc:
            raise HttpError(400, str(exc)) from None
        worker = self.server.find_worker(namespace, pod)
        if len(parts) == 5 and parts[3] != worker.uid:
            raise HttpError(404, f'pod "{pod}" with uid {parts[3]} does not exist')
        container = self.server.find_container(worker, name)
        try:
            containerexec.check_running(container)
        except ExecError as exc:
            raise HttpError(404, str(exc)) from None
        upgrade = request.upgrade
        log.debug("exec in %s/%s/%s over %s: %s", namespace, pod, name, upgrade, options)
        if upgrade == "websocket":
            await self._exec_websocket(request, options, container)
            return True
        if upgrade == "spdy/3.1":
            await self._exec_spdy(request, options, container)
            return True
        raise HttpError(400, "Upgrade request required")

    async def _switch(self, headers: list[tuple[str, str]]) -> bytes:
        """Answer 101 Switching Protocols; the bytes the client sent past its request."""
        while (event := await self._next_event()) is not h11.PAUSED:
            if isinstance(event, h11.ConnectionClosed):
                raise ConnectionResetError("the client left before the upgrade")
        await self.send(h11.InformationalResponse(status_code=101, headers=headers))
        data, _closed = self.http.trailing_data
        return bytes(data)

    async def _exec_spdy(
        self, request: Request, options: ExecOptions, container: Container
    ) -> None:
        offered = request.header_values("x-stream-protocol-version")
        protocol = next((p for p in offered if p in execsession.SPDY_PROTOCOLS), None)
        if protocol is None and offered:
            raise HttpError(
                403,
                f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
                f"server supports {list(execsession.SPDY_PROTOCOLS)}",
            )
        log.debug("exec: SPDY/3.1 with %s", protocol or "channel.k8s.io (v1)")
        headers = [("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")]
        if protocol:
            headers.append(("X-Stream-Protocol-Version", protocol))
        initial = await self._switch(headers)
        session = spdy.Session(self.reader, self.writer, initial)
        await execsession.over_spdy(session, protocol, options, container)

    async def _exec_websocket(
        self, request: Request, options: ExecOptions, container: Container
    ) -> None:
        key = request.header("sec-websocket-key")
        protocol = wschannel.choose_protocol(request.headers.get("sec-websocket-protocol") or [])
        if not key:
            raise HttpError(400, "missing Sec-WebSocket-Key")
        if protocol is None:
            raise HttpError(
                400,
                f"requested protocol(s) are not supported: "
                f"{request.header('sec-websocket-protocol')}; supports {list(wschannel.PROTOCOLS)}",
            )
        log.debug("exec: WebSocket with %s", protocol or "channel.k8s.io (v1)")
        headers = [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", generate_accept_token(key.encode()).decode()),
        ]
        if protocol:
            headers.append(("Sec-WebSocket-Protocol", protocol))
        initial = await self._switch(headers)
        session = wschannel.ChannelSession(self.reader, self.writer, protocol, initial)
        await execsession.over_websocket(session, protocol, options, container)


async def _method_not_allowed(request: Request, parts: list[str]) -> None:
    raise HttpError(405, "405 method not allowed")


def _log_source(worker: PodWorker, container: Container, previous: bool) -> tuple[Path, bool]:
    """The log file a request reads, as kubelet picks the container instance: the
    current (or, while it waits to restart, the last) one; ``previous``: the one before
    (the last one while it waits to restart). Also whether that instance still runs."""
    files = logs.instance_logs(worker.dir, container.name)
    pod = worker.name
    if previous:
        back = 1 if container.state.restarting else 2
        if len(files) < back:
            raise HttpError(
                400, f'previous terminated container "{container.name}" in pod "{pod}" not found'
            )
        return files[-back], False
    if not files:
        reason = container.state.reason or "ContainerCreating"
        raise HttpError(
            400, f'container "{container.name}" in pod "{pod}" is waiting to start: {reason}'
        )
    return files[-1], container.process is not None
