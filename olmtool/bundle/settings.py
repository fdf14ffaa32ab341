"""The ``bundle:`` section of ``olmtool.yaml``: everything OLM needs to know about a
package and its releases.

Keys are camelCase, like the ClusterServiceVersion fields they fill. Kubernetes objects
(env vars, probes, resources, policy rules, descriptors) are written exactly as in
Kubernetes and copied into the CSV unchanged. Paths are relative to ``olmtool.yaml``.
One release has its ``version`` here; several are listed under ``releases`` (what a
release may change, and how, is :mod:`olmtool.bundle.releases`).
"""

from __future__ import annotations

from typing import Any, Literal

import semver
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from olmtool.bundle.dependencies import BundleProperty, Dependency, check_unique
from olmtool.bundle.format import INSTALL_MODE_TYPES, Capability, InstallModeType
from olmtool.bundle.releases import ResolvedRelease, release_model, resolve_releases
from olmtool.bundle.sectionbase import VersionRange
from olmtool.bundle.webhooks import Webhook, check_webhooks
from olmtool.errors import SettingError

Maturity = Literal["planning", "pre-alpha", "alpha", "beta", "stable", "mature", "inactive"]
KubeObject = dict[str, Any]


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class Person(_Section):
    name: str = Field(min_length=1)
    email: str = Field(min_length=3)


class Link(_Section):
    name: str = Field(min_length=1)
    url: str = Field(min_length=1)


class Provider(_Section):
    name: str = Field(min_length=1)
    url: str | None = None


class RelatedImage(_Section):
    name: str = Field(min_length=1)
    image: str = Field(min_length=1)


class OwnedApi(_Section):
    """What the console shows for one owned CRD kind (all versions)."""

    display_name: str | None = None
    description: str | None = None
    resources: list[KubeObject] = []
    spec_descriptors: list[KubeObject] = []
    status_descriptors: list[KubeObject] = []
    action_descriptors: list[KubeObject] = []


class Deployment(_Section):
    """The operator's Deployment; ``WATCH_NAMESPACE`` is always injected from the
    OperatorGroup's target namespaces."""

    name: str = Field(min_length=1)
    image: str = Field(min_length=1)
    container_name: str = "operator"
    replicas: int = Field(1, ge=0)
    service_account_name: str | None = None
    command: list[str] = []
    args: list[str] = []
    env: list[KubeObject] = []
    ports: list[KubeObject] = []
    resources: KubeObject = {}
    liveness_probe: KubeObject | None = None
    readiness_probe: KubeObject | None = None
    startup_probe: KubeObject | None = None
    security_context: KubeObject | None = None
    pod_security_context: KubeObject | None = None
    volumes: list[KubeObject] = []  # the pod's (an emptyDir for /tmp, say)
    volume_mounts: list[KubeObject] = []  # the operator container's
    labels: dict[str, str] = {}
    termination_grace_period_seconds: int | None = None

    @model_validator(mode="after")
    def _mounts_name_volumes(self) -> Deployment:
        """Each of ``volumeMounts`` names one of ``volumes`` (the apiserver refuses the
        Deployment otherwise, at install time)."""
        names = [volume.get("name") for volume in self.volumes]
        for index, mount in enumerate(self.volume_mounts):
            if mount.get("name") not in names:
                listed = ", ".join(str(name) for name in names) or "none"
                raise SettingError(
                    f"volumeMounts[{index}].name",
                    f"{mount.get('name')!r} is not one of volumes ({listed})",
                )
        return self

    @property
    def service_account(self) -> str:
        return self.service_account_name or self.name


class Csv(_Section):
    """ClusterServiceVersion fields that are not derived from other inputs."""

    display_name: str = Field(min_length=1)
    description: str = ""
    short_description: str | None = None
    icon: str | None = None
    keywords: list[str] = []
    maintainers: list[Person] = []
    provider: Provider | None = None
    links: list[Link] = []
    maturity: Maturity | None = None
    capabilities: Capability | None = None
    categories: list[str] = []
    min_kube_version: str | None = None
    install_modes: list[InstallModeType] = list(INSTALL_MODE_TYPES)
    replaces: str | None = None
    skips: list[str] = []
    skip_range: VersionRange | None = None
    related_images: list[RelatedImage] = []
    repository: str | None = None
    support: str | None = None
    suggested_namespace: str | None = None
    container_image: str | None = None
    annotations: dict[str, str] = {}
    labels: dict[str, str] = {}
    owned: dict[str, OwnedApi] = {}


class BundleSettings(_Section):
    """One package's bundle: where its inputs are and what its CSV says, for one release
    (``version``) or for each of ``releases``."""

    package: str = Field(min_length=1)
    version: str | None = None  # one release; several: ``releases`` instead
    channels: list[str] = Field([], min_length=1)  # required unless every release has its own
    default_channel: str | None = None
    output: str = "bundle"
    crds: str | None = None
    base: str | None = None
    manifests: list[str] = []
    examples: list[str] = []
    scorecard: bool = True
    csv: Csv
    deployment: Deployment
    permissions: list[KubeObject] = []
    cluster_permissions: list[KubeObject] = []
    # metadata/dependencies.yaml, metadata/properties.yaml and spec.webhookdefinitions
    # (olmtool.bundle.dependencies, olmtool.bundle.webhooks)
    dependencies: list[Dependency] = []
    properties: list[BundleProperty] = []
    webhooks: list[Webhook] = []
    # Keep ``releases`` last: a release may change every key above (see releases.py).
    releases: list[Release] = []
    _resolved: list[ResolvedRelease] = PrivateAttr(default_factory=list)

    @field_validator("dependencies", "properties")
    @classmethod
    def _unique_entries(cls, value: list[Any], info: ValidationInfo) -> list[Any]:
        check_unique(value, "dependency" if info.field_name == "dependencies" else "property")
        return value

    @field_validator("webhooks")
    @classmethod
    def _webhooks_fit(cls, value: list[Webhook], info: ValidationInfo) -> list[Webhook]:
        check_webhooks(value, info.data.get("deployment"), info.data.get("csv"))
        return value

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str | None) -> str | None:
        return semantic_version(value) if value is not None else None

    @model_validator(mode="after")
    def _default_channel_listed(self) -> BundleSettings:
        default, channels = self.default_channel, self.channels
        if default is not None and channels and default not in channels:
            raise SettingError(
                "defaultChannel", f"{default!r} is not one of channels ({', '.join(channels)})"
            )
        return self

    @model_validator(mode="after")
    def _releases_resolve(self) -> BundleSettings:
        self._resolved = resolve_releases(self)
        return self

    @property
    def csv_name(self) -> str:
        return f"{self.package}.v{self.version}"

    def resolved_releases(self) -> list[ResolvedRelease]:
        """Every release as settings of its own (``version`` set, images expanded),
        oldest first; the one-release form gives one."""
        return list(self._resolved)


def semantic_version(value: str) -> str:
    if not semver.Version.is_valid(value):
        raise ValueError(f"{value!r} is not a semantic version (like 1.2.3)")
    return value


# A release's keys are the bundle keys it may change (made from BundleSettings' own, so a
# key added above is a release key too), plus ``version``, ``frozen`` and the shorthands.
Release = release_model(BundleSettings, _Section, semantic_version)
BundleSettings.model_rebuild()
