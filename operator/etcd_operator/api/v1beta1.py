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


class EtcdClusterStatus(v1alpha1.EtcdClusterStatus):
    """EtcdClusterStatus is the observed state of an etcd cluster."""

    members: Annotated[list[EtcdMember], ListType("map", keys=("name",))] = []
    """Members of the cluster."""
    target_version: str | None = None
    """etcd version the operator is rolling the members to."""
    last_backup: BackupStatus | None = None
    """The most recent scheduled, on-demand or final backup."""
