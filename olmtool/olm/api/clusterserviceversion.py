"""ClusterServiceVersion (v1alpha1): one version of an operator and how to run it.

The install strategy's Deployment specs are kept whole (preserve-unknown-fields): OLM
creates Deployments from them and the Deployment API validates them there. Everything
else OLM reads or writes is typed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from olmtool.crd import IntOrString, PrinterColumn, RawObject, Schema
from olmtool.olm.api.common import LabelSelector, Opt, olm_kind, v1alpha1


class Descriptor(Schema):
    """A spec, status or action descriptor (UI hints for one field of a CR)."""

    path: str
    display_name: Opt[str] = None
    description: Opt[str] = None
    x_descriptors: Opt[list[str]] = Field(default=None, alias="x-descriptors")
    value: Opt[Annotated[str, Field(json_schema_extra={"format": "byte"})]] = None


class APIResourceReference(Schema):
    name: str
    kind: str
    version: str


class _Described(Schema):
    """What the console shows about an API: names, the resources it creates, descriptors."""

    display_name: Opt[str] = None
    description: Opt[str] = None
    resources: Opt[list[APIResourceReference]] = None
    spec_descriptors: Opt[list[Descriptor]] = None
    status_descriptors: Opt[list[Descriptor]] = None
    action_descriptors: Opt[list[Descriptor]] = None


class CRDDescription(_Described):
    """A CRD the operator owns or requires."""

    name: str
    version: str
    kind: str


class CustomResourceDefinitions(Schema):
    owned: Opt[list[CRDDescription]] = None
    required: Opt[list[CRDDescription]] = None


class APIServiceDescription(_Described):
    """An aggregated API the operator serves or requires."""

    name: str
    group: str
    version: str
    kind: str
    deployment_name: Opt[str] = None
    container_port: Opt[int] = None


class APIServiceDefinitions(Schema):
    owned: Opt[list[APIServiceDescription]] = None
    required: Opt[list[APIServiceDescription]] = None


class PolicyRule(Schema):
    """An RBAC rule (rbac/v1 PolicyRule)."""

    verbs: list[str]
    api_groups: Opt[list[str]] = None
    resources: Opt[list[str]] = None
    resource_names: Opt[list[str]] = None
    non_resource_urls: Opt[list[str]] = Field(default=None, alias="nonResourceURLs")


class StrategyDeploymentPermissions(Schema):
    service_account_name: str
    rules: list[PolicyRule]


class StrategyDeploymentSpec(Schema):
    name: str
    spec: RawObject
    """An apps/v1 DeploymentSpec."""
    label: Opt[dict[str, str]] = None


class StrategyDetailsDeployment(Schema):
    deployments: list[StrategyDeploymentSpec]
    permissions: Opt[list[StrategyDeploymentPermissions]] = None
    cluster_permissions: Opt[list[StrategyDeploymentPermissions]] = None


class NamedInstallStrategy(Schema):
    strategy: str
    """Always "deployment"."""
    spec: Opt[StrategyDetailsDeployment] = None


class InstallMode(Schema):
    type: str
    """OwnNamespace, SingleNamespace, MultiNamespace or AllNamespaces."""
    supported: bool


class WebhookDescription(Schema):
    """An admission or conversion webhook OLM registers for the operator."""

    generate_name: str
    type: Annotated[
        str,
        Field(json_schema_extra={
            "enum": ["ValidatingAdmissionWebhook", "MutatingAdmissionWebhook", "ConversionWebhook"]
        }),
    ]  # fmt: skip
    admission_review_versions: list[str]
    side_effects: str
    # Defaulted like real OLM's CRD: OLM reads 0 as "no port" otherwise.
    container_port: Annotated[int, Field(ge=1, le=65535)] = 443
    target_port: Opt[IntOrString] = None
    deployment_name: Opt[str] = None
    rules: Opt[list[RawObject]] = None
    """admissionregistration/v1 RuleWithOperations."""
    failure_policy: Opt[str] = None
    match_policy: Opt[str] = None
    object_selector: Opt[LabelSelector] = None
    reinvocation_policy: Opt[str] = None
    timeout_seconds: Opt[int] = None
    webhook_path: Opt[str] = None
    conversion_crds: Opt[list[str]] = Field(default=None, alias="conversionCRDs")


class Named(Schema):
    name: Opt[str] = None
    url: Opt[str] = None


class Maintainer(Schema):
    name: Opt[str] = None
    email: Opt[str] = None


class Icon(Schema):
    base64data: str
    mediatype: str


class GroupVersionKind(Schema):
    group: str
    version: str
    kind: str


class RelatedImage(Schema):
    name: str
    image: str


class CleanupSpec(Schema):
    enabled: bool


class ClusterServiceVersionSpec(Schema):
    """The operator's metadata, its APIs and how to install it."""

    display_name: str
    install: NamedInstallStrategy
    version: Opt[str] = None
    replaces: Opt[str] = None
    skips: Opt[list[str]] = None
    min_kube_version: Opt[str] = None
    install_modes: Opt[list[InstallMode]] = None
    customresourcedefinitions: Opt[CustomResourceDefinitions] = None
    apiservicedefinitions: Opt[APIServiceDefinitions] = None
    webhookdefinitions: Opt[list[WebhookDescription]] = None
    native_apis: Opt[list[GroupVersionKind]] = Field(default=None, alias="nativeAPIs")
    related_images: Opt[list[RelatedImage]] = None
    description: Opt[str] = None
    keywords: Opt[list[str]] = None
    maintainers: Opt[list[Maintainer]] = None
    provider: Opt[Named] = None
    links: Opt[list[Named]] = None
    icon: Opt[list[Icon]] = None
    maturity: Opt[str] = None
    labels: Opt[dict[str, str]] = None
    annotations: Opt[dict[str, str]] = None
    selector: Opt[LabelSelector] = None
    cleanup: Opt[CleanupSpec] = None


