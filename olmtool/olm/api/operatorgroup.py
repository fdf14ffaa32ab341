"""OperatorGroup (v1 storage, v1alpha2 served): the namespaces an operator serves."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from olmtool.crd import CustomResource, ListType, Schema, Version
from olmtool.olm.api.common import CATEGORIES, GROUP, LabelSelector, ObjectReference, Opt


class UpgradeStrategy(Schema):
    """Not in OLM v0.18.3's CRD (newer OLMs read it): Default or
    TechPreviewUnsafeFailForward."""

    name: Opt[str] = None


class OperatorGroupSpecV1Alpha2(Schema):
    target_namespaces: Opt[list[str]] = None
    """Namespaces to serve; wins over selector."""
    selector: Opt[LabelSelector] = None
    """Namespaces to serve by label; empty (and no targetNamespaces) means all."""
    service_account_name: Opt[str] = None
    static_provided_apis: Opt[bool] = None


class OperatorGroupStatusV1Alpha2(Schema):
    last_updated: datetime
    namespaces: Opt[list[str]] = None
    """The resolved target namespaces ([""] is all namespaces)."""
    service_account_ref: Opt[ObjectReference] = None


class OperatorGroupSpec(OperatorGroupSpecV1Alpha2):
    target_namespaces: Opt[Annotated[list[str], ListType("set")]] = None
    """Namespaces to serve; wins over selector."""
    upgrade_strategy: Opt[UpgradeStrategy] = None


class OperatorGroupStatus(OperatorGroupStatusV1Alpha2):
    namespaces: Opt[Annotated[list[str], ListType("set")]] = None
    """The resolved target namespaces ([""] is all namespaces)."""


operator_group = CustomResource(
    group=GROUP,
    kind="OperatorGroup",
    short_names=("og",),
    categories=CATEGORIES,
    description="OperatorGroup is the unit of multitenancy for OLM managed operators.",
    versions=(
        Version(name="v1", spec=OperatorGroupSpec, status=OperatorGroupStatus, storage=True),
        Version(name="v1alpha2", spec=OperatorGroupSpecV1Alpha2, status=OperatorGroupStatusV1Alpha2),
    ),
)  # fmt: skip
