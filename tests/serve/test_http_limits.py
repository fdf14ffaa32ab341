"""catalogd's HTTP API against hostile clients (issue 15): real sockets, a real server.

Each test is one reproducer: idle connections beyond the cap, a connection that sends
nothing or stalls mid-head, client resets, an HTTP/0.9 request line, huge request strings.
The server runs with small limits (1 s timeouts, 2 workers) so the tests stay quick.
"""

from __future__ import annotations

import logging
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from olmtool.serve import RunningServer, ServerLimits, start_server

from .conftest import write_big_catalog, write_catalog

TIMEOUT = 1.0
LIMITS = ServerLimits(
    http_workers=2, http_connections=8, http_header_timeout=TIMEOUT, http_write_timeout=TIMEOUT
)
REQUEST = b"GET /catalogs/operatorhub/api/v1/metas?schema=olm.package HTTP/1.1\r\nHost: x\r\n\r\n"
ALL = b"GET /catalogs/operatorhub/api/v1/all HTTP/1.1\r\nHost: x\r\n\r\n"  # 2.6 MB


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningServer]:
    root = write_big_catalog(write_catalog(tmp_path / "operatorhub"))
    lines: list[str] = []
    with start_server(root, grpc_port=0, http_port=0, log=lines.append, limits=LIMITS) as running:
        running.log_lines = lines  # type: ignore[attr-defined]
        yield running


def address(server: RunningServer) -> tuple[str, int]:
    assert server.http_url is not None
    host, port = server.http_url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def connect(server: RunningServer, timeout: float = 5.0, *, small: bool = False) -> socket.socket:
    """A client socket; ``small``: a tiny receive window, so that the server blocks on it."""
    sock = socket.socket()
    if small:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(timeout)
    sock.connect(address(server))
    return sock


def response(reader: BinaryIO) -> tuple[bytes, bytes]:
    """One response's head and body (by Content-Length) from ``sock.makefile("rb")``."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = reader.readline()
        assert line, f"the server closed the connection after {head!r}"
        head += line
    length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n")[0])
    return head, reader.read(length)


def receive_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection (or resets it)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def ask(server: RunningServer, request: bytes = REQUEST) -> bytes:
    """One request on a fresh connection: the status line."""
    with connect(server) as sock:
        sock.sendall(request)
        return sock.recv(65536).split(b"\r\n", 1)[0]


def reset(sock: socket.socket) -> None:
    """Close with an RST, as a killed client or a middlebox does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def wait_for(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_idle_connections_beyond_the_cap_hold_no_threads(served: RunningServer) -> None:
    threads = threading.active_count()
    idle = [connect(served) for _ in range(60)]  # 7.5 times the cap, sending nothing
    try:
        wait_for(lambda: served._http._server.open_connections <= 8)  # type: ignore[union-attr]
        assert threading.active_count() <= threads + 1
        started = time.monotonic()
        assert ask(served) == b"HTTP/1.1 200 OK"  # it closed an idle one to make room
        assert time.monotonic() - started < 0.5
        assert idle[0].recv(1) == b""  # the oldest were closed for newer ones
    finally:
        for sock in idle:
            sock.close()


def test_all_busy_connections_get_503_then_service_resumes(served: RunningServer) -> None:
    # Heads that never finish: each holds a worker (2) or waits for one, until the timeout.
    stalled = [connect(served) for _ in range(8)]
    for sock in stalled:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    wait_for(lambda: served._http._server.open_connections == 8)  # type: ignore[union-attr]
    time.sleep(0.1)  # all eight readable, so all busy
    started = time.monotonic()
    assert ask(served) == b"HTTP/1.1 503 Service Unavailable"
    assert time.monotonic() - started < 0.5
    for sock in stalled:  # each is closed at its deadline: 2 workers, 1 s each, 8 heads
        assert receive_all(sock) == b""
        sock.close()
    assert ask(served) == b"HTTP/1.1 200 OK"


def test_a_silent_connection_is_closed_after_the_header_timeout(served: RunningServer) -> None:
    with connect(served) as sock:
        started = time.monotonic()
        assert receive_all(sock) == b""
        elapsed = time.monotonic() - started
    assert TIMEOUT * 0.8 < elapsed < TIMEOUT + 1.5


def test_a_stalled_request_head_is_closed_after_the_header_timeout(
    served: RunningServer,
) -> None:
    with connect(served) as sock:
        sock.sendall(b"GET /catalogs/operatorhub/api/v1/all HTTP/1.1\r\nHost")
        started = time.monotonic()
        for _ in range(3):  # slowloris: a byte now and then does not extend the deadline
            time.sleep(TIMEOUT / 3)
            try:
                sock.sendall(b"x")
            except OSError:
                break
        assert receive_all(sock) == b""
        assert time.monotonic() - started < TIMEOUT + 1.5
    lines: list[str] = served.log_lines  # type: ignore[attr-defined]
    wait_for(lambda: "http GET /catalogs/operatorhub/api/v1/all 408" in "\n".join(lines))


def test_a_client_that_stops_reading_is_dropped_after_the_write_timeout(
    served: RunningServer,
) -> None:
    lines: list[str] = served.log_lines  # type: ignore[attr-defined]
    with connect(served, small=True) as sock:
        sock.sendall(ALL * 4)  # pipelined: 10 MB, more than any socket buffer holds
        started = time.monotonic()
        wait_for(lambda: any(" 499 " in line for line in lines), timeout=TIMEOUT + 3)
        elapsed = time.monotonic() - started
    assert TIMEOUT * 0.8 < elapsed < TIMEOUT + 1.5
    assert ask(served) == b"HTTP/1.1 200 OK"


def test_client_resets_are_quiet(
    served: RunningServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="olmtool.serve")
    for _ in range(5):  # before the request is complete
        sock = connect(served)
        sock.sendall(b"GET /catalogs/operatorhub/api/v1/all HTTP/1.1\r\nHo")
        time.sleep(0.02)
        reset(sock)
    for _ in range(5):  # in the middle of a body
        sock = connect(served, small=True)
        sock.sendall(ALL * 3)  # pipelined, so that the server is still writing
        assert sock.recv(1024).startswith(b"HTTP/1.1 200 OK")
        reset(sock)
    lines: list[str] = served.log_lines  # type: ignore[attr-defined]
    wait_for(lambda: sum(" 499 " in line for line in lines) == 10)
    assert ask(served) == b"HTTP/1.1 200 OK"
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Error" not in err
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]
    assert len([r for r in caplog.records if r.name == "olmtool.serve.http"]) <= 10


