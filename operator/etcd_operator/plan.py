"""The membership planner: from what is observed to the one next step (pure, no I/O).

Every pass of the reconciler observes etcd's member list, each member's health, the
member Pods and their volumes, and asks :func:`next_step` for exactly one step. Steps are
ordered so that the cluster never loses quorum through the operator:

1. pods are (re)created for members that have lost theirs (a restart keeps the data);
2. a member whose data is gone, or whose node has been unreachable longer than
   ``spec.nodeLossTimeoutSeconds`` (its volume is that node's), is removed from etcd
   before anything else changes, when the others keep quorum;
3. Pods and volumes of names that are not members (left by an interrupted removal) go;
4. with quorum lost or any member unhealthy, nothing else happens (status says why);
5. a caught-up learner is promoted; then one member is added (as a learner) or removed,
   or one member is rolled to the target version, followers first, the leader last.

What the spec asks for and the operator refuses (an unknown or downgraded version, a
volume size that is not a positive quantity) is left undone while the rest goes on; a
cluster that a refused volume size keeps from a member it needs is :class:`Blocked`, and
one that has no member yet :class:`Failed`.

Because the member list is the truth, an operator killed between an etcd call and the
Kubernetes change that follows it finds the difference on its next pass and finishes it.
"""

from __future__ import annotations

from etcd_operator.plan_maintenance import defragment, recover_space
from etcd_operator.plan_model import (
    AddLearner,
    Blocked,
    Bootstrap,
    Defragment,
    DeleteLeftovers,
    Failed,
    Health,
    Member,
    MemberPod,
    Observed,
    Promote,
    RebuildFromBackup,
    RecoverSpace,
    RemoveMember,
    Roll,
    Settled,
    StartPod,
    Step,
    Wait,
    ordinal,
    pod_of,
)
from etcd_operator.plan_tls import tls_migrating, tls_next

# The planner's face: the data it reads and the steps it answers with are defined in
# plan_model (plan_tls and plan_maintenance use them too) and importable from here.
__all__ = [
    "AddLearner",
    "Blocked",
    "Bootstrap",
    "Defragment",
    "DeleteLeftovers",
    "Failed",
    "Health",
    "Member",
    "MemberPod",
    "Observed",
    "Promote",
    "RebuildFromBackup",
    "RecoverSpace",
    "RemoveMember",
    "Roll",
    "Settled",
    "StartPod",
    "Step",
    "Wait",
    "member_name",
    "name_from_peer_url",
    "next_name",
    "next_step",
    "node_gone",
    "ordinal",
    "pod_of",
]


def member_name(cluster: str, ordinal: int) -> str:
    return f"{cluster}-{ordinal}"


def name_from_peer_url(url: str) -> str:
    """``http://example-3.example.ns.svc:2380`` -> ``example-3``."""
    host = url.split("://", 1)[-1].split(":", 1)[0]
    return host.split(".", 1)[0]


def next_name(observed: Observed) -> str:
    names = [m.name for m in observed.members or ()] + [*observed.pods, *observed.last_voters]
    taken = [ordinal(n) for n in names]
    return member_name(observed.cluster, max(taken, default=-1) + 1)


def next_step(observed: Observed, running_version: str) -> Step:
    """The one next step. ``running_version`` is the version new Pods of existing members
    get: the target when the upgrade is allowed, else what the members run."""
    gone = _quorum_gone(observed)
    if gone is not None:
        return gone
    if observed.members is None:
        return _without_member_list(observed, running_version)
    for step in (
        _restart_members(observed, running_version),
        _replace_lost_member(observed),
        _delete_leftovers(observed),
    ):
        if step is not None:
            return step
    if not observed.has_quorum:
        healthy, quorum = len(observed.healthy_voters), observed.quorum
        return Wait(
            "QuorumLost",
            f"{healthy} of {len(observed.voters)} voting members healthy, {quorum} needed; "
            "no membership change until quorum is back",
            quorum_lost=True,
        )
    for step in (recover_space(observed), _first_unhealthy(observed)):
        if step is not None:
            return step
    for step in (
        _promote(observed),
        _resize(observed),
        _roll(observed),
        defragment(observed),
    ):
        if step is not None:
            return step
    voters = len(observed.voters)
    if observed.storage_refused and voters < observed.replicas:
        return Blocked(
            "InvalidSpec",
            f"{voters} of {observed.replicas} members; no new member until the spec is "
            f"fixed: {observed.storage_refused}",
        )
    return Settled("Available", f"{voters} members healthy")


