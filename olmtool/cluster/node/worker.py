"""One worker thread per Pod: sets the Pod up (IP, hosts file, network namespace,
volumes, service-account token), runs its init containers in order and then its containers as local processes,
probes them, restarts them per ``restartPolicy`` with back-off, reports the Pod's status,
and on deletion stops them (SIGTERM, SIGKILL after the grace period) and deletes the Pod
with grace 0, as kubelet does.

All Pod state is changed on the worker's own thread; process waiters and probers only
post messages to its inbox and wake it. The worker reaches the node agent only through
:class:`~.host.PodHost`.
"""

from __future__ import annotations

import logging
import queue
import signal
import subprocess
import threading
import time
from typing import Any

from olmtool.cluster.node import containers, logs, probes, process
from olmtool.cluster.node.containers import Container
from olmtool.cluster.node.env import ConfigError, PodFacts
from olmtool.cluster.node.host import PodHost
from olmtool.cluster.node.kube import now
from olmtool.cluster.node.netns import SandboxError
from olmtool.cluster.node.network import (
    HostEntry,
    host_entry,
    pod_hostname,
    render_resolv_conf,
    write_in_place,
)
from olmtool.cluster.node.podvolumes import PodVolumeSet
from olmtool.cluster.node.runtime import ImageError, ResolvedImage
from olmtool.cluster.node.state import CONFIG_ERROR, ERR_IMAGE_PULL, ContainerPhase
from olmtool.cluster.node.status import PodContext, finished, pod_status
from olmtool.cluster.node.volumes import VolumeContext, VolumeError, claim_directory

log = logging.getLogger(__name__)

JSON = dict[str, Any]
IDLE_WAKE = 5.0
FINISHED_WAKE = 30.0  # a finished Pod only waits for its deletion
MIN_GRACE = 2.0  # kubelet's minimum grace period for a force-deleted Pod
CONFIG_RETRY = 2.0  # seconds before a container whose configuration failed is tried again
SANDBOX_RETRY = 2.0  # seconds before a Pod network namespace that failed is tried again


