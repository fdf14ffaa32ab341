"""One worker thread per Pod: sets the Pod up (IP, hosts file, volumes, service-account
token), runs its init containers in order and then its containers as local processes,
probes them, restarts them per ``restartPolicy`` with back-off, reports the Pod's status,
and on deletion stops them (SIGTERM, SIGKILL after the grace period) and deletes the Pod
with grace 0, as kubelet does.

All Pod state is changed on the worker's own thread; process waiters and probers only
post messages to its inbox and wake it.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olmtool.cluster.node import logs, probes, process
from olmtool.cluster.node.env import ConfigError, PodFacts, build_env, expand_all
from olmtool.cluster.node.kube import STRATEGIC_PATCH, now, status_of
from olmtool.cluster.node.network import host_entry, pod_hostname
from olmtool.cluster.node.runtime import DEFAULT_PATH, ImageError, ResolvedImage
from olmtool.cluster.node.status import (
    Backoff,
    cap_for,
    exit_code_of,
    pod_conditions,
    pod_phase,
    should_restart,
    should_restart_init,
    with_transition_times,
)
from olmtool.cluster.node.volumes import (
    SA_MOUNT,
    Mount,
    Volume,
    VolumeContext,
    VolumeError,
    atomic_write,
    can_create,
    materialise,
    plan_mounts,
    rewrite,
    rewrite_table,
    service_account_files,
)

if TYPE_CHECKING:
    from olmtool.cluster.node.agent import NodeAgent

log = logging.getLogger(__name__)

JSON = dict[str, Any]
REFRESH_VOLUMES = 60.0  # seconds between rewrites of ConfigMap/Secret/downward volumes
IDLE_WAKE = 5.0
MIN_GRACE = 2.0  # kubelet's minimum grace period for a force-deleted Pod
SA_VOLUME = "__serviceaccount"


@dataclass
class Container:
    """The runtime state of one (init) container of a Pod."""

    spec: JSON
    init: bool
    backoff: Backoff
    pull_backoff: Backoff
    restart_count: int = 0
    increment_on_start: bool = False  # it ran under a previous agent: its next start counts
    process: subprocess.Popen[bytes] | None = None
    instance: int = 0
    started_at: str | None = None
    started_mono: float = 0.0
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    waiting_since: float = 0.0
    termination: JSON | None = None  # how the latest instance ended
    previous: JSON | None = None  # how the instance before it ended
    next_start: float = 0.0  # monotonic time before which it must not (re)start
    ready: bool = False
    started: bool = False
    startup_done: threading.Event = field(default_factory=threading.Event)
    probers: list[probes.Prober] = field(default_factory=list)
    image: ResolvedImage | None = None
    launch: process.LaunchSpec | None = None
    exec_table: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.spec.get("name"))

    @property
    def running(self) -> bool:
        return self.process is not None

    @property
    def succeeded(self) -> bool:
        return self.termination is not None and self.termination.get("exitCode") == 0

    def stop_probers(self) -> None:
        for prober in self.probers:
            prober.stop()
        self.probers = []


class PodWorker:
    def __init__(self, agent: NodeAgent, pod: JSON) -> None:
        meta = pod["metadata"]
        self.agent = agent
        self.pod = pod
        self.uid = str(meta["uid"])
        self.namespace = str(meta.get("namespace") or "default")
        self.name = str(meta["name"])
        self.key = f"{self.namespace}/{self.name}"
        self.dir = logs.pod_dir(agent.state_dir, self.namespace, self.name, self.uid)
        self.wake = threading.Event()
        self.inbox: queue.SimpleQueue[tuple] = queue.SimpleQueue()
        self._pod_lock = threading.Lock()
        self.gone = False
        self.shutdown_grace: float | None = None
        self.done = threading.Event()
        self.ip = ""
        self.hostname = pod_hostname(pod)
        self.hosts_file = self.dir / ".hosts"
        self.volumes: dict[str, Volume] | None = None
        self.volumes_refreshed = 0.0
        self.volume_error = ""
        self.final_phase: str | None = None
        self.start_time: str | None = None
        self.last_report: JSON | None = None
        self.conditions: list[JSON] = []
        self.sa_mount: bool | None = None
        spec = pod.get("spec") or {}
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        base = agent.backoff_base
        previous = {
            str(s.get("name")): s
            for s in [
                *((pod.get("status") or {}).get("containerStatuses") or []),
                *((pod.get("status") or {}).get("initContainerStatuses") or []),
            ]
        }

        def make(spec: JSON, init: bool) -> Container:
            c = Container(spec, init, Backoff(base, cap_for(base)), Backoff(base, cap_for(base)))
            old = previous.get(c.name)
            if old:
                c.restart_count = int(old.get("restartCount") or 0)
                state = old.get("state") or {}
                c.increment_on_start = (
                    "running" in state
                    or "terminated" in state
                    or bool((old.get("lastState") or {}).get("terminated"))
                )
                if init and (state.get("terminated") or {}).get("exitCode") == 0:
                    c.termination = dict(state["terminated"])  # already ran to completion
            return c

        self.init_containers = [make(c, True) for c in spec.get("initContainers") or []]
        self.containers = [make(c, False) for c in spec.get("containers") or []]
        phase = (pod.get("status") or {}).get("phase")
        self.adopted_final = phase in ("Succeeded", "Failed")
        if self.adopted_final:
            self.final_phase = phase  # kubelet never restarts a finished Pod, nor rewrites it
        self.thread = threading.Thread(target=self._run, name=f"pod-{self.key}", daemon=True)

    # -- called from the agent's threads --------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def update(self, pod: JSON) -> None:
        with self._pod_lock:
            self.pod = pod
        self.wake.set()

    def deleted(self, pod: JSON | None = None) -> None:
        with self._pod_lock:
            if pod is not None:
                self.pod = pod
            self.gone = True
        self.wake.set()

    def shutdown(self, grace: float) -> None:
        self.shutdown_grace = grace
        self.wake.set()

    @property
    def hosts_entry(self):
        return host_entry(self.current_pod(), self.ip) if self.ip else None

    def current_pod(self) -> JSON:
        with self._pod_lock:
            return self.pod

    # -- the worker thread ------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:
            log.exception("pod %s: worker failed", self.key)
            self._kill_all(MIN_GRACE)
        finally:
            self.done.set()
            self.agent.worker_done(self)

    def _loop(self) -> None:
        self._prepare()
        while True:
            self._drain_inbox()
            pod = self.current_pod()
            if self.shutdown_grace is not None:
                self._kill_all(self.shutdown_grace)
                return
            if self.gone:
                grace = self._grace(pod)
                self._kill_all(max(grace, MIN_GRACE) if grace else MIN_GRACE)
                self._cleanup()
                return
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                self._terminate(pod)
                return
            if self.final_phase is None:
                try:
                    self._sync()
                except Exception:
                    log.exception("pod %s: sync failed", self.key)
            self._report()
            self.wake.wait(self._next_wake())
            self.wake.clear()

    def _prepare(self) -> None:
        pod = self.current_pod()
        spec = pod.get("spec") or {}
        names = [c.name for c in self.containers] + [c.name for c in self.init_containers]
        logs.write_pod_meta(self.dir, self.namespace, self.name, self.uid, names)
        self.start_time = (pod.get("status") or {}).get("startTime") or now()
        self.conditions = list((pod.get("status") or {}).get("conditions") or [])
        if spec.get("hostNetwork"):
            self.ip = self.agent.host_ip
        else:
            self.ip = self.agent.ips.allocate(self.namespace, self.name)
        self.hosts_file.parent.mkdir(parents=True, exist_ok=True)
        if not self.hosts_file.exists():
            self.hosts_file.write_text("")
        self.agent.hosts_changed(self)

    def _next_wake(self) -> float:
        if self.final_phase is not None:
            return 30.0
        nowm = time.monotonic()
        wake = IDLE_WAKE
        for c in [*self.init_containers, *self.containers]:
            if not c.running and c.next_start > nowm:
                wake = min(wake, c.next_start - nowm)
            if c.waiting_reason == "ErrImagePull":
                wake = min(wake, 1.0)
        if self.volumes is None:
            wake = min(wake, 1.0)
        return max(wake, 0.05)

    def _drain_inbox(self) -> None:
        while True:
            try:
                message = self.inbox.get_nowait()
            except queue.Empty:
                return
            kind, container, instance, *rest = message
            if container.instance != instance:
                continue  # about an instance that was replaced since
            if kind == "exit":
                self._on_exit(container, *rest)
            elif kind == "probe":
                self._on_probe(container, *rest)

    # -- setup --------------------------------------------------------------------------

    def _facts(self) -> PodFacts:
        return PodFacts(self.current_pod(), self.ip, self.agent.host_ip, self.agent.allocatable)

    def _volume_context(self) -> VolumeContext:
        return VolumeContext(
            facts=self._facts(),
            configmap=self.agent.get_configmap,
            secret=self.agent.get_secret,
            claim_path=self.agent.claim_path,
            token=lambda ns, sa, source: self.agent.request_token(ns, sa, source, self.pod),
            ca_bytes=self.agent.ca_bytes,
        )

    def _ensure_volumes(self) -> bool:
        """Materialise (or refresh) the Pod's volumes; False while they cannot be."""
        nowm = time.monotonic()
        if self.volumes is not None:
            self._refresh_volumes(nowm)
            return True
        spec = self.current_pod().get("spec") or {}
        ctx = self._volume_context()
        root = self.dir / ".volumes"
        volumes: dict[str, Volume] = {}
        try:
            for volume in spec.get("volumes") or []:
                if self._is_sa_volume(volume) and self._automount():
                    continue  # replaced by the agent's TokenRequest directory
                made = materialise(volume, root, ctx)
                volumes[made.name] = made
            if self._automount():
                volumes[SA_VOLUME] = self._sa_volume(ctx)
        except (VolumeError, ConfigError) as exc:
            if str(exc) != self.volume_error:
                self.agent.event(self.current_pod(), "Warning", "FailedMount", str(exc))
            self.volume_error = str(exc)
            for c in [*self.init_containers, *self.containers]:
                c.waiting_message = f"volumes not ready: {exc}"
            return False
        except Exception as exc:  # an API error: retry
            self.volume_error = f"{type(exc).__name__}: {exc}"
            log.warning("pod %s: volumes: %s", self.key, self.volume_error)
            return False
        self.volume_error = ""
        for c in [*self.init_containers, *self.containers]:
            c.waiting_message = ""
        self.volumes = volumes
        self.volumes_refreshed = nowm
        return True

    def _sa_volume(self, ctx: VolumeContext) -> Volume:
        files, lifetime = service_account_files(ctx)
        path = self.dir / ".serviceaccount"
        atomic_write(path, files)
        return Volume(SA_VOLUME, path, refresh_at=time.monotonic() + lifetime * 0.8)

    def _refresh_volumes(self, nowm: float) -> None:
        assert self.volumes is not None
        periodic = nowm - self.volumes_refreshed >= REFRESH_VOLUMES
        due = [v for v in self.volumes.values() if v.refresh_at and v.refresh_at <= nowm]
        if not periodic and not due:
            return
        spec = self.current_pod().get("spec") or {}
        ctx = self._volume_context()
        try:
            if any(v.name == SA_VOLUME for v in due):
                self.volumes[SA_VOLUME] = self._sa_volume(ctx)
            for volume in spec.get("volumes") or []:
                name = str(volume.get("name"))
                current = self.volumes.get(name)
                if current is None or not current.managed:
                    continue
                if current.refresh_at is not None and current not in due:
                    continue  # holds a token that is not due yet
                if current.refresh_at is None and not periodic:
                    continue
                self.volumes[name] = materialise(volume, self.dir / ".volumes", ctx)
        except Exception as exc:
            log.warning("pod %s: refreshing volumes: %s", self.key, exc)
        if periodic:
            self.volumes_refreshed = nowm

    def _is_sa_volume(self, volume: JSON) -> bool:
        """The service-account token volume the admission plugin injects."""
        spec = self.current_pod().get("spec") or {}
        account = str(spec.get("serviceAccountName") or "default")
        name = str(volume.get("name") or "")
        secret = (volume.get("secret") or {}).get("secretName") or ""
        if secret.startswith(f"{account}-token-") and name == secret:
            return True
        return name.startswith("kube-api-access-") and "projected" in volume

    def _automount(self) -> bool:
        if self.sa_mount is None:
            spec = self.current_pod().get("spec") or {}
            setting = spec.get("automountServiceAccountToken")
            if setting is None:
                account = str(spec.get("serviceAccountName") or "default")
                setting = self.agent.service_account_automount(self.namespace, account)
            self.sa_mount = bool(setting)
        return self.sa_mount

    # -- running containers ------------------------------------------------------------

    def _sync(self) -> None:
        nowm = time.monotonic()
        if not self._ensure_volumes():
            return
        for c in self.init_containers:
            if c.succeeded:
                continue
            if c.running:
                return
            if c.termination is not None and not should_restart_init(
                self.restart_policy, c.termination["exitCode"]
            ):
                return  # the Pod failed
            if nowm < c.next_start:
                self._show_backoff(c, nowm)
                return
            self._start(c)
            return
        for c in self.containers:
            if c.running:
                continue
            if c.termination is not None and not should_restart(
                self.restart_policy, c.termination["exitCode"]
            ):
                continue
            if nowm < c.next_start:
                self._show_backoff(c, nowm)
                continue
            self._start(c)

    def _show_backoff(self, c: Container, nowm: float) -> None:
        if c.waiting_reason == "ErrImagePull" and nowm - c.waiting_since >= 1.0:
            c.waiting_reason = "ImagePullBackOff"
            c.waiting_message = f'Back-off pulling image "{c.spec.get("image")}": ' + (
                c.waiting_message.split(": ", 1)[-1] if c.waiting_message else ""
            )

    def _set_waiting(self, c: Container, reason: str, message: str, retry_in: float) -> None:
        c.waiting_reason = reason
        c.waiting_message = message
        c.waiting_since = time.monotonic()
        c.next_start = time.monotonic() + retry_in

    def _start(self, c: Container) -> None:
        pod = self.current_pod()
        image_name = str(c.spec.get("image") or "")
        try:
            image = self.agent.images.resolve(image_name, c.spec.get("imagePullPolicy"))
        except ImageError as exc:
            delay = max(c.pull_backoff.next_delay(), self.agent.backoff_base)
            self._set_waiting(c, "ErrImagePull", str(exc), delay)
            self.agent.event(pod, "Warning", "Failed", f"Failed to pull image: {exc}", c.name)
            return
        except Exception as exc:  # a registry or disk problem
            delay = max(c.pull_backoff.next_delay(), self.agent.backoff_base)
            self._set_waiting(c, "ErrImagePull", f"{type(exc).__name__}: {exc}", delay)
            return
        c.pull_backoff.reset()
        try:
            spec = self._launch_spec(c, image)
        except ConfigError as exc:
            self._set_waiting(c, "CreateContainerConfigError", str(exc), 2.0)
            self.agent.event(pod, "Warning", "Failed", f"Error: {exc}", c.name)
            return
        except ImageError as exc:
            self._record_cannot_run(c, str(exc))
            return
        if c.termination is not None or c.increment_on_start:
            c.restart_count += 1
            c.increment_on_start = False
        if c.termination is not None:
            c.previous = c.termination
        c.termination = None
        log_file = logs.log_path(self.dir, c.name, c.restart_count)
        try:
            proc = process.launch(spec, self.agent.isolated, log_file)
        except OSError as exc:
            self._record_cannot_run(c, str(exc))
            return
        c.instance += 1
        c.process = proc
        c.image = image
        c.launch = spec
        c.started_at = now()
        c.started_mono = time.monotonic()
        c.ready = False
        c.started = False
        c.startup_done = threading.Event()
        c.waiting_reason, c.waiting_message = "", ""
        self.agent.pids.record(proc.pid, {"pod": self.key, "uid": self.uid, "container": c.name})
        threading.Thread(
            target=self._wait_process,
            args=(c, c.instance, proc),
            daemon=True,
            name=f"wait-{self.key}-{c.name}",
        ).start()
        self._start_probers(c)
        hook = (c.spec.get("lifecycle") or {}).get("postStart")
        if hook:
            threading.Thread(target=self._post_start, args=(c, hook, proc), daemon=True).start()
        kind = "init container" if c.init else "container"
        self.agent.event(pod, "Normal", "Started", f"Started {kind} {c.name}", c.name)
        log.info("pod %s: started %s %s (pid %d)", self.key, kind, c.name, proc.pid)

    def _record_cannot_run(self, c: Container, message: str) -> None:
        """A container whose program cannot be started ends as exit 127, like a runtime."""
        if c.termination is not None or c.increment_on_start:
            c.restart_count += 1
            c.increment_on_start = False
            if c.termination is not None:
                c.previous = c.termination
        stamp = now()
        c.termination = {
            "exitCode": 127,
            "reason": "ContainerCannotRun",
            "message": message,
            "startedAt": stamp,
            "finishedAt": stamp,
        }
        c.next_start = time.monotonic() + c.backoff.next_delay()
        self.agent.event(self.current_pod(), "Warning", "Failed", f"Error: {message}", c.name)

    def _launch_spec(self, c: Container, image: ResolvedImage) -> process.LaunchSpec:
        spec = c.spec
        facts = self._facts()
        base = {"PATH": DEFAULT_PATH, "HOME": "/root"}
        base.update(image.env)
        base["HOSTNAME"] = self.hostname
        base.update(self.agent.service_env())
        env = build_env(
            spec, facts, configmap=self.agent.get_configmap, secret=self.agent.get_secret, base=base
        )
        command = expand_all(spec.get("command") or [], env)
        args = expand_all(spec.get("args") or [], env)
        argv = image.default_command(command, args)
        mounts = self._mounts(c)
        table = rewrite_table(mounts, image.path_map)
        argv = [rewrite(a, table) for a in argv]
        env = {k: rewrite(v, table) for k, v in env.items()}
        if image.python_path:
            extra = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
            env["PYTHONPATH"] = os.pathsep.join([*image.python_path, *extra])
        argv = image.resolve_executable(argv, env.get("PATH", DEFAULT_PATH))
        cwd = str(spec.get("workingDir") or image.working_dir or "/")
        cwd = rewrite(cwd, table)
        if image.rootfs is not None and not os.path.isdir(cwd):
            inside = str(image.rootfs) + cwd
            if os.path.isdir(inside):
                cwd = inside
        bound = [m.target for m in mounts if m.bind]
        create_cwd = (
            can_create(cwd) or any(cwd.startswith(b.rstrip("/") + "/") for b in bound)
        ) and self.agent.isolated
        c.exec_table = table
        return process.LaunchSpec(
            argv=argv,
            env=env,
            cwd=cwd,
            mounts=mounts,
            hosts_file=self.hosts_file if self.agent.isolated else None,
            hostname=self.hostname if self.agent.isolated else "",
            create_cwd=create_cwd,
        )

    def _mounts(self, c: Container) -> list[Mount]:
        assert self.volumes is not None
        pod = self.current_pod()
        spec = pod.get("spec") or {}
        by_name = {str(v.get("name")): v for v in spec.get("volumes") or []}
        wanted: list[tuple[str, Path, bool, str]] = []
        sa = self.volumes.get(SA_VOLUME)
        for mount in c.spec.get("volumeMounts") or []:
            name = str(mount.get("name"))
            target = os.path.normpath(str(mount.get("mountPath")))
            if sa is not None and (target == SA_MOUNT or self._is_sa_volume(by_name.get(name, {}))):
                continue
            volume = self.volumes.get(name)
            if volume is None:
                raise ConfigError(f"volume {name!r} of volumeMount {target} is not defined")
            sub_path = str(mount.get("subPath") or "")
            wanted.append((target, volume.path, bool(mount.get("readOnly")), sub_path))
        if sa is not None:
            wanted.append((SA_MOUNT, sa.path, True, ""))
        return plan_mounts(wanted, isolated=self.agent.isolated)

    def _wait_process(self, c: Container, instance: int, proc: subprocess.Popen[bytes]) -> None:
        returncode = proc.wait()
        process.signal_group(proc.pid, signal.SIGKILL)  # the rest of the "container"
        self.agent.pids.forget(proc.pid)
        self.inbox.put(("exit", c, instance, returncode, now(), time.monotonic()))
        self.wake.set()

    def _on_exit(self, c: Container, returncode: int, finished: str, finished_mono: float) -> None:
        code = exit_code_of(returncode)
        c.stop_probers()
        pid = c.process.pid if c.process else 0
        c.process = None
        c.ready = False
        c.termination = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": c.started_at,
            "finishedAt": finished,
            "containerID": f"olmtool://{pid}",
        }
        if returncode < 0:
            c.termination["signal"] = -returncode
        if code != 0 and c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            tail = _log_tail(logs.log_path(self.dir, c.name, c.restart_count))
            if tail:
                c.termination["message"] = tail
        ran_for = finished_mono - c.started_mono
        restart = (
            should_restart_init(self.restart_policy, code)
            if c.init
            else should_restart(self.restart_policy, code)
        )
        if restart:
            c.next_start = finished_mono + c.backoff.next_delay(ran_for)
        log.info("pod %s: container %s exited with %d", self.key, c.name, code)

    # -- probes ---------------------------------------------------------------------------

    def _start_probers(self, c: Container) -> None:
        spec = c.spec
        ports = spec.get("ports") or []
        instance = c.instance
        startup = spec.get("startupProbe")
        if c.init or not startup:
            c.started = True
            c.startup_done.set()
        if c.init:
            return
        if not spec.get("readinessProbe"):
            c.ready = True

        def report(kind: str, ok: bool, message: str) -> None:
            self.inbox.put(("probe", c, instance, kind, ok, message))
            self.wake.set()

        for kind, key in (
            ("startup", "startupProbe"),
            ("readiness", "readinessProbe"),
            ("liveness", "livenessProbe"),
        ):
            probe = spec.get(key)
            if not probe:
                continue
            gate = None if kind == "startup" else c.startup_done
            prober = probes.Prober(kind, probe, self._checker(c, probe, ports), report, gate=gate)
            c.probers.append(prober)
            prober.start()

    def _checker(self, c: Container, probe: JSON, ports: list) -> Callable[[float], Any]:
        if "httpGet" in probe:
            return lambda timeout: probes.http_get(probe["httpGet"], self.ip, ports, timeout)
        if "tcpSocket" in probe:
            return lambda timeout: probes.tcp_socket(probe["tcpSocket"], self.ip, ports, timeout)
        if "exec" in probe:
            return lambda timeout: self._exec(c, list(probe["exec"].get("command") or []), timeout)
        return lambda timeout: probes.ProbeResult(False, "unsupported probe handler")

    def _exec(self, c: Container, command: list[str], timeout: float) -> probes.ProbeResult:
        """Run ``command`` as the container would (its image, env, paths, namespaces)."""
        image, spec, proc = c.image, c.launch, c.process
        if image is None or spec is None or proc is None:
            return probes.ProbeResult(False, "container is not running")
        argv = [rewrite(a, c.exec_table) for a in command]
        try:
            argv = image.resolve_executable(argv, spec.env.get("PATH", DEFAULT_PATH))
        except ImageError as exc:
            return probes.ProbeResult(False, str(exc))
        argv = process.exec_in(proc.pid, argv, self.agent.isolated)
        cwd = spec.cwd if not self.agent.isolated else "/"
        return probes.run_exec(argv, spec.env, cwd, timeout)

    def _on_probe(self, c: Container, kind: str, ok: bool, message: str) -> None:
        pod = self.current_pod()
        if kind == "readiness":
            c.ready = ok and c.started
            if not ok and message:
                self.agent.event(
                    pod, "Warning", "Unhealthy", f"Readiness probe failed: {message}", c.name
                )
        elif kind == "startup":
            if ok:
                c.started = True
                c.startup_done.set()
                if not c.spec.get("readinessProbe"):
                    c.ready = True
            else:
                self._kill_unhealthy(c, "Startup", message)
        elif kind == "liveness" and not ok:
            self._kill_unhealthy(c, "Liveness", message)

    def _kill_unhealthy(self, c: Container, what: str, message: str) -> None:
        pod = self.current_pod()
        self.agent.event(pod, "Warning", "Unhealthy", f"{what} probe failed: {message}", c.name)
        self.agent.event(
            pod,
            "Normal",
            "Killing",
            f"Container {c.name} failed {what.lower()} probe, will be restarted",
            c.name,
        )
        proc = c.process
        if proc is not None:
            grace = self._grace(pod)
            threading.Thread(
                target=process.terminate_group, args=(proc, grace), daemon=True
            ).start()

    # -- status -----------------------------------------------------------------------

    def _container_status(self, c: Container, pod_initialized: bool) -> JSON:
        status: JSON = {
            "name": c.name,
            "image": str(c.spec.get("image") or ""),
            "imageID": c.image.image_id if c.image else "",
            "restartCount": c.restart_count,
            "ready": bool(c.running and c.ready),
            "started": bool(c.running and c.started),
            "lastState": {},
        }
        will_restart = False
        if c.termination is not None:
            code = c.termination["exitCode"]
            will_restart = (
                should_restart_init(self.restart_policy, code)
                if c.init
                else should_restart(self.restart_policy, code)
            )
        if c.running:
            assert c.process is not None
            status["state"] = {"running": {"startedAt": c.started_at}}
            status["containerID"] = f"olmtool://{c.process.pid}"
            if c.previous:
                status["lastState"] = {"terminated": c.previous}
        elif c.termination is not None and not will_restart:
            status["state"] = {"terminated": c.termination}
            if c.termination.get("containerID"):
                status["containerID"] = c.termination["containerID"]
            if c.previous:
                status["lastState"] = {"terminated": c.previous}
        elif c.termination is not None:
            reason = c.waiting_reason or "CrashLoopBackOff"
            message = c.waiting_message
            if reason in ("", "ContainerCreating", "CrashLoopBackOff"):
                reason = "CrashLoopBackOff"
                delay = max(0.0, c.backoff.current)
                message = (
                    f"back-off {delay:g}s restarting failed container={c.name} "
                    f"pod={self.name}_{self.namespace}({self.uid})"
                )
            status["state"] = {"waiting": {"reason": reason, "message": message}}
            status["lastState"] = {"terminated": c.termination}
            if c.termination.get("containerID"):
                status["containerID"] = c.termination["containerID"]
        else:
            reason = c.waiting_reason or "ContainerCreating"
            if not c.init and not pod_initialized and reason == "ContainerCreating":
                reason = "PodInitializing"
            waiting: JSON = {"reason": reason}
            if c.waiting_message:
                waiting["message"] = c.waiting_message
            status["state"] = {"waiting": waiting}
            if c.previous:
                status["lastState"] = {"terminated": c.previous}
        return status

    def status(self) -> JSON:
        pod = self.current_pod()
        spec = pod.get("spec") or {}
        init_statuses = [self._container_status(c, False) for c in self.init_containers]
        init_ok = all(c.succeeded for c in self.init_containers)
        statuses = [self._container_status(c, init_ok) for c in self.containers]
        phase = self.final_phase or pod_phase(
            self.restart_policy, init_statuses, statuses, len(self.init_containers)
        )
        if phase in ("Succeeded", "Failed") and self.final_phase is None:
            self.final_phase = phase
            self._stop_everything()
        conditions = pod_conditions(
            phase,
            init_ok,
            statuses,
            spec.get("readinessGates") or [],
            (pod.get("status") or {}).get("conditions") or [],
        )
        self.conditions = with_transition_times(conditions, self.conditions, now())
        status: JSON = {
            "phase": phase,
            "conditions": self.conditions,
            "hostIP": self.agent.host_ip,
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}] if self.ip else [],
            "startTime": self.start_time,
            "containerStatuses": statuses,
        }
        if init_statuses:
            status["initContainerStatuses"] = init_statuses
        return status

    def _report(self) -> None:
        if self.adopted_final:
            return  # finished before this agent started: its status is already final
        status = self.status()
        if status == self.last_report:
            return
        path = f"/api/v1/namespaces/{self.namespace}/pods/{self.name}/status"
        try:
            self.agent.kube.patch(path, {"status": status}, STRATEGIC_PATCH)
            self.last_report = status
        except Exception as exc:
            if status_of(exc) == 404:
                self.last_report = status
                return
            log.warning("pod %s: status update failed: %s", self.key, exc)

    def _stop_everything(self) -> None:
        for c in [*self.init_containers, *self.containers]:
            c.stop_probers()

    # -- stopping -----------------------------------------------------------------------

    def _grace(self, pod: JSON) -> float:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds")
        return float(30 if grace is None else grace)

    def _kill_all(self, grace: float) -> None:
        """Stop every running container: preStop hooks, SIGTERM, SIGKILL after ``grace``."""
        running = [c for c in [*self.init_containers, *self.containers] if c.process]
        pod = self.current_pod()
        threads = []
        for c in running:
            c.stop_probers()
            self.agent.event(pod, "Normal", "Killing", f"Stopping container {c.name}", c.name)
            thread = threading.Thread(target=self._stop_container, args=(c, grace), daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(grace + 15)
        # the waiters post their exits; give them a moment, then record what remains
        deadline = time.monotonic() + 2
        while any(c.process for c in running) and time.monotonic() < deadline:
            self._drain_inbox()
            time.sleep(0.02)
        self._drain_inbox()

    def _stop_container(self, c: Container, grace: float) -> None:
        proc = c.process
        if proc is None:
            return
        deadline = time.monotonic() + grace
        hook = ((c.spec.get("lifecycle") or {}).get("preStop")) or {}
        if hook and proc.poll() is None:
            try:
                self._run_hook(c, hook, grace)
            except Exception as exc:
                log.warning("pod %s: preStop hook of %s: %s", self.key, c.name, exc)
        process.terminate_group(proc, max(deadline - time.monotonic(), 0))

    def _run_hook(self, c: Container, hook: JSON, timeout: float) -> probes.ProbeResult:
        if "exec" in hook:
            return self._exec(c, list(hook["exec"].get("command") or []), timeout)
        if "httpGet" in hook:
            return probes.http_get(hook["httpGet"], self.ip, c.spec.get("ports") or [], timeout)
        return probes.ProbeResult(True)

    def _post_start(self, c: Container, hook: JSON, proc: subprocess.Popen[bytes]) -> None:
        """Run a postStart hook; a failing one kills the container, as kubelet does."""
        try:
            result = self._run_hook(c, hook, 30.0)
        except Exception as exc:
            result = probes.ProbeResult(False, str(exc))
        if result.ok or proc.poll() is not None:
            return
        pod = self.current_pod()
        message = f"PostStartHook failed: {result.message}"
        self.agent.event(pod, "Warning", "FailedPostStartHook", message, c.name)
        process.terminate_group(proc, self._grace(pod))

    def _terminate(self, pod: JSON) -> None:
        """The Pod is being deleted: stop it, report, delete it for good (grace 0)."""
        self._kill_all(self._grace(pod))
        self._report()
        path = f"/api/v1/namespaces/{self.namespace}/pods/{self.name}"
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": self.uid},
        }
        try:
            self.agent.kube.delete(path, body)
        except Exception as exc:
            if status_of(exc) not in (404, 409):
                log.warning("pod %s: final delete failed: %s", self.key, exc)
        self._cleanup()

    def _cleanup(self) -> None:
        """Free what the Pod held on this node; its logs stay."""
        for name in (".volumes", ".serviceaccount"):
            shutil.rmtree(self.dir / name, ignore_errors=True)
        self.agent.release_ip(self)
        self.ip = ""
        self.agent.hosts_changed(self, removed=True)
        logs.mark_deleted(self.dir)
        logs.prune(self.agent.state_dir)


def _log_tail(path: Path, lines: int = 80, limit: int = 2048) -> str:
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