def _gone(observed: Observed, name: str) -> bool:
    """Whether a member cannot come back by itself: its data, or its node past the
    timeout, is gone (a member whose Pod is down but whose data is there may return)."""
    pod = pod_of(observed, name)
    return pod.data_lost or node_gone(observed, pod)


def _quorum_gone(observed: Observed) -> Step | None:
    """When a majority of the voting members is gone for good, quorum cannot return by
    itself: the cluster is rebuilt from the newest backup after spec.recovery.afterSeconds
    when the spec allows it; else status says how to do it by hand."""
    if observed.members is not None:
        voters = [m.name for m in observed.voters]
    else:
        voters = list(observed.last_voters)
    if not voters or not observed.bootstrapped:
        return None
    gone = sorted((n for n in voters if _gone(observed, n)), key=ordinal)
    left = len(voters) - len(gone)
    if left >= len(voters) // 2 + 1:
        return None
    what = (
        f"{len(gone)} of {len(voters)} members lost their data or node ({', '.join(gone)}): "
        "quorum cannot return by itself"
    )
    snapshot = observed.snapshot
    if observed.recovery_after is not None:
        if snapshot is None:
            return Wait(
                "QuorumLost",
                f"{what}, and no backup of this cluster has succeeded to rebuild it from",
                quorum_lost=True,
                for_good=True,
            )
        wait = observed.recovery_after - observed.lost_for_good_for
        if wait <= 0:
            return RebuildFromBackup(
                "RestoringFromBackup",
                f"{what}: rebuilding the cluster from snapshot {snapshot} (spec.recovery)",
                member=next_name(observed),
                snapshot=snapshot,
            )
        return Wait(
            "QuorumLost",
            f"{what}: rebuilding from snapshot {snapshot} once that has lasted "
            f"{observed.recovery_after:.0f}s (spec.recovery.afterSeconds)",
            quorum_lost=True,
            for_good=True,
        )
    by_hand = (
        "to recover, set spec.recovery.fromLatestBackup: true, or create a new EtcdCluster "
        f"with spec.restore: {{claimName: {observed.cluster}-backups, snapshot: "
        f"{snapshot or '<a snapshot file in that volume>'}}}"
    )
    if left == 0:
        return Failed("DataLost", f"{what}; {by_hand}")
    return Wait("QuorumLost", f"{what}; {by_hand}", quorum_lost=True, for_good=True)


def _without_member_list(observed: Observed, running_version: str) -> Step:
    if not observed.pods:
        if observed.bootstrapped:
            return Failed(
                "DataLost",
                "every member and its data are gone; restore the cluster from a snapshot",
            )
        if observed.storage_refused:
            return Failed("InvalidSpec", observed.storage_refused)
        seed = member_name(observed.cluster, 0)
        return Bootstrap("Creating", f"bootstrapping the first member {seed}", member=seed)
    for pod in sorted(observed.pods.values(), key=lambda p: ordinal(p.name)):
        if not pod.pod and not pod.data_lost and observed.bootstrapped:
            return StartPod(
                "Recovering",
                f"restarting member {pod.name} with its data",
                member=pod.name,
                version=running_version,
            )
    return Wait("Unreachable", "no member answers yet")


def _restart_members(observed: Observed, running_version: str) -> Step | None:
    for member in sorted(observed.members or (), key=lambda m: ordinal(m.name)):
        pod = pod_of(observed, member.name)
        if pod.pod or (pod.data_lost and member.started):
            continue
        # no Pod: a member whose Pod was deleted (its volume has the data), or one added
        # to etcd by a pass that stopped before creating its Pod (it never started)
        if not pod.claim and observed.storage_refused:
            return Blocked(
                "InvalidSpec",
                f"member {member.name} needs a new volume: {observed.storage_refused}",
            )
        return StartPod(
            "Recovering",
            f"starting member {member.name}",
            member=member.name,
            version=running_version,
        )
    return None


def node_gone(observed: Observed, pod: MemberPod) -> bool:
    """Whether the Pod's node has been unreachable past the timeout."""
    lost_for, timeout = pod.node_lost_for, observed.node_loss_timeout
    return timeout > 0 and lost_for is not None and lost_for >= timeout


