"""catalogd's HTTP API (OLM v1) over a :class:`CatalogIndex`.

``GET|HEAD /catalogs/<name>/api/v1/all`` answers every blob as one compact JSON line, in
file order: that is the blob store verbatim, streamed from disk. ``/api/v1/metas`` takes
``schema``, ``package`` and ``name`` filters (an empty value matches anything, any other
parameter is a 400) and answers the matching lines in file order. Like catalogd, bodies
over 1400 bytes are gzipped for clients that accept it, and Last-Modified (the newest
catalog file) / If-Modified-Since work; an unknown catalog or path is a 404.
"""

from __future__ import annotations

import email.utils
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from olmtool.serve.index import BlobRef, CatalogIndex

GZIP_MIN_SIZE = 1400  # catalogd's gzhttp default: smaller bodies are not worth it
METAS_PARAMETERS = frozenset({"schema", "package", "name"})
JSONL = "application/jsonl"

RequestLog = Callable[[str], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        index: CatalogIndex,
        catalog: str,
        log: RequestLog | None,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.index = index
        self.catalog = catalog
        self.log = log
        self.modified = int(index.data.modified)  # HTTP dates have whole seconds


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "olmtool-catalogd"

    def do_GET(self) -> None:
        self._timed(head=False)

    def do_HEAD(self) -> None:
        self._timed(head=True)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: requests are logged once each by :meth:`_timed`, errors as responses."""

    def _timed(self, *, head: bool) -> None:
        started = time.perf_counter()
        status = 0
        try:
            status = self._serve(head=head)
        except (BrokenPipeError, ConnectionResetError):
            status, self.close_connection = 499, True  # the client went away mid-body
        finally:
            if self.server.log is not None:
                elapsed = (time.perf_counter() - started) * 1000
                path = self.path.replace("\n", "")
                self.server.log(f"http {self.command} {path} {status} {elapsed:.1f}ms")

    def _serve(self, *, head: bool) -> int:
        url = urlsplit(self.path)
        parts = unquote(url.path).strip("/").split("/")
        if len(parts) != 5 or parts[0] != "catalogs" or parts[2:4] != ["api", "v1"]:
            return self._text(HTTPStatus.NOT_FOUND, "404 page not found", head)
        if parts[1] != self.server.catalog:
            return self._text(HTTPStatus.NOT_FOUND, f'catalog "{parts[1]}" not found', head)
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

    def _text(self, status: HTTPStatus, message: str, head: bool) -> int:
        body = (message + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
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


class CatalogdServer:
    """catalogd's endpoints for one catalog on a background thread."""

    def __init__(
        self,
        index: CatalogIndex,
        catalog: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log: RequestLog | None = None,
    ) -> None:
        self._server = _Server((host, port), index, catalog, log)
        self.host = host
        self.port = self._server.server_address[1]
        self.catalog = catalog
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="catalogd-http", daemon=True
        )

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
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
