"""Container processes: each one in its own process group and (as root) its own mount and
UTS namespace, where the Pod's volumes, service-account directory and ``/etc/hosts`` are
bind-mounted and the hostname is the Pod's, and in the Pod's network namespace when it
has one (``nsenter --net=/run/netns/<name>`` in front of everything).

``unshare -m -u --propagation private`` runs a short ``sh`` script that sets the hostname,
makes the bind mounts, changes directory and then replaces itself (``exec``) with the
container's command, so the process the agent started *is* the container's main process
(its pid is the ``containerID``, ``olmtool://<pid>``). When that process exits, what is
left of its process group is killed, as a container's processes die with it. Every
started process is recorded under ``<state>/pids`` so a restarted agent can kill what a
crashed one left behind.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from olmtool.cluster.node.volumes import Mount

log = logging.getLogger(__name__)

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    cwd: str = "/"
    mounts: list[Mount] = field(default_factory=list)
    hosts_file: Path | None = None
    resolv_file: Path | None = None  # bound over /etc/resolv.conf
    hostname: str = ""
    create_cwd: bool = False
    netns: str | None = None  # the Pod's network namespace (/run/netns/...), if it has one


def isolation_available() -> bool:
    """Whether containers can get their own mount namespace (root and util-linux)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        return False
    try:
        done = subprocess.run(
            ["unshare", "-m", "-u", "--propagation", "private", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def namespace_script(spec: LaunchSpec) -> str:
    """The ``sh`` script run inside the new namespaces before ``exec "$@"``."""
    q = shlex.quote
    # The mount tools come from the host's PATH; the container's own PATH is restored
    # before the exec.
    lines = [
        "set -e",
        '__olmtool_path="${PATH-}"; __olmtool_had_path="${PATH+x}"',
        f"PATH={SYSTEM_PATH}",
    ]
    if spec.hostname:
        lines.append(f"echo {q(spec.hostname)} > /proc/sys/kernel/hostname")
    for mount in spec.mounts:
        if not mount.bind:
            continue
        target = q(mount.target)
        if mount.is_file:
            lines.append(
                f"[ -e {target} ] || {{ mkdir -p {q(os.path.dirname(mount.target))}; "
                f": > {target}; }}"
            )
        else:
            lines.append(f"[ -d {target} ] || mkdir -p {target}")
        lines.append(f"mount --bind {q(str(mount.source))} {target}")
        if mount.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    if spec.hosts_file is not None:
        lines.append(f"mount --bind {q(str(spec.hosts_file))} /etc/hosts")
    if spec.resolv_file is not None:
        lines.append(f"mount --bind {q(str(spec.resolv_file))} /etc/resolv.conf")
    cwd = q(spec.cwd or "/")
    if spec.create_cwd:
        lines.append(f"mkdir -p {cwd}")
    lines.append(f"cd {cwd} 2>/dev/null || cd /")
    lines.append("unset OLDPWD")
    lines.append(
        'if [ -n "$__olmtool_had_path" ]; then PATH="$__olmtool_path"; else unset PATH; fi'
    )
    lines.append("unset __olmtool_path __olmtool_had_path")
    lines.append('exec "$@"')
    return "\n".join(lines)


def command_line(spec: LaunchSpec, isolated: bool) -> list[str]:
    """The argv that starts the container: the namespaced wrapper, or the bare command,
    entered into the Pod's network namespace if it has one."""
    argv = _mount_namespace(spec) if isolated else list(spec.argv)
    if spec.netns:
        nsenter = shutil.which("nsenter", path=SYSTEM_PATH) or "nsenter"
        return [nsenter, f"--net={spec.netns}", "--", *argv]
    return argv


def _mount_namespace(spec: LaunchSpec) -> list[str]:
    return [
        shutil.which("unshare", path=SYSTEM_PATH) or "unshare",
        "-m",
        "-u",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        namespace_script(spec),
        "olmtool-container",
        *spec.argv,
    ]


def launch(spec: LaunchSpec, isolated: bool, log_file: Path) -> subprocess.Popen[bytes]:
    """Start the container's process in a new session (its own process group)."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    cwd = None
    if not isolated:
        cwd = spec.cwd if spec.cwd and os.path.isdir(spec.cwd) else "/"
    with log_file.open("ab") as out:
        return subprocess.Popen(
            command_line(spec, isolated),
            env=spec.env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/pid/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def group_members(pgid: int, not_before: int | None = None) -> list[int]:
    """Pids in process group ``pgid`` (started no earlier than ``not_before`` ticks)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        try:
            if int(fields[2]) != pgid:
                continue
            if not_before is not None and int(fields[19]) < not_before:
                continue
        except (IndexError, ValueError):
            continue
        members.append(int(entry.name))
    return members


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the process group; False if it has no members left."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def terminate_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the group, SIGKILL it after ``grace`` seconds; reap the leader."""
    pgid = process.pid
    if process.poll() is None:
        signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(grace, 0))
    signal_group(pgid, signal.SIGKILL)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
        log.warning("process %d did not die after SIGKILL", pgid)


class PidRecords:
    """``<state>/pids/<pid>.json`` for every live container process."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()

    def record(self, pid: int, info: Mapping[str, str]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        entry = {"pid": pid, "pgid": pid, "start": start_time(pid), **info}
        (self.directory / f"{pid}.json").write_text(json.dumps(entry))

    def forget(self, pid: int) -> None:
        (self.directory / f"{pid}.json").unlink(missing_ok=True)

    def kill_leftovers(self) -> int:
        """SIGKILL the process groups of recorded processes still alive (from an agent
        that died without stopping them); returns how many groups were killed."""
        killed = 0
        if not self.directory.is_dir():
            return 0
        for path in self.directory.glob("*.json"):
            try:
                entry = json.loads(path.read_text())
                pgid, started = int(entry["pgid"]), entry.get("start")
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
                continue
            members = group_members(pgid, int(started) if started is not None else None)
            if members:
                for member in members:
                    with contextlib.suppress(OSError):
                        os.kill(member, signal.SIGKILL)
                killed += 1
                log.info("killed leftover container process group %d (%s)", pgid, entry)
            path.unlink(missing_ok=True)
        if killed:
            time.sleep(0.1)
        return killed