class PodWorker:
    """Runs one Pod on the node ``host`` stands for."""

    def __init__(self, host: PodHost, pod: JSON) -> None:
        meta = pod["metadata"]
        self.host = host
        self.pod = pod
        self.uid = str(meta["uid"])
        self.namespace = str(meta.get("namespace") or "default")
        self.name = str(meta["name"])
        self.key = f"{self.namespace}/{self.name}"
        self.dir = logs.pod_dir(host.settings.state_dir, self.namespace, self.name, self.uid)
        self.wake = threading.Event()
        self.inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._pod_lock = threading.Lock()
        self.gone = False
        self.shutdown_grace: float | None = None
        self.done = threading.Event()
        self.ip = ""
        self.hostname = pod_hostname(pod)
        self.hosts_file = self.dir / ".hosts"
        self.resolv_file = self.dir / ".resolv.conf"
        self.netns: str | None = None  # the Pod's network namespace, once made
        self.sandbox_ready = False
        self.sandbox_error = ""
        self.volumes = PodVolumeSet(self.dir)
        self.volume_error = ""
        self.start_time: str | None = None
        self.last_report: JSON | None = None
        self.conditions: list[JSON] = []
        self.sa_mount: bool | None = None
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        reported = {
            str(s.get("name")): s
            for s in [
                *(status.get("containerStatuses") or []),
                *(status.get("initContainerStatuses") or []),
            ]
        }
        base = host.settings.backoff_base

        def make(spec: JSON, init: bool) -> Container:
            return Container.from_spec(spec, init, base, reported.get(str(spec.get("name"))))

        self.init_containers = [make(c, True) for c in spec.get("initContainers") or []]
        self.containers = [make(c, False) for c in spec.get("containers") or []]
        # kubelet never restarts a finished Pod, nor rewrites its status
        self.adopted_final = status.get("phase") in ("Succeeded", "Failed")
        self.final_phase: str | None = status.get("phase") if self.adopted_final else None
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
    def hosts_entry(self) -> HostEntry | None:
        return host_entry(self.current_pod(), self.ip) if self.ip else None

    def current_pod(self) -> JSON:
        with self._pod_lock:
            return self.pod

    @property
    def all_containers(self) -> list[Container]:
        return [*self.init_containers, *self.containers]

    def status(self) -> JSON:
        """The Pod's status now (no side effects)."""
        pod = self.current_pod()
        context = PodContext(
            name=self.name,
            namespace=self.namespace,
            uid=self.uid,
            restart_policy=self.restart_policy,
            host_ip=self.host.settings.host_ip,
            pod_ip=self.ip,
            start_time=self.start_time,
            readiness_gates=(pod.get("spec") or {}).get("readinessGates") or (),
            conditions=(pod.get("status") or {}).get("conditions") or (),
        )
        return pod_status(
            [c.state for c in self.init_containers],
            [c.state for c in self.containers],
            context,
            final_phase=self.final_phase,
            previous_conditions=self.conditions,
            now=now(),
        )

    # -- the worker thread ------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:
            log.exception("pod %s: worker failed", self.key)
            self._kill_all(MIN_GRACE)
        finally:
            self.done.set()
            self.host.worker_done(self)

    def _loop(self) -> None:
        self._prepare()
        while True:
            self._drain_inbox()
            pod = self.current_pod()
            if self.shutdown_grace is not None:
                self._kill_all(self.shutdown_grace)
                return
            if self.gone:
                grace = containers.grace_period(pod)
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
            self.ip = self.host.settings.host_ip
        else:
            self.ip = self.host.allocate_ip(self.namespace, self.name)
        self.hosts_file.parent.mkdir(parents=True, exist_ok=True)
        if not self.hosts_file.exists():
            self.hosts_file.write_text("")
        self.host.hosts_changed(self)

    def _next_wake(self) -> float:
        if self.final_phase is not None:
            return FINISHED_WAKE
        nowm = time.monotonic()
        wake = IDLE_WAKE
        for c in self.all_containers:
            if not c.running and c.state.next_start > nowm:
                wake = min(wake, c.state.next_start - nowm)
            if c.state.reason == ERR_IMAGE_PULL:
                wake = min(wake, 1.0)  # to show ImagePullBackOff soon
        if not self.volumes.ready:
            wake = min(wake, 1.0)
        if not self.sandbox_ready:
            wake = min(wake, SANDBOX_RETRY)
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

    # -- network namespace ----------------------------------------------------------------

    def _ensure_sandbox(self) -> bool:
        """Give the Pod its network namespace (not a hostNetwork one); False while it
        cannot have one (an Event says why, once per distinct error)."""
        if self.sandbox_ready:
            return True
        if (self.current_pod().get("spec") or {}).get("hostNetwork"):
            self.sandbox_ready = True
            return True
        try:
            self.netns = self.host.sandbox(self)
        except SandboxError as exc:
            message = f"Failed to create pod sandbox: {exc}"
            if message != self.sandbox_error:
                self.host.event(self.current_pod(), "Warning", "FailedCreatePodSandBox", message)
                log.warning("pod %s: %s", self.key, message)
            self.sandbox_error = message
            for c in self.all_containers:
                c.state.volumes_pending(message)
            return False
        if self.netns is not None:  # the host's nameservers are out of the Pod's reach
            write_in_place(self.resolv_file, render_resolv_conf(self.current_pod()))
        self.sandbox_ready, self.sandbox_error = True, ""
        return True

    # -- volumes ------------------------------------------------------------------------

    def _facts(self) -> PodFacts:
        settings = self.host.settings
        return PodFacts(self.current_pod(), self.ip, settings.host_ip, settings.allocatable)

    def _volume_context(self) -> VolumeContext:
        api, pod = self.host.api, self.current_pod()
        return VolumeContext(
            facts=self._facts(),
            configmap=api.configmap,
            secret=api.secret,
            claim_path=lambda ns, claim: claim_directory(
                ns, claim, api.claim, api.persistent_volume
            ),
            token=lambda ns, account, source: api.request_token(ns, account, source, pod),
            ca_bytes=self.host.settings.ca_bytes,
        )

    def _ensure_volumes(self) -> bool:
        """Set up (or refresh) the Pod's volumes; False while they cannot be."""
        nowm = time.monotonic()
        spec = self.current_pod().get("spec") or {}
        if self.volumes.ready:
            try:
                self.volumes.refresh(spec, self._volume_context(), nowm)
            except Exception as exc:  # the files stay as they were
                log.warning("pod %s: refreshing volumes: %s", self.key, exc)
            return True
        try:
            self.volumes.set_up(spec, self._volume_context(), self._automount(), nowm)
        except (VolumeError, ConfigError) as exc:
            if str(exc) != self.volume_error:
                self.host.event(self.current_pod(), "Warning", "FailedMount", str(exc))
            self.volume_error = str(exc)
            for c in self.all_containers:
                c.state.volumes_pending(f"volumes not ready: {exc}")
            return False
        except Exception as exc:  # an API error: retry
            self.volume_error = f"{type(exc).__name__}: {exc}"
            log.warning("pod %s: volumes: %s", self.key, self.volume_error)
            return False
        self.volume_error = ""
        for c in self.all_containers:
            c.state.volumes_pending("")
        return True

    def _automount(self) -> bool:
        if self.sa_mount is None:
            spec = self.current_pod().get("spec") or {}
            setting = spec.get("automountServiceAccountToken")
            if setting is None:
                account = str(spec.get("serviceAccountName") or "default")
                setting = self.host.api.automount_token(self.namespace, account)
            self.sa_mount = bool(setting)
        return self.sa_mount

    # -- running containers ------------------------------------------------------------

    def _sync(self) -> None:
        """Start what is due: the first unfinished init container, else every container
        that is not running and may (re)start now."""
        nowm = time.monotonic()
        if not self._ensure_sandbox() or not self._ensure_volumes():
            return
        for c in self.init_containers:
            if c.state.succeeded:
                continue
            if c.running or c.state.phase is ContainerPhase.TERMINATED:
                return  # still initialising, or the Pod failed
            if nowm < c.state.next_start:
                c.state.pull_backing_off(nowm)
                return
            self._start(c)
            return
        for c in self.containers:
            if c.running or c.state.phase is ContainerPhase.TERMINATED:
                continue
            if nowm < c.state.next_start:
                c.state.pull_backing_off(nowm)
                continue
            self._start(c)

    def _start(self, c: Container) -> None:
        image = self._pull(c)
        if image is None:
            return
        pod = self.current_pod()
        isolated = self.host.settings.isolated
        try:
            spec = self._launch_spec(c, image)
        except ConfigError as exc:
            c.state.wait(CONFIG_ERROR, str(exc), time.monotonic(), CONFIG_RETRY)
            self.host.event(pod, "Warning", "Failed", f"Error: {exc}", c.name)
            return
        except ImageError as exc:
            self._cannot_run(c, str(exc))
            return
        log_file = logs.log_path(self.dir, c.name, c.state.next_restart_count())
        try:
            proc = process.launch(spec, isolated, log_file)
        except OSError as exc:
            self._cannot_run(c, str(exc))
            return
        c.began(proc, image, spec, now(), time.monotonic())
        self.host.record_process(proc.pid, {"pod": self.key, "uid": self.uid, "container": c.name})
        threading.Thread(
            target=self._wait_process,
            args=(c, c.instance, proc),
            daemon=True,
            name=f"wait-{self.key}-{c.name}",
        ).start()
        self._start_probers(c)
        hook = c.hook("postStart")
        if hook:
            threading.Thread(target=self._post_start, args=(c, hook, proc), daemon=True).start()
        kind = "init container" if c.init else "container"
        self.host.event(pod, "Normal", "Started", f"Started {kind} {c.name}", c.name)
        log.info("pod %s: started %s %s (pid %d)", self.key, kind, c.name, proc.pid)

    def _pull(self, c: Container) -> ResolvedImage | None:
        """The container's image, or None (it waits in ErrImagePull, with back-off)."""
        try:
            image = self.host.resolve_image(c.state.image, c.spec.get("imagePullPolicy"))
        except Exception as exc:
            delay = max(c.pull_backoff.next_delay(), self.host.settings.backoff_base)
            if isinstance(exc, ImageError):
                message = str(exc)
                self.host.event(
                    self.current_pod(), "Warning", "Failed", f"Failed to pull image: {exc}", c.name
                )
            else:  # a registry or disk problem
                message = f"{type(exc).__name__}: {exc}"
            c.state.wait(ERR_IMAGE_PULL, message, time.monotonic(), delay)
            return None
        c.pull_backoff.reset()
        return image

    def _launch_spec(self, c: Container, image: ResolvedImage) -> process.LaunchSpec:
        settings = self.host.settings
        pod_spec = self.current_pod().get("spec") or {}
        mounts = self.volumes.mounts(c.spec, pod_spec, settings.isolated)
        links = self.host.service_links(
            self.namespace, pod_spec.get("enableServiceLinks") is not False
        )
        return containers.launch_spec(
            c,
            image,
            self._facts(),
            mounts,
            api=self.host.api,
            settings=settings,
            hostname=self.hostname,
            hosts_file=self.hosts_file,
            service_links=links,
            netns=self.netns,
            resolv_file=self.resolv_file if self.netns else None,
        )

    def _cannot_run(self, c: Container, message: str) -> None:
        c.cannot_run(message, now(), time.monotonic(), self.restart_policy)
        self.host.event(self.current_pod(), "Warning", "Failed", f"Error: {message}", c.name)

    def _wait_process(self, c: Container, instance: int, proc: subprocess.Popen[bytes]) -> None:
        returncode = proc.wait()
        process.signal_group(proc.pid, signal.SIGKILL)  # the rest of the "container"
        self.host.forget_process(proc.pid)
        self.inbox.put(("exit", c, instance, returncode, now(), time.monotonic()))
        self.wake.set()

    def _on_exit(self, c: Container, returncode: int, finished_at: str, nowm: float) -> None:
        log_file = logs.log_path(self.dir, c.name, c.state.restart_count)
        ended = c.exited(returncode, finished_at, nowm, self.restart_policy, log_file)
        log.info("pod %s: container %s exited with %d", self.key, c.name, ended.exit_code)

    # -- probes ---------------------------------------------------------------------------

    def _start_probers(self, c: Container) -> None:
        spec = c.spec
        instance = c.instance
        if c.init or not spec.get("startupProbe"):
            c.state.started = True
            c.startup_done.set()
        if c.init:
            return
        if not spec.get("readinessProbe"):
            c.state.ready = True

        def report(kind: str, ok: bool, message: str) -> None:
            self.inbox.put(("probe", c, instance, kind, ok, message))
            self.wake.set()

        for kind, key in containers.PROBES:
            probe = spec.get(key)
            if not probe:
                continue
            gate = None if kind == "startup" else c.startup_done
            check = c.checker(probe, self.ip)
            prober = probes.Prober(kind, probe, check, report, gate=gate)
            c.probers.append(prober)
            prober.start()

    def _on_probe(self, c: Container, kind: str, ok: bool, message: str) -> None:
        if kind == "readiness":
            c.state.ready = ok and c.state.started
            if not ok and message:
                self._event(c, "Warning", "Unhealthy", f"Readiness probe failed: {message}")
        elif kind == "startup" and ok:
            c.state.started = True
            c.startup_done.set()
            if not c.spec.get("readinessProbe"):
                c.state.ready = True
        elif kind in ("startup", "liveness") and not ok:
            self._kill_unhealthy(c, kind.capitalize(), message)

    def _kill_unhealthy(self, c: Container, what: str, message: str) -> None:
        self._event(c, "Warning", "Unhealthy", f"{what} probe failed: {message}")
        restart = f"Container {c.name} failed {what.lower()} probe, will be restarted"
        self._event(c, "Normal", "Killing", restart)
        proc = c.process
        if proc is not None:
            grace = containers.grace_period(self.current_pod())
            threading.Thread(
                target=process.terminate_group, args=(proc, grace), daemon=True
            ).start()

    def _event(self, c: Container, kind: str, reason: str, message: str) -> None:
        self.host.event(self.current_pod(), kind, reason, message, c.name)

    # -- status -----------------------------------------------------------------------

    def _report(self) -> None:
        if self.adopted_final:
            return  # finished before this agent started: its status is already final
        status = self.status()
        self.conditions = status["conditions"]
        self._settle(status["phase"])
        if status == self.last_report:
            return
        try:
            self.host.api.patch_status(self.namespace, self.name, status)
            self.last_report = status  # posted, or the Pod is gone: nothing to repeat
        except Exception as exc:
            log.warning("pod %s: status update failed: %s", self.key, exc)

    def _settle(self, phase: str) -> None:
        """A Pod that reached Succeeded or Failed stays there: its probes stop."""
        if finished(phase) and self.final_phase is None:
            self.final_phase = phase
            for c in self.all_containers:
                c.stop_probers()

    # -- stopping -----------------------------------------------------------------------

    def _kill_all(self, grace: float) -> None:
        """Stop every running container: preStop hooks, SIGTERM, SIGKILL after ``grace``."""
        running = [c for c in self.all_containers if c.process]
        threads = []
        for c in running:
            c.stop_probers()
            self._event(c, "Normal", "Killing", f"Stopping container {c.name}")
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
        problem = c.stop(grace, self.ip)
        if problem:
            log.warning("pod %s: preStop hook of %s: %s", self.key, c.name, problem)

    def _post_start(self, c: Container, hook: JSON, proc: subprocess.Popen[bytes]) -> None:
        """Run a postStart hook; a failing one kills the container, as kubelet does."""
        try:
            result = c.run_hook(hook, self.ip, containers.HOOK_TIMEOUT)
        except Exception as exc:
            result = probes.ProbeResult(False, str(exc))
        if result.ok or proc.poll() is not None:
            return
        message = f"PostStartHook failed: {result.message}"
        self._event(c, "Warning", "FailedPostStartHook", message)
        process.terminate_group(proc, containers.grace_period(self.current_pod()))

    def _terminate(self, pod: JSON) -> None:
        """The Pod is being deleted: stop it, report, delete it for good (grace 0)."""
        self._kill_all(containers.grace_period(pod))
        self._report()
        try:
            self.host.api.delete_pod(self.namespace, self.name, self.uid)
        except Exception as exc:
            log.warning("pod %s: final delete failed: %s", self.key, exc)
        self._cleanup()

    def _cleanup(self) -> None:
        """Free what the Pod held on this node; its logs stay."""
        self.volumes.remove()
        self.host.release(self)
        self.ip = ""
        logs.mark_deleted(self.dir)
        logs.prune(self.host.settings.state_dir)
