"""etcd.olmtool.dev/v1beta1: the storage version.

Every v1beta1 type extends its v1alpha1 counterpart (additions only), so the apiserver
can convert between the versions without a webhook (conversion strategy None).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from etcd_operator.api import v1alpha1
from olmtool.crd import ListType, Quantity, Schema


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


class EtcdMember(v1alpha1.EtcdMember):
    """One member of the etcd cluster as the operator last saw it."""

    learner: bool = False
    """Whether the member is a non-voting learner still catching up."""
    version: str | None = None
    """etcd version the member runs."""


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
