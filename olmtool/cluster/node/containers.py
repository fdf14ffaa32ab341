"""One container of a Pod at run time: its state (:mod:`.state`), back-offs, process,
probers, and what it takes to launch it, run a command or hook in it, and stop it.

Nothing here touches the Pod's other containers or the node agent: the worker
(:mod:`.worker`) passes in what a step needs (Pod IP, isolation, lookups).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olmtool.cluster.node import containerexec, probes, process
from olmtool.cluster.node.env import PodFacts, build_env, expand_all
from olmtool.cluster.node.runtime import DEFAULT_PATH, ResolvedImage
from olmtool.cluster.node.state import CANNOT_RUN, ContainerState, Termination
from olmtool.cluster.node.status import Backoff, cap_for, exit_code_of, will_restart
from olmtool.cluster.node.volumes import Mount, can_create, rewrite, rewrite_table

if TYPE_CHECKING:
    from olmtool.cluster.node.host import NodeSettings
    from olmtool.cluster.node.kube import PodApi

JSON = dict[str, Any]
DEFAULT_GRACE = 30.0  # terminationGracePeriodSeconds' default
HOOK_TIMEOUT = 30.0
PROBES = (
    ("startup", "startupProbe"),
    ("readiness", "readinessProbe"),
    ("liveness", "livenessProbe"),
)


def grace_period(pod: JSON) -> float:
    """The seconds a Pod's containers get between SIGTERM and SIGKILL."""
    grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(DEFAULT_GRACE if grace is None else grace)


@dataclass
class Container:
    """The run-time side of one (init) container; its reported state is ``state``."""

    spec: JSON
    state: ContainerState
    backoff: Backoff  # crash-loop back-off
    pull_backoff: Backoff  # image-pull back-off
    instance: int = 0  # counts started instances: messages about an older one are dropped
    process: subprocess.Popen[bytes] | None = None
    started_mono: float = 0.0
    startup_done: threading.Event = field(default_factory=threading.Event)
    probers: list[probes.Prober] = field(default_factory=list)
    image: ResolvedImage | None = None
    launch: process.LaunchSpec | None = None
    exec_table: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def from_spec(
        cls, spec: JSON, init: bool, backoff_base: float, reported: Mapping[str, Any] | None
    ) -> Container:
        """A container not started yet; ``reported`` is the status a previous agent
        posted for it, if any."""
        state = ContainerState(str(spec.get("name")), str(spec.get("image") or ""), init)
        if reported:
            state.adopt(reported)
        cap = cap_for(backoff_base)
        return cls(spec, state, Backoff(backoff_base, cap), Backoff(backoff_base, cap))

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def init(self) -> bool:
        return self.state.init

    @property
    def running(self) -> bool:
        return self.state.running

    @property
    def ports(self) -> list[JSON]:
        return list(self.spec.get("ports") or [])

    def hook(self, name: str) -> JSON:
        return (self.spec.get("lifecycle") or {}).get(name) or {}

    def stop_probers(self) -> None:
        for prober in self.probers:
            prober.stop()
        self.probers = []

    # -- instances ----------------------------------------------------------------------

    def began(
        self,
        proc: subprocess.Popen[bytes],
        image: ResolvedImage,
        launch: process.LaunchSpec,
        started_at: str,
        now: float,
    ) -> None:
        """A new instance runs as ``proc``."""
        self.instance += 1
        self.process, self.image, self.launch = proc, image, launch
        self.started_mono = now
        self.startup_done = threading.Event()
        self.state.started_instance(proc.pid, started_at, image.image_id)

    def exited(
        self, returncode: int, finished_at: str, now: float, policy: str, log_file: Path
    ) -> Termination:
        """The instance's process ended with ``returncode`` (negative: killed by signal)."""
        code = exit_code_of(returncode)
        self.stop_probers()
        message = ""
        if code != 0 and self.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            message = log_tail(log_file)
        termination = Termination(
            exit_code=code,
            reason="Completed" if code == 0 else "Error",
            message=message,
            started_at=self.state.started_at,
            finished_at=finished_at,
            container_id=f"olmtool://{self.process.pid if self.process else 0}",
            signal=-returncode if returncode < 0 else None,
        )
        self.process = None
        restart = will_restart(policy, code, self.init)
        # kubelet's back-off only advances when the container is restarted
        delay = self.backoff.next_delay(now - self.started_mono) if restart else 0.0
        self.state.ended(termination, restart, delay, now)
        return termination

    def cannot_run(self, message: str, stamp: str, now: float, policy: str) -> None:
        """Its program cannot be started: it ends as exit 127, as with a runtime."""
        termination = Termination(
            127, CANNOT_RUN, message=message, started_at=stamp, finished_at=stamp
        )
        delay = self.backoff.next_delay()
        self.state.ended(termination, will_restart(policy, 127, self.init), delay, now)

    # -- running things in it -------------------------------------------------------------

    def exec(self, command: Sequence[str], timeout: float) -> probes.ProbeResult:
        """Run ``command`` as the container would (its image, env, paths, namespaces and
        working directory), as ``kubectl exec`` does (:func:`.containerexec.invocation`)."""
        try:
            invoked = containerexec.invocation(self, command, tty=False)
        except containerexec.ExecError as exc:
            return probes.ProbeResult(False, str(exc))
        return probes.run_exec(invoked.argv, invoked.env, invoked.cwd or "/", timeout)

    def checker(self, probe: JSON, pod_ip: str) -> Callable[[float], Any]:
        """The check a probe makes, given its timeout."""
        if "httpGet" in probe:
            return lambda timeout: probes.http_get(probe["httpGet"], pod_ip, self.ports, timeout)
        if "tcpSocket" in probe:
            return lambda timeout: probes.tcp_socket(
                probe["tcpSocket"], pod_ip, self.ports, timeout
            )
        if "exec" in probe:
            command = list(probe["exec"].get("command") or [])
            return lambda timeout: self.exec(command, timeout)
        return lambda timeout: probes.ProbeResult(False, "unsupported probe handler")

    def run_hook(self, hook: JSON, pod_ip: str, timeout: float) -> probes.ProbeResult:
        """A lifecycle hook; handlers other than exec and httpGet do nothing, as in kubelet."""
        if "exec" in hook or "httpGet" in hook:
            return self.checker(hook, pod_ip)(timeout)
        return probes.ProbeResult(True)

    def stop(self, grace: float, pod_ip: str) -> str | None:
        """Run the preStop hook, then SIGTERM, then SIGKILL once ``grace`` seconds have
        passed (blocks); what went wrong with the hook, if anything."""
        proc = self.process
        if proc is None:
            return None
        deadline = time.monotonic() + grace
        problem = None
        hook = self.hook("preStop")
        if hook and proc.poll() is None:
            try:
                self.run_hook(hook, pod_ip, grace)
            except Exception as exc:
                problem = str(exc)
        process.terminate_group(proc, max(deadline - time.monotonic(), 0))
        return problem