@pytest.mark.parametrize(
    "request_line",
    [
        b"GET /\r\n",  # HTTP/0.9
        b"GET\r\n",
        b"GET / HTTP/1.1 extra\r\n",
        b"GET / FTP/1.0\r\n\r\n",
        b"\x00\x01\x02\r\n",
    ],
)
def test_http09_and_malformed_request_lines_get_400_and_close(
    served: RunningServer, request_line: bytes
) -> None:
    with connect(served, timeout=3) as sock:
        started = time.monotonic()
        sock.sendall(request_line)
        answer = receive_all(sock)
        assert time.monotonic() - started < 0.5
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"Connection: close\r\n" in answer


def test_error_bodies_and_log_lines_bound_the_echoed_request(served: RunningServer) -> None:
    name = "n" * 7000
    with connect(served) as sock:
        sock.sendall(f"GET /catalogs/{name}/api/v1/all HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head, body = response(sock.makefile("rb"))
    assert head.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert len(body) < 300 and b"(7,000 characters)" in body
    with connect(served) as sock:
        sock.sendall(b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\n\r\n")
        assert receive_all(sock).startswith(b"HTTP/1.1 414 ")
    with connect(served) as sock:
        sock.sendall(f"GET / HTTP/{'9' * 5000}\r\n\r\n".encode())
        answer = receive_all(sock)
    assert answer.startswith(b"HTTP/1.1 400 ") and len(answer) < 600
    huge_head = b"".join(b"X-%d: %s\r\n" % (n, b"v" * 1000) for n in range(70))
    with connect(served) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n" + huge_head + b"\r\n")
        assert receive_all(sock).startswith(b"HTTP/1.1 431 ")
    lines: list[str] = served.log_lines  # type: ignore[attr-defined]
    assert lines and max(len(line) for line in lines) < 300


def test_keep_alive_and_pipelined_requests_still_work(served: RunningServer) -> None:
    with connect(served) as sock, sock.makefile("rb") as reader:
        sock.sendall(REQUEST * 3)  # pipelined
        answers = [response(reader) for _ in range(3)]
        time.sleep(0.1)
        sock.sendall(REQUEST)  # and once more after a pause, on the same connection
        answers.append(response(reader))
    assert [head.split(b"\r\n")[0] for head, _ in answers] == [b"HTTP/1.1 200 OK"] * 4
    assert len({body for _, body in answers}) == 1


GZIP_ALL = ALL.replace(b"\r\n\r\n", b"\r\nAccept-Encoding: gzip\r\n\r\n")
READER = """\
import socket, sys
sock = socket.create_connection(("{host}", {port}))
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sock.sendall({request!r})
sock.recv(1024)
print("reading", flush=True)
while True:
    sock.recv(16)  # slowly, until killed (like curl killed mid-response)
"""


def test_clients_that_close_early_are_quiet(
    served: RunningServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """A client that closes (FIN, not a reset) right after its request, one that
    reads a little of a large (or gzipped) body and closes, a HEAD left unread, and a
    client process killed mid-response: each is a request-log line, never a traceback."""
    caplog.set_level(logging.DEBUG, logger="olmtool.serve")
    early = [
        lambda sock: (sock.sendall(ALL), sock.close()),
        lambda sock: (sock.sendall(GZIP_ALL), sock.close()),
        lambda sock: (
            sock.sendall(ALL),
            sock.shutdown(socket.SHUT_WR),
            sock.recv(64),
            sock.close(),
        ),
        lambda sock: (sock.sendall(GZIP_ALL * 2), sock.recv(64), sock.close()),
        lambda sock: (sock.sendall(ALL.replace(b"GET", b"HEAD")), sock.close()),
    ]
    for close_early in early:
        for _ in range(3):
            close_early(connect(served, small=True))
    host, port = address(served)
    client = subprocess.Popen(
        [sys.executable, "-c", READER.format(host=host, port=port, request=ALL * 2)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdout is not None and client.stdout.readline() == "reading\n"
    client.kill()
    client.wait()
    lines: list[str] = served.log_lines  # type: ignore[attr-defined]
    wait_for(lambda: len(lines) >= 3 * len(early) + 1)
    assert ask(served) == b"HTTP/1.1 200 OK"  # and the server serves on
    assert any(" 499 " in line for line in lines)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Error" not in err
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]
