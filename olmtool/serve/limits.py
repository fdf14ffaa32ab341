"""How much one client can take from the catalog server, and how much of a request it echoes.

Clients are not trusted: a catalog server listens for whoever can reach it (every pod of a
cluster, or a whole network with ``--host 0.0.0.0``). :class:`ServerLimits` bounds what they
hold (connections, threads, time, request size); :func:`echo` bounds the request strings
copied into errors, so that a 1 MB package name cannot make a 1 MB status (gRPC sends the
status message as a trailer, and clients refuse trailers over 8-16 KiB).
"""

from __future__ import annotations

from dataclasses import dataclass

ECHO_CHARS = 200  # a request string quoted in an error keeps this many characters
DETAILS_BYTES = 2048  # a whole gRPC status message or HTTP error body, UTF-8 encoded


@dataclass(frozen=True)
class ServerLimits:
    """Limits of :func:`olmtool.serve.start_server`; the defaults suit a catalog server.

    HTTP (catalogd's API): a fixed pool of ``http_workers`` threads serves requests; a
    connection waiting for a request holds no thread, only a socket. ``http_connections``
    caps the open sockets: at the cap a new connection closes the longest-idle one (an
    idle keep-alive or a client that never sent anything), or gets a 503 when none is
    idle. ``http_header_timeout`` closes a connection that sends no request for that long
    (after it opens, or after the previous response) and one whose request line and
    headers take longer than that once they start. ``http_write_timeout`` drops a client
    that accepts no data for that long while a response is sent.

    gRPC (api.Registry): ``grpc_workers`` threads run calls, at most ``grpc_max_rpcs``
    are in progress or queued (more get RESOURCE_EXHAUSTED), ``grpc_max_streams`` per
    connection (HTTP/2 SETTINGS); requests over ``grpc_max_receive_bytes`` are refused
    (RESOURCE_EXHAUSTED); the server pings idle connections every ``grpc_keepalive``
    seconds, so that streams to vanished clients end rather than hold a worker.
    """

    http_workers: int = 16
    http_connections: int = 256
    http_header_timeout: float = 10.0
    http_write_timeout: float = 30.0
    grpc_workers: int = 16
    grpc_max_rpcs: int = 64
    grpc_max_streams: int = 32
    grpc_max_receive_bytes: int = 1 << 20
    grpc_keepalive: float = 60.0

    def __post_init__(self) -> None:
        for name in ("http_workers", "http_connections", "grpc_workers", "grpc_max_rpcs"):
            if getattr(self, name) < 1:
                raise ValueError(f"ServerLimits.{name} must be at least 1")
        for name in ("http_header_timeout", "http_write_timeout", "grpc_keepalive"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ServerLimits.{name} must be positive")


def echo(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` as an error message may quote it: the first ``limit`` characters, and then
    ``... (N characters)`` when it is longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def bounded(message: str, limit: int = DETAILS_BYTES) -> str:
    """A whole error message cut to ``limit`` UTF-8 bytes (the last resort behind
    :func:`echo`: a message that quotes several strings, or text nobody echoed)."""
    data = message.encode()
    if len(data) <= limit:
        return message
    return data[: limit - 40].decode(errors="ignore") + f"... ({len(data):,} bytes)"