class CSVCondition(Schema):
    """One entry of the CSV's phase history."""

    phase: Opt[str] = None
    reason: Opt[str] = None
    message: Opt[str] = None
    last_update_time: Opt[datetime] = None
    last_transition_time: Opt[datetime] = None


class DependentStatus(Schema):
    group: str
    version: str
    kind: str
    status: str
    message: Opt[str] = None
    uuid: Opt[str] = None


class RequirementStatus(Schema):
    group: str
    version: str
    kind: str
    name: str
    status: str
    """Present, NotPresent or PresentNotSatisfied."""
    message: str
    uuid: Opt[str] = None
    dependents: Opt[list[DependentStatus]] = None


class NamespacedName(Schema):
    name: str
    namespace: Opt[str] = None


class ResourceList(Schema):
    group: str
    kind: str
    instances: list[NamespacedName]


class CleanupStatus(Schema):
    pending_deletion: Opt[list[ResourceList]] = None


class ClusterServiceVersionStatus(Schema):
    phase: Opt[str] = None
    """None, Pending, InstallReady, Installing, Succeeded, Failed, Unknown, Replacing or
    Deleting."""
    reason: Opt[str] = None
    message: Opt[str] = None
    last_update_time: Opt[datetime] = None
    last_transition_time: Opt[datetime] = None
    conditions: Opt[list[CSVCondition]] = None
    requirement_status: Opt[list[RequirementStatus]] = None
    certs_last_updated: Opt[datetime] = None
    certs_rotate_at: Opt[datetime] = None
    cleanup: Opt[CleanupStatus] = None


cluster_service_version = olm_kind(
    "ClusterServiceVersion",
    short_names=("csv", "csvs"),
    description="ClusterServiceVersion is a Custom Resource of type `ClusterServiceVersionSpec`.",
    versions=v1alpha1(
        ClusterServiceVersionSpec,
        ClusterServiceVersionStatus,
        PrinterColumn(name="Display", json_path=".spec.displayName",
                      description="The name of the CSV"),
        PrinterColumn(name="Version", json_path=".spec.version",
                      description="The version of the CSV"),
        PrinterColumn(name="Replaces", json_path=".spec.replaces",
                      description="The name of a CSV that this one replaces"),
        PrinterColumn(name="Phase", json_path=".status.phase"),
    ),
)  # fmt: skip
