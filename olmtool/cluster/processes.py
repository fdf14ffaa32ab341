"""The local cluster's processes: started detached, recorded by pid and start time (so a
recycled pid is never taken for one of ours), and stopped with a grace period."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import OlmtoolError


class ClusterError(OlmtoolError):
    """A local cluster could not be started, found or stopped."""


@dataclass
class Component:
    pid: int
    started: int  # /proc/<pid>/stat start time: tells a recycled pid apart

    @classmethod
    def of(cls, pid: int) -> Component:
        """The running process ``pid`` as a component (start time 0 if it is gone)."""
        return cls(pid, start_time(pid) or 0)

    def alive(self) -> bool:
        return start_time(self.pid) == self.started


def detach(args: list[str], log_file: Path, *, clusters_dir: Path) -> Component:
    """Start ``args`` in a session of its own, logging to ``log_file``.
    ``OLMTOOL_CLUSTERS_DIR`` names the cluster's root, so its registry pulls find the
    running cluster's login (:func:`olmtool.cluster.registryauth.cluster_login`: the
    registry process ``cluster.json`` records alive, never a stopped cluster's)."""
    env = {**os.environ, "OLMTOOL_CLUSTERS_DIR": str(clusters_dir)}
    with log_file.open("ab") as log:
        process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env,
        )  # fmt: skip
    return Component.of(process.pid)


def terminate(component: Component, grace: float) -> bool:
    """SIGTERM, then SIGKILL after ``grace`` seconds; False if it was not running."""
    if not component.alive():
        return False
    try:
        os.kill(component.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(component.pid)
        if not component.alive():
            return True
        time.sleep(0.1)
    if component.alive():
        os.kill(component.pid, signal.SIGKILL)
        time.sleep(0.1)
        _reap(component.pid)
    return True


def _reap(pid: int) -> None:
    """Collect the exit status if ``up`` ran in this process (else it is not our child)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # a zombie is gone for our purposes
        return None
    return int(fields[19])