def launch_spec(
    c: Container,
    image: ResolvedImage,
    facts: PodFacts,
    mounts: list[Mount],
    *,
    api: PodApi,
    settings: NodeSettings,
    hostname: str,
    hosts_file: Path,
    service_links: Mapping[str, str] | None = None,
    netns: str | None = None,
    resolv_file: Path | None = None,
) -> process.LaunchSpec:
    """How to start ``c`` from ``image``: its environment (``api`` looks up config maps
    and secrets; ``service_links`` are its namespace's Service variables), command (made
    runnable here), working directory, mounts, network namespace and resolv.conf. Sets
    ``c.exec_table`` (the paths its commands see rewritten). Raises ``ConfigError`` or
    ``ImageError``."""
    spec, isolated = c.spec, settings.isolated
    base = {"PATH": DEFAULT_PATH, "HOME": "/root", **image.env, "HOSTNAME": hostname}
    base.update(settings.service_env)
    base.update(service_links or {})
    env = build_env(spec, facts, configmap=api.configmap, secret=api.secret, base=base)
    command = expand_all(spec.get("command") or [], env)
    args = expand_all(spec.get("args") or [], env)
    table = rewrite_table(mounts, image.path_map)
    argv = [rewrite(a, table) for a in image.default_command(command, args)]
    env = {k: rewrite(v, table) for k, v in env.items()}
    if image.python_path:
        extra = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
        env["PYTHONPATH"] = os.pathsep.join([*image.python_path, *extra])
    argv = image.resolve_executable(argv, env.get("PATH", DEFAULT_PATH))
    cwd = _working_dir(spec, image, table)
    bound = [m.target for m in mounts if m.bind]
    create_cwd = (
        can_create(cwd) or any(cwd.startswith(b.rstrip("/") + "/") for b in bound)
    ) and isolated
    c.exec_table = table
    return process.LaunchSpec(
        argv=argv,
        env=env,
        cwd=cwd,
        mounts=mounts,
        hosts_file=hosts_file if isolated else None,
        resolv_file=resolv_file if isolated else None,
        hostname=hostname if isolated else "",
        create_cwd=create_cwd,
        netns=netns,
    )


def _working_dir(spec: JSON, image: ResolvedImage, table: list[tuple[str, str]]) -> str:
    cwd = rewrite(str(spec.get("workingDir") or image.working_dir or "/"), table)
    if image.rootfs is not None and not os.path.isdir(cwd):
        inside = str(image.rootfs) + cwd
        if os.path.isdir(inside):
            return inside  # an image directory the host lacks: its unpacked copy
    return cwd


def log_tail(path: Path, lines: int = 80, limit: int = 2048) -> str:
    """The end of a container log, for ``terminationMessagePolicy: FallbackToLogsOnError``."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - limit, 0))
            data = handle.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
