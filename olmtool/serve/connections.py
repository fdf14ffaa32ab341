"""A TCP server for short requests from untrusted clients: bounded threads, sockets, time.

One thread waits on every open connection with a selector; a connection is handed to one
of a fixed pool of workers only once it has something to read, and comes back to the
selector between keep-alive requests. So a client that connects and sends nothing costs a
socket, never a thread, and is closed when its idle time runs out; one that starts a
request has until the same timeout to complete it, whether or not a worker was free. At the cap of open
connections a new one closes the longest-idle connection, or, when every connection is
busy, gets ``refusal`` (HTTP's 503) and is closed.

A worker reads with :class:`Reader` (``readline`` against a deadline) and writes with
:class:`Writer` (each piece of at most 64 KiB must go out within the write timeout).
Clients that reset or vanish end their connection quietly: one debug line, no traceback.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import logging
import math
import queue
import selectors
import socket
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

log = logging.getLogger(__name__)

WRITE_PIECE = 64 * 1024
BACKLOG = 128
_LISTEN = "listen"
_WAKE = "wake"


class Reader:
    """``readline`` over a socket, failing with TimeoutError once ``deadline`` passes and
    with http.client.LineTooLong once more than ``budget`` bytes are read.

    Just enough file for http.server to read a request line and headers (it reads no
    bodies); what is read past a line stays buffered for the next request.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.deadline = math.inf  # time.monotonic() by which the line must be complete
        self.budget = math.inf  # bytes left to read, then LineTooLong (HTTP's 431)

    def readline(self, limit: int = -1) -> bytes:
        line = self._readline(limit)
        self.budget -= len(line)
        if self.budget < 0:
            raise http.client.LineTooLong("request head")
        return line

    def _readline(self, limit: int) -> bytes:
        while True:
            end = self.buffer.find(b"\n", 0, limit if limit > 0 else len(self.buffer))
            if end >= 0:
                return self._take(end + 1)
            if 0 < limit <= len(self.buffer):
                return self._take(limit)
            # Past the deadline, what has arrived is still read (the connection may have
            # waited for a worker), without waiting for more.
            self.sock.settimeout(max(0.0, self.deadline - time.monotonic()))
            try:
                data = self.sock.recv(WRITE_PIECE)
            except (BlockingIOError, TimeoutError):
                raise TimeoutError("the request took too long to arrive") from None
            if not data:
                return self._take(len(self.buffer))  # the client closed its side
            self.buffer += data

    def _take(self, count: int) -> bytes:
        line = bytes(self.buffer[:count])
        del self.buffer[:count]
        return line


