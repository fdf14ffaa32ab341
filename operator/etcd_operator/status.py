"""EtcdCluster status from one reconcile pass (pure)."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from etcd_operator import plan
from etcd_operator.resources import ClusterRef

JSON = dict[str, Any]

_PHASES = {
    "Creating": "Creating",
    "ScalingUp": "Scaling",
    "ScalingDown": "Scaling",
    "AddingMember": "Scaling",
    "Upgrading": "Upgrading",
    "Reconfiguring": "Upgrading",  # a rolling restart, as an upgrade is
    "EnablingTLS": "Upgrading",
    "Available": "Running",
}


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _creating(old_phase: str | None, started: bool) -> bool:
    return old_phase in (None, "", "Pending", "Creating") or (old_phase == "Failed" and not started)


def creating(old: Mapping[str, Any]) -> bool:
    """Whether the cluster has never yet reached its size (phase Creating or unset), or
    failed before any member ever ran (an invalid spec: fixed, it is created as usual).
    A member ran once etcd listed members: status keeps the last list it saw."""
    return _creating(old.get("phase"), bool(old.get("members")))


_DEGRADED = (
    "ReplacingMember",
    "Recovering",
    "MemberUnhealthy",
    "Unreachable",
    "RemovingLeftovers",
    "NoSpace",
    "RestoringFromBackup",
)
# Steps after which the operator does nothing until something changes.
_STUCK = (plan.Failed, plan.Blocked)


def phase(step: plan.Step, invalid: str | None, old_phase: str | None, started: bool = True) -> str:
    """``started``: whether a member ever ran (a cluster that failed before is still being
    created once its spec is fixed)."""
    was_creating = _creating(old_phase, started)
    if isinstance(step, plan.Failed) or (invalid and was_creating):
        return "Failed"
    if was_creating and not isinstance(step, plan.Settled):
        return "Creating"
    if isinstance(step, plan.Wait) and step.quorum_lost:
        return "Degraded"
    if isinstance(step, plan.Blocked):
        return "Degraded"
    if step.reason in _PHASES:
        return _PHASES[step.reason]
    if isinstance(step, plan.Wait) and old_phase in ("Scaling", "Upgrading"):
        # a member settling between two steps of a change in progress
        return str(old_phase)
    return "Degraded" if step.reason in _DEGRADED else "Running"


def members(observed: plan.Observed, ref: ClusterRef) -> list[JSON]:
    leader = observed.leader_id
    out = []
    for member in sorted(observed.members or (), key=lambda m: plan.ordinal(m.name)):
        health = observed.health.get(member.id)
        pod = observed.pods.get(member.name)
        out.append(
            {
                "name": member.name,
                "id": f"{member.id:x}",
                "peerURL": member.peer_url,
                "clientURL": ref.member_client_url(
                    member.name, member.peer_url.startswith("https://")
                ),
                "healthy": health is not None,
                "isLeader": member.id == leader,
                "learner": member.learner,
                "version": (health.version if health else None) or (pod.version if pod else None),
                "node": pod.node if pod else None,
            }
        )
    return out


def condition(
    kind: str, status: bool, reason: str, message: str, previous: Sequence[Mapping[str, Any]]
) -> JSON:
    value = "True" if status else "False"
    old = next((c for c in previous if c.get("type") == kind), None)
    since = old.get("lastTransitionTime") if old and old.get("status") == value else None
    return {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since or now(),
    }


def conditions(
    step: plan.Step,
    observed: plan.Observed,
    invalid: str | None,
    previous: Sequence[Mapping[str, Any]],
    was_creating: bool,
    started: bool = True,
) -> list[JSON]:
    """``started``: whether a member ever ran. A cluster none of whose members ever ran has
    no quorum to lose: it is ``Creating`` while the operator creates it, ``NotStarted``
    when it cannot (an invalid spec)."""
    stuck = isinstance(step, _STUCK)
    settled = (
        stuck
        or isinstance(step, plan.Settled)
        or (isinstance(step, plan.Wait) and step.quorum_lost)
    )
    healthy = len(observed.healthy_voters)
    # Available once the cluster has reached its size, then for as long as it has quorum
    quorum = observed.has_quorum and not (was_creating and not isinstance(step, plan.Settled))
    if quorum:
        available = ("QuorumAvailable", f"{healthy} of {len(observed.voters)} members healthy")
    elif not started:
        available = ("NotStarted" if stuck else "Creating", step.message)
    elif was_creating:
        available = ("Creating", step.message)
    else:
        available = ("QuorumLost", step.message)
    degraded: tuple[bool, str, str]
    if invalid:
        degraded = (True, "InvalidSpec", invalid)
    elif isinstance(step, plan.Failed):
        degraded = (True, step.reason, step.message)
    elif isinstance(step, plan.Wait) and step.quorum_lost:
        degraded = (True, "QuorumLost", step.message)
    elif step.reason in _DEGRADED and not was_creating:
        degraded = (True, step.reason, step.message)
    else:
        degraded = (False, "AsExpected", "all members healthy" if quorum else step.message)
    return [
        condition("Available", quorum, *available, previous),
        condition(
            "Progressing",
            not settled,
            step.reason if not settled or stuck else "Settled",
            step.message,
            previous,
        ),
        condition("Degraded", *degraded, previous),
    ]


def unreported(
    problems: Sequence[str],
    previous: Sequence[Mapping[str, Any]],
    reported: Collection[str] = (),
) -> list[str]:
    """The spec problems to post a Warning event for, once each: not already found by the
    previous pass (``reported``) nor already in the ``InvalidSpec`` condition the status
    carries (written before an operator restart, say)."""
    said = next(
        (
            str(c.get("message") or "")
            for c in previous
            if c.get("type") == "Degraded" and c.get("reason") == "InvalidSpec"
        ),
        "",
    )
    return [p for p in dict.fromkeys(problems) if p not in reported and p not in said]
