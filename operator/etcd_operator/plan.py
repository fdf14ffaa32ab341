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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from etcd_operator.versions import EtcdVersion

_ORDINAL = re.compile(r"-(\d+)$")


@dataclass(frozen=True)
class Member:
    """A member in etcd's member list. ``name`` is the Pod name the operator chose (etcd
    reports an empty name until the member starts, so it is read from the peer URL)."""

    id: int
    name: str
    peer_url: str
    learner: bool = False
    started: bool = True


@dataclass(frozen=True)
class Health:
    """What a member's own endpoint answered (None: it did not answer)."""

    leader_id: int
    raft_index: int
    version: str


@dataclass(frozen=True)
class MemberPod:
    """A member's Pod and data volume as Kubernetes shows them."""

    name: str
    pod: bool = True
    ready: bool = False
    deleting: bool = False
    crash_looping: bool = False
    version: str | None = None
    claim: bool = True
    claim_deleting: bool = False
    node: str | None = None  # where the Pod runs
    # seconds its node has not been Ready (None: Ready, not scheduled, or not known)
    node_lost_for: float | None = None

    @property
    def data_lost(self) -> bool:
        return not self.claim or self.claim_deleting


@dataclass(frozen=True)
class Observed:
    cluster: str
    replicas: int
    version: EtcdVersion
    # None when no member answered MemberList
    members: tuple[Member, ...] | None
    health: Mapping[int, Health] = field(default_factory=dict)
    pods: Mapping[str, MemberPod] = field(default_factory=dict)
    bootstrapped: bool = False
    upgrade_refused: str | None = None
    # why spec.storageSize cannot size a new member's volume (no new volume is requested)
    storage_refused: str | None = None
    # seconds a member's node may stay unreachable before it is replaced (0: never)
    node_loss_timeout: float = 0

    @property
    def voters(self) -> list[Member]:
        return [m for m in self.members or () if not m.learner]

    @property
    def healthy_voters(self) -> list[Member]:
        return [m for m in self.voters if m.id in self.health]

    @property
    def quorum(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def has_quorum(self) -> bool:
        return self.members is not None and len(self.healthy_voters) >= self.quorum

    @property
    def leader_id(self) -> int | None:
        leaders = {h.leader_id for h in self.health.values() if h.leader_id}
        return leaders.pop() if len(leaders) == 1 else None


# -- steps -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One thing to do, and why (the why goes into status and events)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Bootstrap(Step):
    member: str


@dataclass(frozen=True)
class StartPod(Step):
    """Create the Pod (and the volume when it is missing) of an existing member."""

    member: str
    version: str


@dataclass(frozen=True)
class AddLearner(Step):
    member: str


@dataclass(frozen=True)
class Promote(Step):
    member: Member


@dataclass(frozen=True)
class RemoveMember(Step):
    member: Member


@dataclass(frozen=True)
class DeleteLeftovers(Step):
    name: str


@dataclass(frozen=True)
class Roll(Step):
    """Replace a member's Pod by one running ``version`` (same data)."""

    member: str
    version: str


@dataclass(frozen=True)
class Wait(Step):
    """Nothing safe to do now; look again soon."""

    quorum_lost: bool = False


@dataclass(frozen=True)
class Settled(Step):
    """The cluster is what the spec asks for."""


@dataclass(frozen=True)
class Failed(Step):
    """The operator cannot recover the cluster by itself."""


@dataclass(frozen=True)
class Blocked(Step):
    """The next step needs what the spec gets wrong (the message says what): nothing
    happens until the spec changes, and nothing is retried meanwhile."""


def member_name(cluster: str, ordinal: int) -> str:
    return f"{cluster}-{ordinal}"


def ordinal(name: str) -> int:
    found = _ORDINAL.search(name)
    return int(found.group(1)) if found else -1


def name_from_peer_url(url: str) -> str:
    """``http://example-3.example.ns.svc:2380`` -> ``example-3``."""
    host = url.split("://", 1)[-1].split(":", 1)[0]
    return host.split(".", 1)[0]


def next_name(observed: Observed) -> str:
    taken = [ordinal(m.name) for m in observed.members or ()] + [ordinal(n) for n in observed.pods]
    return member_name(observed.cluster, max(taken, default=-1) + 1)


def pod_of(observed: Observed, name: str) -> MemberPod:
    """The member's Pod and volume; neither existing reads as a Pod-less, data-less member."""
    return observed.pods.get(name) or MemberPod(name, pod=False, claim=False)


def next_step(observed: Observed, running_version: str) -> Step:
    """The one next step. ``running_version`` is the version new Pods of existing members
    get: the target when the upgrade is allowed, else what the members run."""
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
    unhealthy = _first_unhealthy(observed)
    if unhealthy is not None:
        return unhealthy
    for step in (_promote(observed), _resize(observed), _roll(observed)):
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
        # fails until it is promoted: its status answer is its health
        if member.id not in observed.health or not (pod.ready or member.learner):
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
    if len(voters) < observed.replicas and not observed.storage_refused:
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
    if observed.upgrade_refused:
        return None
    target = str(observed.version)
    leader = observed.leader_id
    stale = [
        m
        for m in observed.members or ()
        if (pod := observed.pods.get(m.name)) is not None and pod.version != target
    ]
    if not stale:
        return None
    stale.sort(key=lambda m: (m.id == leader, ordinal(m.name)))
    member = stale[0]
    role = "leader" if member.id == leader else "follower"
    return Roll(
        "Upgrading",
        f"rolling {role} {member.name} to etcd {target}",
        member=member.name,
        version=target,
    )
