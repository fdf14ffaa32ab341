"""What the membership planner sees and what it answers (pure data, no I/O): the member
list, each member's health and Pod (:class:`Observed`), and the steps
:func:`etcd_operator.plan.next_step` chooses from."""

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
    db_size: int = 0  # bytes the database file takes
    db_size_in_use: int = 0  # bytes of it in use (the rest: free pages a defrag returns)

    @property
    def free(self) -> int:
        return max(self.db_size - self.db_size_in_use, 0)


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
    config: str = ""  # the digest of the settings it runs with ("": the defaults)
    tls: str = ""  # its TLS stage: "" (plain), "ready" (holds certificates) or "on"

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
    # the digest of the settings the spec asks members to run with, None when the
    # operator refuses them (the members keep what they run)
    config: str | None = ""
    # active alarms: (member id, "NOSPACE" or "CORRUPT")
    alarms: tuple[tuple[int, str], ...] = ()
    # the quota the database may grow to (bytes; 0: not known)
    quota_bytes: int = 0
    # a defragmentation asked for by annotation and not done yet
    defrag_requested: bool = False
    # defragment a member at least this much free (percent of its database; 0: never)
    defrag_percent: int = 0
    # the voting members the last pass saw (read when etcd does not answer a member list)
    last_voters: tuple[str, ...] = ()
    # spec.recovery.afterSeconds when spec.recovery.fromLatestBackup is on, else None
    recovery_after: float | None = None
    # seconds since a majority was found without its data (or node)
    lost_for_good_for: float = 0.0
    # the newest successful snapshot in the backups volume, None when there is none
    snapshot: str | None = None
    # "on" when the spec asks for TLS
    tls: str = ""

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
    """Replace a member's Pod by one running ``version`` (same data); ``secure``: first
    change the peer URL etcd has for it to https (it comes back serving TLS)."""

    member: str
    version: str
    secure: bool = False


@dataclass(frozen=True)
class Defragment(Step):
    """Defragment one member's database (it pauses while its file is rewritten)."""

    member: Member


@dataclass(frozen=True)
class RecoverSpace(Step):
    """A NOSPACE alarm is active (writes are refused): compact the history, defragment
    the member with the most to reclaim, and disarm once every database fits its quota."""


@dataclass(frozen=True)
class RebuildFromBackup(Step):
    """Quorum cannot return: every member goes, and a new seed starts from the snapshot."""

    member: str
    snapshot: str


@dataclass(frozen=True)
class Wait(Step):
    """Nothing safe to do now; look again soon."""

    quorum_lost: bool = False
    # a majority has lost its data (or node): quorum cannot return by itself
    for_good: bool = False


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


def ordinal(name: str) -> int:
    found = _ORDINAL.search(name)
    return int(found.group(1)) if found else -1


def pod_of(observed: Observed, name: str) -> MemberPod:
    """The member's Pod and volume; neither existing reads as a Pod-less, data-less member."""
    return observed.pods.get(name) or MemberPod(name, pod=False, claim=False)
