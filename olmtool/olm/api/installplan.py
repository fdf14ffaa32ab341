"""InstallPlan (v1alpha1): the resources one resolution creates, step by step."""

from __future__ import annotations

from datetime import datetime

from olmtool.crd import PrinterColumn, Schema
from olmtool.olm.api.common import (
    ObjectReference,
    OLMCondition,
    Opt,
    olm_kind,
    v1alpha1,
)


class InstallPlanCondition(OLMCondition):
    """Resolved or Installed (real OLM's CRD requires neither type nor status here)."""

    type: Opt[str] = None  # type: ignore[assignment]
    status: Opt[str] = None  # type: ignore[assignment]


class InstallPlanSpec(Schema):
    cluster_service_version_names: list[str]
    approval: str
    """Automatic or Manual."""
    approved: bool
    source: Opt[str] = None
    source_namespace: Opt[str] = None
    generation: Opt[int] = None


class StepResource(Schema):
    """One object to create: its kind, name, manifest and the catalog it came from."""

    group: str
    version: str
    kind: str
    name: str
    source_name: str
    source_namespace: str
    manifest: Opt[str] = None


class Step(Schema):
    resolving: str
    """The CSV this step belongs to."""
    resource: StepResource
    status: str
    """Unknown, NotPresent, Present, Created, NotCreated, WaitingForApi or
    UnsupportedResource."""


class BundleLookup(Schema):
    """A bundle image OLM unpacks before the plan can be built."""

    path: str
    identifier: str
    replaces: str
    catalog_source_ref: ObjectReference
    properties: Opt[str] = None
    conditions: Opt[list[OLMCondition]] = None


class InstallPlanStatus(Schema):
    phase: str
    """"", Planning, RequiresApproval, Installing, Complete or Failed."""
    catalog_sources: list[str]
    conditions: Opt[list[InstallPlanCondition]] = None
    plan: Opt[list[Step]] = None
    bundle_lookups: Opt[list[BundleLookup]] = None
    attenuated_service_account_ref: Opt[ObjectReference] = None
    start_time: Opt[datetime] = None
    message: Opt[str] = None


install_plan = olm_kind(
    "InstallPlan",
    short_names=("ip",),
    description="InstallPlan defines the installation of a set of operators.",
    versions=v1alpha1(
        InstallPlanSpec,
        InstallPlanStatus,
        PrinterColumn(name="CSV", json_path=".spec.clusterServiceVersionNames[0]",
                      description="The first CSV in the list of clusterServiceVersionNames"),
        PrinterColumn(name="Approval", json_path=".spec.approval",
                      description="The approval mode"),
        PrinterColumn(name="Approved", json_path=".spec.approved", type="boolean"),
    ),
)  # fmt: skip
