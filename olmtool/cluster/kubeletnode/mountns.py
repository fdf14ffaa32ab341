"""A node's mount namespace: its containerd and kubelet see Pod log folders of their own.

kubelet 1.20 keeps Pods' logs in ``/var/log/pods`` (and links in ``/var/log/containers``)
whatever its root (a setting only from 1.29), and its garbage collector removes, once a
minute, every folder there whose Pod it does not run: two nodes on one machine (two local
clusters, or nodes of one cluster) would delete each other's logs. So a node's containerd
and kubelet run in one mount namespace of the node's, where those two folders are bind
mounts of the node's own (``<node>/logs``). It is pinned to a file (util-linux ``unshare
--mount=FILE``), so that either process is restarted into it, and it is the host's
*slave*: it sees the host's mounts, the host never sees the Pods' (volumes, containers'
root filesystems), which end with the namespace.

>>> pin = ensure(node_dir, "olmtool-2")   # /run/olmtool/mnt/olmtool-2
>>> argv = enter(pin, ["containerd", "--config", ...])
>>> release(pin)                          # its processes killed, the namespace gone
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from olmtool.errors import OlmtoolError

PIN_DIR = Path("/run/olmtool/mnt")
LOG_DIRS = (Path("/var/log/pods"), Path("/var/log/containers"))


class MountNamespaceError(OlmtoolError):
    """A node's mount namespace could not be made."""


def pin_path(key: str) -> Path:
    """Where the namespace of the node whose machine-wide name is ``key`` is pinned."""
    return PIN_DIR / key


def ensure(node_dir: Path, key: str) -> Path:
    """The node's namespace, made unless pinned already; returns its pin."""
    pin = pin_path(key)
    if _pinned(pin):
        return pin
    _private_dir(PIN_DIR)
    pin.touch()
    binds = []
    for target in LOG_DIRS:
        source = node_dir.resolve() / "logs" / target.name
        source.mkdir(parents=True, exist_ok=True)
        target.mkdir(parents=True, exist_ok=True)  # the mount point, empty on the host
        binds.append(f"mount --bind '{source}' '{target}'")
    argv = ["unshare", f"--mount={pin}", "--propagation", "slave", "sh", "-ec", "; ".join(binds)]
    made = subprocess.run(argv, capture_output=True, text=True, check=False)
    if made.returncode != 0:
        release(pin)
        raise MountNamespaceError(f"{' '.join(argv[:4])}: {made.stderr.strip()}")
    return pin


def enter(pin: Path, argv: list[str]) -> list[str]:
    """``argv`` run in the pinned namespace (nsenter execs it: the pid stays the same)."""
    return ["nsenter", f"--mount={pin}", "--", *argv]


def release(pin: Path) -> list[int]:
    """Every process still in the namespace killed (a container's shim outlives its
    containerd), then the pin removed: the namespace and its mounts go with the last
    process. Returns the pids killed."""
    killed = []
    if _pinned(pin):
        inode = pin.stat().st_ino
        for pid in _members(inode):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        subprocess.run(["umount", str(pin)], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        pin.unlink()
    return killed


def _members(inode: int) -> list[int]:
    """The pids whose mount namespace is the one with ``inode``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(proc / "ns" / "mnt") == f"mnt:[{inode}]":
                pids.append(int(proc.name))
    return pids


def mount_points() -> dict[str, str]:
    """Mount point -> filesystem type, from this process's mount table (empty if
    unreadable)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return {}
    points = {}
    for line in lines:
        fields = line.split()
        if " - " in line and len(fields) > 4:
            after = line.split(" - ", 1)[1].split()
            points[fields[4].replace("\\040", " ")] = after[0] if after else ""
    return points


def _pinned(pin: Path) -> bool:
    return mount_points().get(str(pin)) == "nsfs"


def _private_dir(directory: Path) -> None:
    """``directory`` as a mount of its own with private propagation: a namespace can only
    be pinned there (on a shared mount, as ``/`` is under systemd, the bind would
    propagate to its peers)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if str(directory) not in mount_points():
        _mount(["--bind", str(directory), str(directory)])
    _mount(["--make-private", str(directory)])


def _mount(args: list[str]) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise MountNamespaceError(f"mount {' '.join(args)}: {done.stderr.strip()}")
