"""The loopback ports of a cluster's components, picked once and kept in its state.

``<state>/ports.json`` maps a component's port name (``etcd``, ``etcd-peer``,
``kube-apiserver``, ``kube-controller-manager``, ``kube-scheduler``, ``registry``) to its
port. The first start picks free ports and records them; every later start reuses them,
so the kubeconfig's server and the registry address stay valid across restarts.

>>> ports = PortRecord.load(state_dir)
>>> ports.assign(["etcd", "etcd-peer"])        # recorded ones kept, missing ones picked
{'etcd': 43121, 'etcd-peer': 43122}
>>> port_in_use(ports["etcd"]), port_holder(ports["etcd"])
(True, 'pid 4242 (etcd)')
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterable
from pathlib import Path

from olmtool.ports import LOOPBACK, free_ports

PORTS_FILE = "ports.json"


class PortRecord:
    """What ``ports.json`` holds, and which of its ports were picked by this process
    (``fresh``: nobody outside can have learned them yet)."""

    def __init__(self, path: Path, ports: dict[str, int] | None = None) -> None:
        self.path = path
        self.ports: dict[str, int] = dict(ports or {})
        self.fresh: set[str] = set()

    @classmethod
    def load(cls, state_dir: Path) -> PortRecord:
        path = Path(state_dir) / PORTS_FILE
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        ports = {
            str(name): int(port)
            for name, port in (data.items() if isinstance(data, dict) else ())
            if isinstance(port, int) and 0 < port < 65536
        }
        return cls(path, ports)

    def __getitem__(self, name: str) -> int:
        return self.ports[name]

    def get(self, name: str) -> int | None:
        return self.ports.get(name)

    def settled(self, name: str) -> bool:
        """Whether ``name``'s port was recorded by an earlier start (users may hold it)."""
        return name in self.ports and name not in self.fresh

    def assign(self, names: Iterable[str], wanted: dict[str, int] | None = None) -> dict[str, int]:
        """The ports of ``names``: recorded ones kept; the others ``wanted[name]`` when
        given and non-zero, else free ports. Saved when anything was added."""
        names = list(names)
        wanted = wanted or {}
        missing = [n for n in names if n not in self.ports]
        taken = set(self.ports.values())
        picked = iter(_free_ports_except(len(missing), taken))
        for name in missing:
            self.ports[name] = wanted.get(name) or next(picked)
            self.fresh.add(name)
        if missing:
            self.save()
        return {name: self.ports[name] for name in names}

    def replace(self, name: str) -> int:
        """A new free port for ``name`` (its recorded one is taken by someone else)."""
        others = {port for key, port in self.ports.items() if key != name}
        self.ports[name] = _free_ports_except(1, others | {self.ports.get(name, 0)})[0]
        self.fresh.add(name)
        self.save()
        return self.ports[name]

    def forget(self, name: str) -> None:
        if self.ports.pop(name, None) is not None:
            self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(self.ports, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)


def _free_ports_except(count: int, avoid: set[int]) -> list[int]:
    for _ in range(10):
        ports = free_ports(count) if count else []
        if not avoid.intersection(ports):
            return ports
    raise OSError(f"no {count} free loopback ports outside {sorted(avoid)}")


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """Whether a listener could not bind ``host:port`` now. SO_REUSEADDR as Go and
    docker-registry set it, so connections of a stopped server in TIME_WAIT do not count."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def port_holder(port: int, proc: Path = Path("/proc")) -> str | None:
    """``pid N (command)`` of a process listening on TCP ``port``, if this user can see it."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        command = (entry / "comm").read_text().strip()
                        return f"pid {entry.name} ({command})"
    return "another process"


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = (proc / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local_address is ADDR:PORT in hex; state 0A is LISTEN
            if (
                len(fields) > 9
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(fields[9])
    return inodes
