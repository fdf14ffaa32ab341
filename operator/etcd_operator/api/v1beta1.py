"""etcd.olmtool.dev/v1beta1: the storage version.

Every v1beta1 type extends its v1alpha1 counterpart (additions only), so the apiserver
can convert between the versions without a webhook (conversion strategy None).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from etcd_operator.api import v1alpha1
from olmtool.crd import ListType, Quantity, RawObject, Schema


class ResourceRequirements(Schema):
    """Compute resources of each etcd member (like a container's resources)."""

    limits: dict[str, Quantity] = Field(default_factory=dict)
    """Maximum amount of each resource, e.g. {"memory": "512Mi"}."""
    requests: dict[str, Quantity] = Field(default_factory=dict)
    """Amount of each resource the scheduler reserves, e.g. {"cpu": "100m"}."""


class RestoreSource(Schema):
    """A snapshot to bootstrap a new cluster from."""

    claim_name: str
    """PersistentVolumeClaim holding the snapshot (e.g. another cluster's "<name>-backups")."""
    snapshot: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
    """File name of the snapshot in that claim, e.g. "example-final.db"."""


class Toleration(Schema):
    """A taint the members tolerate (like a Pod's toleration)."""

    key: str | None = None
    """The taint key; empty with operator Exists: every taint."""
    operator: Literal["Exists", "Equal"] | None = None
    """Exists (any value) or Equal (the value below; the default)."""
    value: str | None = None
    """The taint value, for operator Equal."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    """The taint effect; empty: every effect."""
    toleration_seconds: int | None = None
    """For NoExecute: how long a member stays on a node once the taint appears."""


class Placement(Schema):
    """Where members run: a subset of a Pod's scheduling fields. Read when a member Pod is
    made: running members move only when they are replaced."""

    node_selector: dict[str, str] = Field(default_factory=dict)
    """Node labels a member's node must have."""
    affinity: RawObject | None = None
    """A Pod affinity (nodeAffinity, podAffinity, podAntiAffinity). Without a
    podAntiAffinity, members prefer nodes that run no other member of the cluster."""
    tolerations: list[Toleration] = Field(default_factory=list)
    """Taints the members tolerate."""
    priority_class_name: str | None = None
    """PriorityClass of the member Pods."""


MiB = 1024 * 1024


class EtcdOptions(Schema):
    """etcd settings every member runs with (etcd's flags of the same names). Changing them
    on a running cluster restarts the members one at a time, followers first, each with its
    data, once the previous one is healthy again. Unset fields keep the operator's defaults
    (in brackets)."""

    quota_backend_bytes: Annotated[int, Field(ge=16 * MiB, le=8 * 1024 * MiB)] | None = None
    """Size at which the database raises the NOSPACE alarm and refuses writes, in bytes
    (16Mi to 8Gi; [95% of storageSize])."""
    auto_compaction_mode: Literal["periodic", "revision"] | None = None
    """Compact the key history by age ("periodic") or by revision count ("revision")
    [periodic]."""
    auto_compaction_retention: (
        Annotated[
            str,
            Field(
                max_length=32,
                pattern=r"^([0-9]+|([0-9]+(\.[0-9]+)?(ms|s|m|h))+)$",
            ),
        ]
        | None
    ) = None
    """History to keep: a duration ("30m", "1h"; a bare number is hours) in periodic mode,
    a number of revisions in revision mode [1h]."""
    snapshot_count: Annotated[int, Field(ge=1000, le=10_000_000)] | None = None
    """Committed transactions between two raft snapshots to disk (1000 to 10000000;
    [10000])."""
    heartbeat_interval_ms: Annotated[int, Field(ge=10, le=5000)] | None = None
    """Milliseconds between the leader's heartbeats (10 to 5000; [100])."""
    election_timeout_ms: Annotated[int, Field(ge=50, le=50000)] | None = None
    """Milliseconds a follower waits for a heartbeat before it calls an election (50 to
    50000, at least 5 heartbeat intervals; [1000])."""


class Maintenance(Schema):
    """Database upkeep the operator does, one member at a time."""

    defragment_above_percent: Annotated[int, Field(ge=0, le=90)] = 50
    """Defragment a member when at least this percent of its database file is free pages
    (and at least 64Mi), one member at a time, followers first; 0: only on request (a new
    value of the annotation etcd.olmtool.dev/defragment-request defragments every member
    with 1Mi or more free)."""


class Recovery(Schema):
    """Disaster recovery: what the operator does when quorum cannot come back by itself."""

    from_latest_backup: bool = False
    """Rebuild the cluster from the newest successful snapshot in the backups volume (taken
    since the EtcdCluster was created) when a majority of the members has lost its data,
    or its node past nodeLossTimeoutSeconds. Keys written after that snapshot are lost.
    Never while enough members keep their data for quorum to return."""
    after_seconds: Annotated[int, Field(ge=0, le=86400)] = 300
    """How long quorum must have been lost that way before the rebuild starts."""


class TLSSecretRefs(Schema):
    """Secrets the user provides, each with tls.crt, tls.key and ca.crt (as cert-manager's
    Certificates write them); the operator reads them and never changes them."""

    server: Annotated[str, Field(min_length=1)]
    """The certificate every member serves clients with (server auth), naming
    *.<name>.<namespace>.svc and <name>-client.<namespace>.svc."""
    peer: Annotated[str, Field(min_length=1)]
    """The certificate members serve each other with and present when they dial a peer
    (server and client auth), naming *.<name>.<namespace>.svc and
    *.<name>.<namespace>.svc.cluster.local (etcd checks a peer's certificate against the
    reverse DNS name of the peer's address)."""
    client: Annotated[str, Field(min_length=1)]
    """The client certificate (client auth) the operator and the backup Jobs present, of
    the CA in the server Secret's ca.crt."""


class TLS(Schema):
    """TLS for clients and peers. Turning it on for a running cluster restarts the members
    one at a time, twice (first each gets its certificates, then each serves TLS); it
    cannot be turned off again."""

    mode: Literal["auto", "secretRefs"] = "auto"
    """auto: the operator makes a CA (Secret <name>-ca), each member's serving and peer
    certificates (<member>-tls) and a client certificate (<name>-client-tls), and renews
    them in the last third of their lifetime; secretRefs: the Secrets below."""
    secret_refs: TLSSecretRefs | None = None
    """The user's Secrets (mode secretRefs)."""
    certificate_lifetime_seconds: Annotated[int, Field(ge=120, le=315_360_000)] = 7_776_000
    """Lifetime of the certificates the operator issues (mode auto; 90 days). The CA lives
    ten years, or longer if this asks for more."""


class EtcdClusterSpec(v1alpha1.EtcdClusterSpec):
    """EtcdClusterSpec is the desired state of an etcd cluster."""

    resources: ResourceRequirements | None = None
    """Compute resources of each member's etcd container."""
    backup_storage_size: v1alpha1.PositiveQuantity = "1Gi"
    """Size of the "<name>-backups" volume that scheduled, on-demand and final snapshots go
    to. The volume is kept when the EtcdCluster is deleted."""
    final_snapshot: bool = True
    """Take a snapshot into the backups volume before the members are removed on deletion."""
    restore: RestoreSource | None = None
    """Bootstrap the cluster from a snapshot instead of empty (read at creation only)."""
    placement: Placement | None = None
    """Where members run (node selector, affinity, tolerations, priority)."""
    node_loss_timeout_seconds: Annotated[int, Field(ge=0)] = 300
    """How long a member's node may stay unreachable (NotReady or Unknown) before the
    member is removed and a new one replaces it on another node, when the others keep
    quorum; 0: never. The member's volume is local to its node, so the new member
    starts empty and catches up from the others."""
    options: EtcdOptions | None = None
    """etcd settings (quota, compaction, snapshots, raft timing), rolled out one member
    at a time."""
    maintenance: Maintenance | None = None
    """Defragmentation (automatic above a threshold, and on request)."""
    recovery: Recovery | None = None
    """Disaster recovery from the newest backup when quorum is lost for good (opt-in)."""
    tls: TLS | None = None
    """TLS for clients and peers (https://), with client certificates required."""


class EtcdMember(v1alpha1.EtcdMember):
    """One member of the etcd cluster as the operator last saw it."""

    learner: bool = False
    """Whether the member is a non-voting learner still catching up."""
    version: str | None = None
    """etcd version the member runs."""
    node: str | None = None
    """Node the member's Pod runs on."""


class BackupStatus(Schema):
    """The most recent backup Job."""

    job: str
    """Name of the Job."""
    snapshot: str
    """File name of the snapshot in the backups volume."""
    succeeded: bool | None = None
    """Whether the Job succeeded (unset while it runs)."""


class DefragmentationStatus(Schema):
    """The most recent defragmentation asked for by annotation."""

    request: str
    """The annotation's value it answered."""
    completion_time: str
    """When every member had been defragmented (RFC 3339)."""


class RecoveryStatus(Schema):
    """The most recent rebuild from a backup."""

    snapshot: str
    """File name of the snapshot the cluster was rebuilt from."""
    time: str
    """When the rebuild started (RFC 3339)."""


class TLSStatus(Schema):
    """The certificates the members serve with."""

    ca_secret: str
    """The Secret holding the CA certificate clients trust (ca.crt)."""
    client_secret: str
    """The Secret with a client certificate (tls.crt, tls.key, ca.crt)."""
    expiry: str | None = None
    """When the first of the members' certificates expires (RFC 3339)."""
    mode: Literal["auto", "secretRefs"] = "auto"
    """The mode in force (TLS stays on if spec.tls is removed)."""
    secret_refs: TLSSecretRefs | None = None
    """The user's Secrets in force (mode secretRefs)."""


class EtcdClusterStatus(v1alpha1.EtcdClusterStatus):
    """EtcdClusterStatus is the observed state of an etcd cluster."""

    members: Annotated[list[EtcdMember], ListType("map", keys=("name",))] = []
    """Members of the cluster."""
    target_version: str | None = None
    """etcd version the operator is rolling the members to."""
    last_backup: BackupStatus | None = None
    """The most recent scheduled, on-demand or final backup."""
    last_defragmentation: DefragmentationStatus | None = None
    """The most recent defragmentation asked for by annotation."""
    quorum_lost_for_good_since: str | None = None
    """Since when a majority of the members has been without its data (or node): quorum
    cannot return by itself (RFC 3339; the start of spec.recovery.afterSeconds)."""
    last_recovery: RecoveryStatus | None = None
    """The most recent rebuild from a backup (spec.recovery)."""
    tls: TLSStatus | None = None
    """The certificates, when spec.tls is set."""
