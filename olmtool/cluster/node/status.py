"""Pure Pod-status logic: restart back-off, restart decisions, phase and conditions, as
kubelet computes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