class Writer:
    """``write`` to a socket in pieces, each of which must be sent within ``timeout``."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.timeout = timeout

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        self.sock.settimeout(self.timeout)
        for start in range(0, len(view), WRITE_PIECE):
            self.sock.sendall(view[start : start + WRITE_PIECE])
        return len(view)

    def flush(self) -> None:
        """Nothing is buffered."""


class Connection:
    """One accepted socket with its reader and writer, passed between selector and workers."""

    def __init__(self, sock: socket.socket, address: tuple[str, int], write_timeout: float) -> None:
        self.sock = sock
        self.address = address
        self.reader = Reader(sock)
        self.writer = Writer(sock, write_timeout)
        self.idle_until = math.inf


# handle(connection) serves what the connection sent; True keeps it open for more.
Handle = Callable[[Connection], bool]


class ConnectionServer:
    """Accept on ``address``; ``handle`` runs on a worker whenever a connection has data.

    A connection is closed when it sends nothing for ``read_timeout`` (after it opens, or
    after ``handle`` returned True); once data arrives, ``handle`` finds
    ``connection.reader.deadline`` set ``read_timeout`` ahead.
    """

    def __init__(
        self,
        address: tuple[str, int],
        handle: Handle,
        *,
        workers: int,
        max_connections: int,
        read_timeout: float,
        write_timeout: float,
        refusal: bytes = b"",
        name: str = "tcp",
    ) -> None:
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind(address)
            self._listener.listen(BACKLOG)
        except OSError:
            self._listener.close()
            raise
        self._listener.setblocking(False)
        self.address = self._listener.getsockname()[:2]
        self._handle = handle
        self._max_connections = max_connections
        self._read_timeout = read_timeout
        self._write_timeout = write_timeout
        self._refusal = refusal
        self._name = name
        self._selector = selectors.DefaultSelector()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, _LISTEN)
        self._selector.register(self._wake_reader, selectors.EVENT_READ, _WAKE)
        self._idle: OrderedDict[Connection, None] = OrderedDict()  # oldest first
        self._returned: deque[Connection] = deque()  # from workers, to be idle again
        self._ready: queue.SimpleQueue[Connection | None] = queue.SimpleQueue()
        self._busy: set[Connection] = set()  # queued or on a worker
        self._lock = threading.Lock()
        self._stopping = False
        self._refused = 0  # since the last warning
        self._warned: dict[str, float] = {}
        self._threads = [threading.Thread(target=self._select_loop, name=name, daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True)
            for n in range(workers)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection (in-flight responses are cut), join."""
        self._stopping = True
        self._wake()
        with self._lock:
            for connection in self._busy:
                _shutdown(connection.sock)
        for _ in self._threads[1:]:
            self._ready.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        self._wake_writer.close()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._idle) + len(self._busy)

    # - the selector thread: accepts, waits on idle connections, expires them

    def _select_loop(self) -> None:
        try:
            while not self._stopping:
                timeout = None
                if self._idle:
                    oldest = next(iter(self._idle))
                    timeout = max(0.0, oldest.idle_until - time.monotonic())
                for key, _ in self._selector.select(timeout):
                    if key.data is _LISTEN:
                        self._accept()
                    elif key.data is _WAKE:
                        self._take_returned()
                    else:
                        self._dispatch(key.data)
                self._expire()
        except Exception:
            log.exception("%s: the server stopped on an unexpected error", self._name)
        finally:
            self._close_all()

    def _accept(self) -> None:
        for _ in range(BACKLOG):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:  # out of file descriptors, say: try again shortly
                self._warn("accept", "cannot accept connections: %s", exc)
                time.sleep(0.1)
                return
            if len(self._idle) + len(self._busy) >= self._max_connections:
                if not self._idle:
                    self._refuse(sock)
                    continue
                self._close(next(iter(self._idle)), "closed for a new connection")
            self._park(Connection(sock, address, self._write_timeout))

    def _refuse(self, sock: socket.socket) -> None:
        """Every connection is busy: the refusal (one unblocking send), then close."""
        try:
            sock.setblocking(False)
            sock.recv(WRITE_PIECE)  # what has come of the request, so that close sends no RST
        except OSError:
            pass
        try:
            sock.send(self._refusal)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()
        self._refused += 1
        if self._warn(
            "refused", "%d connection(s) refused: all %d busy", self._refused, self._max_connections
        ):
            self._refused = 0

    def _warn(self, key: str, message: str, *args: object) -> bool:
        """Log a warning, unless the same one was logged in the last 10 seconds."""
        now = time.monotonic()
        if now - self._warned.get(key, -math.inf) < 10:
            return False
        self._warned[key] = now
        log.warning(f"%s: {message}", self._name, *args)
        return True

    def _park(self, connection: Connection) -> None:
        connection.idle_until = time.monotonic() + self._read_timeout
        try:
            self._selector.register(connection.sock, selectors.EVENT_READ, connection)
        except (OSError, ValueError):  # closed by the client meanwhile
            connection.sock.close()
            return
        self._idle[connection] = None

    def _dispatch(self, connection: Connection) -> None:
        """A request is arriving: it has ``read_timeout`` to be complete, waiting included."""
        connection.reader.deadline = time.monotonic() + self._read_timeout
        self._selector.unregister(connection.sock)
        del self._idle[connection]
        with self._lock:
            self._busy.add(connection)
        self._ready.put(connection)

    def _take_returned(self) -> None:
        try:
            while self._wake_reader.recv(4096):
                pass
        except BlockingIOError:
            pass
        while self._returned:
            connection = self._returned.popleft()
            with self._lock:
                self._busy.discard(connection)  # counted as busy until idle again
            self._park(connection)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._idle:
            oldest = next(iter(self._idle))
            if oldest.idle_until > now:
                return
            self._close(oldest, "idle timeout")

    def _close(self, connection: Connection, why: str) -> None:
        self._selector.unregister(connection.sock)
        del self._idle[connection]
        log.debug("%s: %s: %s", self._name, _peer(connection), why)
        _shutdown(connection.sock)
        connection.sock.close()

    def _close_all(self) -> None:
        for connection in list(self._idle):
            self._close(connection, "server stopped")
        for connection in self._returned:
            connection.sock.close()
        self._selector.close()
        self._listener.close()
        self._wake_reader.close()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (a wake-up is pending), or closed
            self._wake_writer.send(b"\0")

    # - the workers

    def _work(self) -> None:
        while (connection := self._ready.get()) is not None:
            keep = False
            try:
                keep = self._handle(connection) and not self._stopping
            except Exception as exc:
                if peer_gone(exc):
                    log.debug(
                        "%s: %s: %s", self._name, _peer(connection), exc or type(exc).__name__
                    )
                else:
                    log.exception("%s: %s: unexpected error", self._name, _peer(connection))
            if keep:
                self._returned.append(connection)
                self._wake()
            else:
                with self._lock:
                    self._busy.discard(connection)
                _shutdown(connection.sock)
                connection.sock.close()


# errnos of a peer that went away which are no ConnectionError (EPIPE, ECONNRESET,
# ECONNABORTED and ESHUTDOWN are): a socket shut down under a write, a route lost midway
_PEER_GONE = frozenset(
    {errno.ENOTCONN, errno.ENETRESET, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN}
)


def peer_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the client left or stalled (reset, broken pipe, timeout): to
    be ended quietly, never with a traceback."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return isinstance(exc, OSError) and exc.errno in _PEER_GONE


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _peer(connection: Connection) -> str:
    host, port = connection.address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
