"""Pure Pod-status logic: restart back-off, restart decisions, phase and conditions, as
kubelet computes them, and the whole ``status`` of a Pod rendered from its containers'
states (:func:`pod_status`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from olmtool.cluster.node.state import CRASH_LOOP, CREATING, ContainerPhase, ContainerState

JSON = dict[str, Any]

BACKOFF_BASE = 10.0
BACKOFF_CAP = 300.0


@dataclass
class Backoff:
    """Kubelet's crash-loop back-off: the first restart is immediate, then ``base``
    seconds, doubling up to ``cap``; a container that ran ``2 * cap`` seconds without
    crashing starts over."""

    base: float = BACKOFF_BASE
    cap: float = BACKOFF_CAP
    current: float = 0.0
    crashes: int = 0

    def next_delay(self, ran_for: float = 0.0) -> float:
        """The delay before the next start, after an exit following ``ran_for`` seconds."""
        if ran_for >= 2 * self.cap:
            self.reset()
        self.crashes += 1
        if self.crashes == 1:
            return 0.0
        self.current = self.base if self.current == 0 else min(self.current * 2, self.cap)
        return self.current

    def reset(self) -> None:
        self.current = 0.0
        self.crashes = 0


def cap_for(base: float) -> float:
    """The back-off cap for a base: 5 minutes for kubelet's 10 s, proportionally less."""
    return min(BACKOFF_CAP, base * (BACKOFF_CAP / BACKOFF_BASE))


def should_restart(restart_policy: str, exit_code: int) -> bool:
    if restart_policy == "Never":
        return False
    if restart_policy == "OnFailure":
        return exit_code != 0
    return True


def should_restart_init(restart_policy: str, exit_code: int) -> bool:
    """Init containers are re-run until they succeed, unless the policy is Never."""
    return exit_code != 0 and restart_policy != "Never"


def will_restart(restart_policy: str, exit_code: int, init: bool) -> bool:
    check = should_restart_init if init else should_restart
    return check(restart_policy, exit_code)


