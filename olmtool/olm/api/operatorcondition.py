"""OperatorCondition (v1 served, v2 storage): conditions an operator reports to OLM,
such as Upgradeable=False, which blocks its upgrades."""

from __future__ import annotations

from olmtool.crd import CustomResource, Schema, Version
from olmtool.olm.api.common import CATEGORIES, GROUP, MetaCondition, Opt, OverrideCondition


class OperatorConditionSpecV1(Schema):
    service_accounts: Opt[list[str]] = None
    deployments: Opt[list[str]] = None
    overrides: Opt[list[OverrideCondition]] = None


class OperatorConditionSpec(OperatorConditionSpecV1):
    conditions: Opt[list[MetaCondition]] = None
    """Conditions the operator sets (in v2 they moved from status to spec)."""


class OperatorConditionStatus(Schema):
    conditions: Opt[list[MetaCondition]] = None


operator_condition = CustomResource(
    group=GROUP,
    kind="OperatorCondition",
    short_names=("condition",),
    categories=CATEGORIES,
    description="OperatorCondition is a Custom Resource of type `OperatorCondition` which is "
    "used to convey information to OLM about the state of an operator.",
    versions=(
        Version(name="v1", spec=OperatorConditionSpecV1, status=OperatorConditionStatus),
        Version(name="v2", spec=OperatorConditionSpec, status=OperatorConditionStatus,
                storage=True),
    ),
)  # fmt: skip
