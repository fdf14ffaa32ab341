"""etcd.olmtool.dev/v1beta1: the storage version.

Every v1beta1 type extends its v1alpha1 counterpart (additions only), so the apiserver
can convert between the versions without a webhook (conversion strategy None).
"""

from __future__ import annotations

from pydantic import Field

from etcd_operator.api import v1alpha1
from olmtool.crd import Quantity, Schema


class ResourceRequirements(Schema):
    """Compute resources of each etcd member (like a container's resources)."""

    limits: dict[str, Quantity] = Field(default_factory=dict)
    """Maximum amount of each resource, e.g. {"memory": "512Mi"}."""
    requests: dict[str, Quantity] = Field(default_factory=dict)
    """Amount of each resource the scheduler reserves, e.g. {"cpu": "100m"}."""


class EtcdClusterSpec(v1alpha1.EtcdClusterSpec):
    """EtcdClusterSpec is the desired state of an etcd cluster."""

    resources: ResourceRequirements | None = None
    """Compute resources of each member's etcd container."""


class EtcdClusterStatus(v1alpha1.EtcdClusterStatus):
    """EtcdClusterStatus is the observed state of an etcd cluster."""
