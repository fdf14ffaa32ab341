"""How much one client can take from the catalog server, and how much of a request it echoes.

Clients are not trusted: a catalog server listens for whoever can reach it (every pod of a
cluster, or a whole network with ``--host 0.0.0.0``). :class:`ServerLimits` bounds what they
hold (connections, threads, queued calls, time, request size); :func:`echo` bounds the
request strings copied into errors, so that a 1 MB package name cannot make a 1 MB status
(gRPC sends the status message as a trailer, and clients refuse trailers over 8-16 KiB).
"""

from __future__ import annotations

from dataclasses import dataclass

ECHO_CHARS = 200  # a request string quoted in an error keeps this many characters
DETAILS_BYTES = 2048  # a whole gRPC status message or HTTP error body, UTF-8 encoded
# A gRPC call's request read ahead before a worker takes it (HTTP/2's initial window):
# what a queued call holds, whatever the request's size.
GRPC_STREAM_WINDOW = 64 * 1024
# gRPC calls refused for a full queue and not yet answered (a burst): past this many, gRPC's
# own cap refuses, also RESOURCE_EXHAUSTED but with its message "Concurrent RPC limit
# exceeded!". It bounds what a flood of calls can hold while it is being refused.
GRPC_REFUSAL_BACKLOG = 1024


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

    gRPC (api.Registry): ``grpc_workers`` threads run calls; a call that finds them all
    busy waits in a queue, holding no thread and at most :data:`GRPC_STREAM_WINDOW` of
    its request. At most ``grpc_max_rpcs`` calls are in progress or queued, from all
    connections together; one more is refused at once with RESOURCE_EXHAUSTED and
    :func:`busy_message`. So hundreds of clients calling at once are all answered, the
    last after the queue ahead of it (about 1.5 ms a short call), and a full queue of
    1 MB requests holds about 90 MB. ``grpc_max_streams`` caps the streams one
    connection has open (HTTP/2 SETTINGS); it stays above ``grpc_max_rpcs`` because
    streams past it are refused (REFUSED_STREAM, UNAVAILABLE to the client), not
    queued, and one connection may carry many clients' calls (a process's channels of
    equal options share one). Requests over ``grpc_max_receive_bytes`` are refused
    (RESOURCE_EXHAUSTED); the server pings idle connections every ``grpc_keepalive``
    seconds, so that streams to vanished clients end rather than hold a worker.
    """

    http_workers: int = 16
    http_connections: int = 256
    http_header_timeout: float = 10.0
    http_write_timeout: float = 30.0
    grpc_workers: int = 16
    grpc_max_rpcs: int = 1024
    grpc_max_streams: int = 2048
    grpc_max_receive_bytes: int = 1 << 20
    grpc_keepalive: float = 60.0

    def __post_init__(self) -> None:
        for name in (
            "http_workers",
            "http_connections",
            "grpc_workers",
            "grpc_max_rpcs",
            "grpc_max_streams",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"ServerLimits.{name} must be at least 1")
        for name in ("http_header_timeout", "http_write_timeout", "grpc_keepalive"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ServerLimits.{name} must be positive")


def busy_message(limit: int) -> str:
    """The status message of a gRPC call refused because ``limit`` calls are already in
    progress or queued (``ServerLimits.grpc_max_rpcs``)."""
    return (
        f"the catalog server is busy: {limit:,} calls are in progress or queued, its limit;"
        " retry shortly"
    )


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
