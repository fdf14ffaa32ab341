"""Operator (v1, cluster-scoped): a view of everything that belongs to one operator."""

from __future__ import annotations

from olmtool.crd import CustomResource, Schema, Version
from olmtool.olm.api.common import (
    CATEGORIES,
    GROUP,
    LabelSelector,
    ObjectReference,
    OLMCondition,
    Opt,
)


class OperatorSpec(Schema):
    """Empty: an Operator is described by its status alone."""


class RichReference(ObjectReference):
    """A component of the operator and its conditions."""

    conditions: Opt[list[OLMCondition]] = None


class Components(Schema):
    label_selector: LabelSelector
    """Selects the operator's components (label operators.coreos.com/<name>)."""
    refs: Opt[list[RichReference]] = None


class OperatorStatus(Schema):
    components: Opt[Components] = None


operator = CustomResource(
    group=GROUP,
    kind="Operator",
    scope="Cluster",
    categories=CATEGORIES,
    description="Operator represents a cluster operator.",
    versions=(Version(name="v1", spec=OperatorSpec, status=OperatorStatus, storage=True),),
)
