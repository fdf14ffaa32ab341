"""catalogd's HTTP API (OLM v1) over a :class:`CatalogIndex`.

Connections are held by :class:`olmtool.serve.connections.ConnectionServer` (a fixed
pool of workers, a cap on open connections, read and write timeouts: see
:class:`ServerLimits`); http.server parses each request.

``GET|HEAD /catalogs/<name>/api/v1/all`` answers every blob as one compact JSON line, in
file order: that is the blob store verbatim, streamed from disk. ``/api/v1/metas`` takes
``schema``, ``package`` and ``name`` filters (an empty value matches anything, any other
parameter is a 400) and answers the matching lines in file order. Like catalogd, bodies
over 1400 bytes are gzipped for clients that accept it, and Last-Modified (the newest
catalog file) / If-Modified-Since work; an unknown catalog or path is a 404.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import math
import time
import zlib
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from olmtool.serve.connections import Connection, ConnectionServer, peer_gone
from olmtool.serve.index import BlobRef, CatalogIndex
from olmtool.serve.limits import ServerLimits, echo

GZIP_MIN_SIZE = 1400  # catalogd's gzhttp default: smaller bodies are not worth it
METAS_PARAMETERS = frozenset({"schema", "package", "name"})
JSONL = "application/jsonl"
MAX_REQUEST_LINE = 8192  # catalogd's URLs are short
MAX_HEAD = 64 * 1024  # request line and headers (Go allows 1 MB; http.server 6.4 MB)
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 21\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    b"too many connections\n"
)

log = logging.getLogger(__name__)

RequestLog = Callable[[str], None]


class _Catalogd:
    """What a request needs: the index, the catalog's name, the request log."""

    def __init__(self, index: CatalogIndex, catalog: str, log: RequestLog | None) -> None:
        self.index = index
        self.catalog = catalog
        self.log = log
        self.modified = int(index.data.modified)  # HTTP dates have whole seconds


