"""Subscription (v1alpha1): keeps an operator package installed and up to date."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from olmtool.crd import PrinterColumn, RawObject, Schema
from olmtool.olm.api.common import (
    LabelSelector,
    ObjectReference,
    Opt,
    olm_kind,
    v1alpha1,
)


class SubscriptionConfig(Schema):
    """Overrides OLM applies to the operator's Deployments.

    The core/v1 types (env, volumes, tolerations, resources...) are kept whole: OLM copies
    them into pod templates, where the Deployment API validates them.
    """

    selector: Opt[LabelSelector] = None
    node_selector: Opt[dict[str, str]] = None
    tolerations: Opt[list[RawObject]] = None
    resources: Opt[RawObject] = None
    env_from: Opt[list[RawObject]] = None
    env: Opt[list[RawObject]] = None
    volumes: Opt[list[RawObject]] = None
    volume_mounts: Opt[list[RawObject]] = None
    # Not in OLM v0.18.3's CRD; newer OLMs read them (harmless where unused).
    affinity: Opt[RawObject] = None
    annotations: Opt[dict[str, str]] = None


class SubscriptionSpec(Schema):
    """Which package to install, from which catalog and channel."""

    source: str
    """Name of the CatalogSource."""
    source_namespace: str
    name: str
    """Name of the package."""
    channel: Opt[str] = None
    starting_csv: Opt[str] = Field(default=None, alias="startingCSV")
    install_plan_approval: Opt[str] = None
    """Automatic or Manual."""
    config: Opt[SubscriptionConfig] = None


class SubscriptionCondition(Schema):
    type: str
    status: str
    reason: Opt[str] = None
    message: Opt[str] = None
    last_heartbeat_time: Opt[datetime] = None
    last_transition_time: Opt[datetime] = None


class SubscriptionCatalogHealth(Schema):
    catalog_source_ref: ObjectReference
    healthy: bool
    last_updated: datetime


class InstallPlanReference(Schema):
    """The deprecated `status.installplan` reference (OLM still writes it)."""

    api_version: str
    kind: str
    name: str
    uuid: str


class SubscriptionStatus(Schema):
    last_updated: datetime
    state: Opt[str] = None
    """"", UpgradePending, AtLatestKnown or UpgradeFailed."""
    reason: Opt[str] = None
    current_csv: Opt[str] = Field(default=None, alias="currentCSV")
    installed_csv: Opt[str] = Field(default=None, alias="installedCSV")
    install_plan_ref: Opt[ObjectReference] = None
    installplan: Opt[InstallPlanReference] = None
    install_plan_generation: Opt[int] = None
    catalog_health: Opt[list[SubscriptionCatalogHealth]] = None
    conditions: Opt[list[SubscriptionCondition]] = None


subscription = olm_kind(
    "Subscription",
    short_names=("sub", "subs"),
    description="Subscription keeps operators up to date by tracking changes to Catalogs.",
    versions=v1alpha1(
        SubscriptionSpec,
        SubscriptionStatus,
        PrinterColumn(name="Package", json_path=".spec.name",
                      description="The package subscribed to"),
        PrinterColumn(name="Source", json_path=".spec.source",
                      description="The catalog source for the specified package"),
        PrinterColumn(name="Channel", json_path=".spec.channel",
                      description="The channel of updates to subscribe to"),
    ),
)  # fmt: skip