def _terminated(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (status.get("state") or {}).get("terminated")


def _last_terminated(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (status.get("lastState") or {}).get("terminated")


def init_done(init_statuses: Sequence[Mapping[str, Any]], count: int) -> bool:
    done = [s for s in init_statuses if (_terminated(s) or {}).get("exitCode") == 0]
    return len(done) == count


def pod_phase(
    restart_policy: str,
    init_statuses: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    init_count: int | None = None,
) -> str:
    """Kubelet's ``getPhase``: Pending, Running, Succeeded or Failed."""
    policy = restart_policy or "Always"
    init_count = len(init_statuses) if init_count is None else init_count
    if not init_done(init_statuses, init_count):
        for status in init_statuses:
            term = _terminated(status)
            if term and term.get("exitCode", 0) != 0 and policy == "Never":
                return "Failed"
        return "Pending"
    running = waiting = stopped = succeeded = failed = 0
    for status in statuses:
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode", 0) == 0:
                succeeded += 1
            else:
                failed += 1
        elif _last_terminated(status) is not None:
            stopped += 1  # waiting to be restarted
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if policy == "Always":
            return "Running"
        if policy == "OnFailure":
            return "Succeeded" if stopped == succeeded else "Running"
        return "Failed" if failed else "Succeeded"
    return "Pending"


def condition(kind: str, ok: bool, reason: str = "", message: str = "") -> JSON:
    out: JSON = {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def pod_conditions(
    phase: str,
    init_ok: bool,
    statuses: Sequence[Mapping[str, Any]],
    readiness_gates: Sequence[Mapping[str, Any]] = (),
    existing: Sequence[Mapping[str, Any]] = (),
) -> list[JSON]:
    """PodScheduled, Initialized, ContainersReady and Ready (without transition times)."""
    unready = [str(s.get("name")) for s in statuses if not s.get("ready")]
    initialized = (
        condition("Initialized", True)
        if init_ok or phase in ("Succeeded",)
        else condition(
            "Initialized", False, "ContainersNotInitialized", "containers with incomplete status"
        )
    )
    if phase in ("Succeeded", "Failed"):
        containers_ready = condition("ContainersReady", False, "PodCompleted")
        ready = condition("Ready", False, "PodCompleted")
    elif unready:
        message = f"containers with unready status: [{' '.join(unready)}]"
        containers_ready = condition("ContainersReady", False, "ContainersNotReady", message)
        ready = condition("Ready", False, "ContainersNotReady", message)
    else:
        containers_ready = condition("ContainersReady", True)
        ready = condition("Ready", True)
        gates = {str(g.get("conditionType")) for g in readiness_gates}
        if gates:
            present = {str(c.get("type")): c.get("status") for c in existing}
            missing = sorted(g for g in gates if present.get(g) != "True")
            if missing:
                ready = condition(
                    "Ready",
                    False,
                    "ReadinessGatesNotReady",
                    f"corresponding condition of pod readiness gate {missing[0]!r} does not exist.",
                )
    scheduled = condition("PodScheduled", True)
    return [initialized, ready, containers_ready, scheduled]


def with_transition_times(
    conditions: Sequence[JSON], previous: Sequence[Mapping[str, Any]], now: str
) -> list[JSON]:
    """Keep ``lastTransitionTime`` of conditions whose status did not change."""
    before = {str(c.get("type")): c for c in previous}
    out = []
    for cond in conditions:
        old = before.get(cond["type"])
        if (
            old is not None
            and old.get("status") == cond["status"]
            and old.get("lastTransitionTime")
        ):
            cond = {**cond, "lastTransitionTime": old["lastTransitionTime"]}
        else:
            cond = {**cond, "lastTransitionTime": now}
        out.append(cond)
    return out


def exit_code_of(returncode: int) -> int:
    """A shell-style exit code: a process killed by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


# -- rendering ------------------------------------------------------------------------


@dataclass(frozen=True)
class PodContext:
    """What a Pod's status needs besides its containers' states."""

    name: str
    namespace: str
    uid: str
    restart_policy: str = "Always"
    host_ip: str = ""
    pod_ip: str = ""
    start_time: str | None = None
    readiness_gates: Sequence[Mapping[str, Any]] = ()
    # the Pod's conditions as stored: readiness-gate conditions are set by others
    conditions: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    @property
    def ref(self) -> str:
        return f"{self.name}_{self.namespace}({self.uid})"


def container_status(c: ContainerState, pod: PodContext, pod_initialized: bool) -> JSON:
    """One entry of ``containerStatuses`` (or ``initContainerStatuses``)."""
    status: JSON = {
        "name": c.name,
        "image": c.image,
        "imageID": c.image_id,
        "restartCount": c.restart_count,
        "ready": c.running and c.ready,
        "started": c.running and c.started,
        "lastState": {},
    }
    last = c.previous
    if c.phase is ContainerPhase.RUNNING:
        status["state"] = {"running": {"startedAt": c.started_at}}
        status["containerID"] = f"olmtool://{c.pid}"
    elif c.phase is ContainerPhase.TERMINATED and c.termination is not None:
        status["state"] = {"terminated": c.termination.to_json()}
    elif c.termination is not None:  # waiting to be restarted
        status["state"] = {"waiting": _restart_waiting(c, pod)}
        last = c.termination
    else:
        status["state"] = {"waiting": _first_waiting(c, pod_initialized)}
    if c.phase is not ContainerPhase.RUNNING and c.termination and c.termination.container_id:
        status["containerID"] = c.termination.container_id
    if last is not None:
        status["lastState"] = {"terminated": last.to_json()}
    return status


def _restart_waiting(c: ContainerState, pod: PodContext) -> JSON:
    if c.reason not in ("", CREATING, CRASH_LOOP):  # an image or configuration problem
        return {"reason": c.reason, "message": c.message}
    message = (
        f"back-off {max(0.0, c.backoff):g}s restarting failed container={c.name} pod={pod.ref}"
    )
    return {"reason": CRASH_LOOP, "message": message}


def _first_waiting(c: ContainerState, pod_initialized: bool) -> JSON:
    reason = c.reason or CREATING
    if not c.init and not pod_initialized and reason == CREATING:
        reason = "PodInitializing"
    waiting: JSON = {"reason": reason}
    if c.message:
        waiting["message"] = c.message
    return waiting


def pod_status(
    init: Sequence[ContainerState],
    containers: Sequence[ContainerState],
    pod: PodContext,
    *,
    final_phase: str | None,
    previous_conditions: Sequence[Mapping[str, Any]],
    now: str,
) -> JSON:
    """The Pod's ``status`` from its containers' states. ``final_phase`` is a phase the
    Pod reached before (it stays); ``previous_conditions`` are those reported last time
    (their transition times are kept); ``now`` stamps the conditions that changed."""
    init_ok = all(c.succeeded for c in init)
    init_statuses = [container_status(c, pod, False) for c in init]
    statuses = [container_status(c, pod, init_ok) for c in containers]
    phase = final_phase or pod_phase(pod.restart_policy, init_statuses, statuses, len(init))
    conditions = pod_conditions(phase, init_ok, statuses, pod.readiness_gates, pod.conditions)
    status: JSON = {
        "phase": phase,
        "conditions": with_transition_times(conditions, previous_conditions, now),
        "hostIP": pod.host_ip,
        "podIP": pod.pod_ip,
        "podIPs": [{"ip": pod.pod_ip}] if pod.pod_ip else [],
        "startTime": pod.start_time,
        "containerStatuses": statuses,
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    return status


def finished(phase: str) -> bool:
    return phase in ("Succeeded", "Failed")
