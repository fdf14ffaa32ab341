"""Free TCP ports on loopback, for the servers olmtool starts (control plane, registries).

A port found free can be taken by another process before the server binds it; callers
that start servers retry on fresh ports when that happens.
"""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct free ports (held open together, so none is handed out twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
