"""etcd.olmtool.dev/v1alpha1: the first EtcdCluster API (deprecated, served for old clients)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from olmtool.crd import Condition, ListType, Marker, Schema
from olmtool.crd.markers import IntOrStringSchema

ETCD_VERSION_PATTERN = r"^3\.[45]\.[0-9]+$"
# Five cron fields (numbers, names, ranges, steps, lists) or a predefined @schedule.
_CRON_FIELD = (
    r"(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*"
)
CRON_PATTERN = rf"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|({_CRON_FIELD}\s+){{4}}{_CRON_FIELD})$"

# A Kubernetes quantity greater than zero: the quantity grammar (olmtool.crd.Quantity's
# pattern) without a minus sign, with a non-zero digit in the number, before or after the
# point (RE2 has no lookahead to say "not all zeros"), and an integer exponent (as the
# apiserver's quantity parser requires). 1Gi, 500Mi, 1.5Gi, 0.5Gi, 2G, 1e9 and 1073741824
# match; 0, 0Gi, 0.0, -1Gi, 1e1.5 and abc do not.
POSITIVE_QUANTITY_PATTERN = (
    r"^\+?(([0-9]*[1-9][0-9]*(\.[0-9]*)?)|([0-9]*\.[0-9]*[1-9][0-9]*))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]+))?$"
)


@dataclass(frozen=True)
class _AtLeastOne(Marker):
    """``minimum: 1`` on an int-or-string node: the integer form of a positive quantity
    (the pattern only applies to the string form)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minimum"] = 1


PositiveQuantity = Annotated[
    Annotated[int, Field(ge=1)]
    | Annotated[str, StringConstraints(pattern=POSITIVE_QUANTITY_PATTERN)],
    IntOrStringSchema(pattern=POSITIVE_QUANTITY_PATTERN),
    _AtLeastOne(),
]
"""A Kubernetes quantity greater than zero, such as a volume size (``1Gi`` or ``1073741824``)."""

Phase = Literal["Pending", "Creating", "Running", "Scaling", "Upgrading", "Degraded", "Failed"]


class EtcdClusterSpec(Schema):
    """EtcdClusterSpec is the desired state of an etcd cluster."""

    replicas: Literal[1, 3, 5, 7] = 3
    """Number of etcd members. Odd, so that a majority (quorum) always exists: 1, 3, 5 or 7."""
    version: Annotated[str, Field(pattern=ETCD_VERSION_PATTERN)] = "3.5.1"
    """etcd version to run (3.4.x or 3.5.x). Changing it performs a rolling upgrade."""
    storage_size: PositiveQuantity = "1Gi"
    """Size of each member's persistent volume, e.g. 1Gi."""
    backup_schedule: Annotated[str, Field(pattern=CRON_PATTERN)] | None = None
    """Cron schedule for snapshots (e.g. "0 */6 * * *"); no backups when unset."""


class EtcdMember(Schema):
    """One member of the etcd cluster as the operator last saw it."""

    name: str
    """Member name (the Pod name)."""
    id: str | None = None
    """etcd member ID in hexadecimal."""
    peer_url: str | None = None
    """URL other members use to reach this member."""
    client_url: str | None = None
    """URL clients use to reach this member."""
    healthy: bool = False
    """Whether the member answered its last health check."""
    is_leader: bool = False
    """Whether the member was the Raft leader at the last check."""


class EtcdClusterStatus(Schema):
    """EtcdClusterStatus is the observed state of an etcd cluster."""

    phase: Phase | None = None
    """Coarse summary of the cluster's lifecycle."""
    conditions: Annotated[list[Condition], ListType("map", keys=("type",))] = []
    """Available, Progressing and Degraded conditions, following Kubernetes conventions."""
    members: Annotated[list[EtcdMember], ListType("map", keys=("name",))] = []
    """Members of the cluster."""
    current_version: str | None = None
    """etcd version all members run (during an upgrade, the oldest)."""
    ready_members: Annotated[int, Field(ge=0)] = 0
    """Number of healthy members."""
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    """The .metadata.generation the status describes."""