class _Handler(BaseHTTPRequestHandler):
    """One request on a :class:`Connection` (http.server's parsing, our own reading loop).

    Only HTTP/1.0 and 1.1 are spoken: an HTTP/0.9 or malformed request line is a 400 and
    the connection closes. A client that resets, or stalls past a timeout, ends the
    connection quietly: no traceback, a debug line, and when a request line had come, its
    log line with status 408 (no response yet) or 499 (during the response).
    """

    server: _Catalogd  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.1"  # never 0.9: error responses get a status line
    server_version = "olmtool-catalogd"

    def __init__(self, connection: Connection, catalogd: _Catalogd) -> None:
        # Not socketserver's __init__: that would set up files over the socket and close them.
        self.request = self.connection = connection.sock
        self.client_address = connection.address
        self.server = catalogd
        self.rfile = connection.reader  # type: ignore[assignment]
        self.wfile = connection.writer  # type: ignore[assignment]
        self.reader = connection.reader
        self.close_connection = True
        self.status = 0

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: each request is logged once by :meth:`handle_one_request`."""

    def send_response(self, code: int, message: str | None = None) -> None:
        self.status = int(code)
        super().send_response(code, message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors as catalogd writes them (plain text), quoting at most a bounded request."""
        status = HTTPStatus(code)
        self.close_connection = True
        self._text(status, echo(message or status.phrase), self.command == "HEAD", close=True)

    def handle_one_request(self) -> None:
        started = time.perf_counter()
        self.close_connection = True
        self.command, self.path, self.requestline = "", "", ""  # type: ignore[assignment]
        self.request_version = self.default_request_version
        try:
            self._one_request()
        except Exception as exc:
            self.close_connection = True
            if peer_gone(exc):  # the client reset, closed early or stalled: one debug line
                self.status = 408 if isinstance(exc, TimeoutError) and not self.status else 499
                log.debug("http %s: %s", self.address_string(), exc or type(exc).__name__)
            else:
                log.exception("http %s: %s failed", self.address_string(), echo(self.requestline))
                if not self.status:
                    head = self.command == "HEAD"
                    with contextlib.suppress(OSError):
                        self._text(
                            HTTPStatus.INTERNAL_SERVER_ERROR, "internal error", head, close=True
                        )
        finally:
            if self.server.log is not None and self.requestline:  # a request, not a stray reset
                elapsed = (time.perf_counter() - started) * 1000
                what = _printable(
                    echo(f"{self.command} {self.path}" if self.command else self.requestline)
                )
                self.server.log(f"http {what} {self.status} {elapsed:.1f}ms")

    def _one_request(self) -> None:
        self.reader.budget = MAX_HEAD
        line = self.rfile.readline(MAX_REQUEST_LINE + 1)
        if line in (b"\r\n", b"\n"):  # RFC 9112 2.2: an empty line before a request is fine
            line = self.rfile.readline(MAX_REQUEST_LINE + 1)
        if not line.endswith(b"\n") and len(line) <= MAX_REQUEST_LINE:
            return  # the client closed the connection, maybe halfway through a line
        self.raw_requestline = line
        self.requestline = line[:MAX_REQUEST_LINE].decode("iso-8859-1").rstrip("\r\n")
        if len(line) > MAX_REQUEST_LINE:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
        elif len(self.requestline.split()) != 3:  # HTTP/0.9's "GET /", or no request at all
            self.send_error(HTTPStatus.BAD_REQUEST, "malformed request line")
        elif self.parse_request():  # or it has answered the error
            self.reader.deadline = math.inf  # the head is in: from now on only writes stall
            if (
                self.headers.get("Transfer-Encoding")
                or self.headers.get("Content-Length", "0") != "0"
            ):
                self.close_connection = True  # a body nobody reads: the connection cannot go on
            method = getattr(self, f"do_{self.command}", None)
            if method is None:
                self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"method {self.command} not supported")
            else:
                method()

    def _serve(self, *, head: bool) -> int:
        url = urlsplit(self.path)
        parts = unquote(url.path).strip("/").split("/")
        if len(parts) != 5 or parts[0] != "catalogs" or parts[2:4] != ["api", "v1"]:
            return self._text(HTTPStatus.NOT_FOUND, "404 page not found", head)
        if parts[1] != self.server.catalog:
            return self._text(HTTPStatus.NOT_FOUND, f'catalog "{echo(parts[1])}" not found', head)
        if parts[4] == "all":
            refs = None
        elif parts[4] == "metas":
            query = parse_qs(url.query, keep_blank_values=True)
            if not set(query) <= METAS_PARAMETERS:
                return self._text(HTTPStatus.BAD_REQUEST, "Invalid query parameters", head)
            filters = {key: values[0] for key, values in query.items()}
            refs = self.server.index.find_blobs(**filters) if any(filters.values()) else None
        else:
            return self._text(HTTPStatus.NOT_FOUND, "404 page not found", head)
        if self._not_modified():
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self._common_headers()
            self.end_headers()
            return HTTPStatus.NOT_MODIFIED
        return self._lines(refs, head)

    def _common_headers(self) -> None:
        self.send_header("Last-Modified", email.utils.formatdate(self.server.modified, usegmt=True))
        self.send_header("Vary", "Accept-Encoding")

    def _not_modified(self) -> bool:
        since = self.headers.get("If-Modified-Since")
        if not since:
            return False
        try:
            when = email.utils.parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
        return when.timestamp() >= self.server.modified

    def _lines(self, refs: list[BlobRef] | None, head: bool) -> int:
        store = self.server.index.store
        size = store.size if refs is None else sum(ref.length for ref in refs)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", JSONL)
        self._common_headers()
        if size > GZIP_MIN_SIZE and _accepts_gzip(self.headers.get("Accept-Encoding", "")):
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if not head:
                self._chunked(_gzipped(store.chunks(refs)))
        else:
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if not head:
                for chunk in store.chunks(refs):
                    self.wfile.write(chunk)
        return HTTPStatus.OK

    def _chunked(self, chunks: Iterator[bytes]) -> None:
        for chunk in chunks:
            if chunk:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def _text(self, status: HTTPStatus, message: str, head: bool, *, close: bool = False) -> int:
        body = (message + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        if not head:
            self.wfile.write(body)
        return status


def _accepts_gzip(header: str) -> bool:
    """Whether Accept-Encoding lists gzip (or *) without q=0."""
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            q = params.strip().removeprefix("q=").strip()
            return not q or _quality(q) > 0
    return False


def _quality(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _gzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # fastest level; wbits 31: gzip
    for chunk in chunks:
        yield compressor.compress(chunk)
    yield compressor.flush()


def _printable(text: str) -> str:
    """``text`` for a log line: control characters escaped."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


class CatalogdServer:
    """catalogd's endpoints for one catalog, on background threads (see :class:`ServerLimits`
    for how connections, threads and time are bounded)."""

    def __init__(
        self,
        index: CatalogIndex,
        catalog: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log: RequestLog | None = None,
        limits: ServerLimits | None = None,
    ) -> None:
        limits = limits or ServerLimits()
        self._catalogd = _Catalogd(index, catalog, log)
        self._header_timeout = limits.http_header_timeout
        self._server = ConnectionServer(
            (host, port),
            self._serve,
            workers=limits.http_workers,
            max_connections=limits.http_connections,
            read_timeout=limits.http_header_timeout,
            write_timeout=limits.http_write_timeout,
            refusal=REFUSAL,
            name="catalogd-http",
        )
        self.host = host
        self.port = self._server.address[1]
        self.catalog = catalog

    @property
    def url(self) -> str:
        """``http://host:port``: the server root."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def catalog_url(self) -> str:
        """catalogd's ``status.urls.base`` for the catalog: append ``/api/v1/all``."""
        return f"{self.url}/catalogs/{self.catalog}"

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    def _serve(self, connection: Connection) -> bool:
        """Requests on ``connection`` while it has them; True keeps it open (keep-alive)."""
        while True:  # the first request's deadline was set when it began to arrive
            handler = _Handler(connection, self._catalogd)
            handler.handle_one_request()
            if handler.close_connection:
                return False
            if not connection.reader.buffer:  # no pipelined request: wait in the selector
                return True
            connection.reader.deadline = time.monotonic() + self._header_timeout