def _replace_lost_member(observed: Observed) -> Step | None:
    for member in observed.members or ():
        pod = pod_of(observed, member.name)
        gone = node_gone(observed, pod)
        lost = (pod.data_lost and member.started) or pod.crash_looping or gone
        if not lost:
            continue
        if pod.data_lost:
            what = "lost its data"
        elif gone:
            what = f"is on node {pod.node}, unreachable for {pod.node_lost_for:.0f}s"
        else:
            what = "keeps failing"
        others = [m for m in observed.healthy_voters if m.id != member.id]
        remaining = len(observed.voters) - (0 if member.learner else 1)
        if remaining == 0:
            return Failed(
                "DataLost", f"the only member {member.name} {what}; restore from a snapshot"
            )
        if len(others) >= remaining // 2 + 1:
            return RemoveMember(
                "ReplacingMember",
                f"member {member.name} {what}: removing it, a new member replaces it",
                member=member,
            )
        return Wait(
            "QuorumLost",
            f"member {member.name} {what}, but removing it would lose quorum",
            quorum_lost=True,
        )
    return None


def _delete_leftovers(observed: Observed) -> Step | None:
    names = {m.name for m in observed.members or ()}
    for name in sorted(observed.pods, key=ordinal):
        if name not in names:
            return DeleteLeftovers(
                "RemovingLeftovers",
                f"{name} is not a member: deleting its Pod and volume",
                name=name,
            )
    return None


def _first_unhealthy(observed: Observed) -> Step | None:
    for member in sorted(observed.members or (), key=lambda m: ordinal(m.name)):
        pod = pod_of(observed, member.name)
        if member.learner and member.id not in observed.health:
            return Wait("AddingMember", f"learner {member.name} is starting")
        # a learner serves no linearizable reads, so its /health (the readiness probe)
        # fails until it is promoted, and an alarm fails every member's: its status answer
        # is its health
        if member.id not in observed.health or not (pod.ready or member.learner or observed.alarms):
            return Wait("MemberUnhealthy", f"waiting for member {member.name} to become healthy")
    return None


def _promote(observed: Observed) -> Step | None:
    for member in observed.members or ():
        if member.learner:
            return Promote(
                "AddingMember", f"promoting learner {member.name} to voting member", member=member
            )
    return None


def _resize(observed: Observed) -> Step | None:
    voters = observed.voters
    # a new member serves TLS: it waits until every member can dial it
    growing = not observed.storage_refused and not tls_migrating(observed)
    if len(voters) < observed.replicas and growing:
        name = next_name(observed)
        return AddLearner(
            "ScalingUp",
            f"adding member {name} as a learner ({len(voters)} of {observed.replicas})",
            member=name,
        )
    if len(voters) > observed.replicas:
        leader = observed.leader_id
        # the newest follower goes first; the leader only when it is the last choice
        candidates = sorted(voters, key=lambda m: (m.id == leader, -ordinal(m.name)))
        victim = candidates[0]
        return RemoveMember(
            "ScalingDown",
            f"removing member {victim.name} ({len(voters)} of {observed.replicas})",
            member=victim,
        )
    return None


def _roll(observed: Observed) -> Step | None:
    """One member whose Pod runs another version, other settings or another TLS stage
    than the spec asks for is restarted (the next pass starts it again with all three):
    followers first, the leader last."""
    target = str(observed.version)
    leader = observed.leader_id

    def stale(pod: MemberPod) -> tuple[bool, bool, str | None]:
        version = not observed.upgrade_refused and pod.version != target
        config = observed.config is not None and pod.config != observed.config
        return version, config, tls_next(observed, pod)

    rolling = [
        (m, *stale(pod))
        for m in observed.members or ()
        if (pod := observed.pods.get(m.name)) is not None and any(stale(pod))
    ]
    if not rolling:
        return None
    rolling.sort(key=lambda r: (r[0].id == leader, ordinal(r[0].name)))
    member, version, _, tls = rolling[0]
    role = "leader" if member.id == leader else "follower"
    running = pod_of(observed, member.name).version or target
    if version:
        return Roll(
            "Upgrading",
            f"rolling {role} {member.name} to etcd {target}",
            member=member.name,
            version=target,
        )
    if tls == "ready":
        return Roll(
            "EnablingTLS",
            f"restarting {role} {member.name} with its certificates (TLS, step 1 of 2)",
            member=member.name,
            version=running,
        )
    if tls == "on":
        return Roll(
            "EnablingTLS",
            f"restarting {role} {member.name} to serve TLS only (TLS, step 2 of 2)",
            member=member.name,
            version=running,
            secure=True,
        )
    return Roll(
        "Reconfiguring",
        f"restarting {role} {member.name} with the new spec.options",
        member=member.name,
        version=running,
    )
