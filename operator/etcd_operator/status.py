"""EtcdCluster status from one reconcile pass (pure)."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from etcd_operator import plan_model, tls
from etcd_operator.maintenance import defrag_request
from etcd_operator.refs import ClusterRef
from etcd_operator.versions import parse

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
_STUCK = (plan_model.Failed, plan_model.Blocked)


def phase(
    step: plan_model.Step, invalid: str | None, old_phase: str | None, started: bool = True
) -> str:
    """``started``: whether a member ever ran (a cluster that failed before is still being
    created once its spec is fixed)."""
    was_creating = _creating(old_phase, started)
    if isinstance(step, plan_model.Failed) or (invalid and was_creating):
        return "Failed"
    if was_creating and not isinstance(step, plan_model.Settled):
        return "Creating"
    if isinstance(step, plan_model.Wait) and step.quorum_lost:
        return "Degraded"
    if isinstance(step, plan_model.Blocked):
        return "Degraded"
    if step.reason in _PHASES:
        return _PHASES[step.reason]
    if isinstance(step, plan_model.Wait) and old_phase in ("Scaling", "Upgrading"):
        # a member settling between two steps of a change in progress
        return str(old_phase)
    return "Degraded" if step.reason in _DEGRADED else "Running"


def members(observed: plan_model.Observed, ref: ClusterRef) -> list[JSON]:
    leader = observed.leader_id
    out = []
    for member in sorted(observed.members or (), key=lambda m: plan_model.ordinal(m.name)):
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
    step: plan_model.Step,
    observed: plan_model.Observed,
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
        or isinstance(step, plan_model.Settled)
        or (isinstance(step, plan_model.Wait) and step.quorum_lost)
    )
    healthy = len(observed.healthy_voters)
    # Available once the cluster has reached its size, then for as long as it has quorum
    quorum = observed.has_quorum and not (was_creating and not isinstance(step, plan_model.Settled))
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
    elif isinstance(step, plan_model.Failed):
        degraded = (True, step.reason, step.message)
    elif isinstance(step, plan_model.Wait) and step.quorum_lost:
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


# -- building status ---------------------------------------------------------------------


def with_tls_kept(
    spec: Mapping[str, Any], old: Mapping[str, Any]
) -> tuple[Mapping[str, Any], str | None]:
    """The spec to act on: TLS, once on, stays on (members serving TLS cannot go back to
    plain without a restart of all of them at once), so a spec without ``tls`` keeps the
    one status records, and that is a problem to report."""
    was = old.get("tls")
    if tls.requested(spec) is not None or not isinstance(was, Mapping):
        return spec, None
    kept: JSON = {"mode": was.get("mode") or "auto"}
    if was.get("secretRefs"):
        kept["secretRefs"] = was["secretRefs"]
    return {
        **spec,
        "tls": kept,
    }, "spec.tls cannot be removed once the members serve TLS: it stays on"


def tls_record(spec: Mapping[str, Any]) -> JSON:
    """What status keeps of spec.tls (see :func:`with_tls_kept`)."""
    requested = tls.requested(spec) or {}
    record: JSON = {"mode": requested.get("mode") or "auto"}
    if tls.secret_refs(spec):
        record["secretRefs"] = dict(tls.secret_refs(spec) or {})
    return record


def build_status(
    ref: ClusterRef,
    body: Mapping[str, Any],
    observed: plan_model.Observed,
    invalid: str | None,
    step: plan_model.Step,
    backup: JSON | None,
) -> JSON:
    """``invalid``: what the operator refuses in the spec (the pass's problems), or None."""
    old = body.get("status") or {}
    versions = sorted({m["version"] for m in members(observed, ref) if m["version"]}, key=parse)
    was_creating = creating(old)
    stale = [dict(m, healthy=False, isLeader=False) for m in old.get("members") or []]
    # after a rebuild the old members are no more: the next passes wait for the new seed
    rebuilt = isinstance(step, plan_model.RebuildFromBackup)
    found = [] if rebuilt else members(observed, ref) or stale
    started = bool(found)
    new: JSON = {
        "phase": phase(step, invalid, old.get("phase"), started),
        "members": found,
        "readyMembers": len(observed.health),
        "currentVersion": versions[0] if versions else old.get("currentVersion"),
        "targetVersion": str((body.get("spec") or {}).get("version") or ""),
        "observedGeneration": (body.get("metadata") or {}).get("generation"),
        "conditions": conditions(
            step, observed, invalid, old.get("conditions") or [], was_creating, started
        ),
    }
    if backup:
        new["lastBackup"] = backup
    if isinstance(step, plan_model.Wait) and step.for_good:
        new["quorumLostForGoodSince"] = old.get("quorumLostForGoodSince") or now()
    if isinstance(step, plan_model.RebuildFromBackup):
        new["lastRecovery"] = {"snapshot": step.snapshot, "time": now()}
    elif old.get("lastRecovery"):
        new["lastRecovery"] = old["lastRecovery"]
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    request = defrag_request(annotations, old)
    if request and isinstance(step, plan_model.Settled):
        new["lastDefragmentation"] = {"request": request, "completionTime": now()}
    elif old.get("lastDefragmentation"):
        new["lastDefragmentation"] = old["lastDefragmentation"]
    return new
