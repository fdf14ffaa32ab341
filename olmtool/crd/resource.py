"""Declaring a custom resource once, in Python, and turning it into a CRD manifest."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from olmtool.crd.openapi import model_to_openapi

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


class _Declaration(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class PrinterColumn(_Declaration):
    """A column ``kubectl get`` shows (``additionalPrinterColumns``)."""

    name: str
    json_path: str
    type: Literal["integer", "number", "string", "boolean", "date"] = "string"
    description: str | None = None
    format: (
        Literal["int32", "int64", "float", "double", "byte", "date", "date-time", "password"] | None
    ) = None
    priority: int = 0

    def manifest(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "jsonPath": self.json_path, "type": self.type}
        if self.description:
            column["description"] = self.description
        if self.format:
            column["format"] = self.format
        if self.priority:
            column["priority"] = self.priority
        return column


class Scale(_Declaration):
    """The scale subresource, so ``kubectl scale`` and autoscalers work."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None

    def manifest(self) -> dict[str, Any]:
        scale = {
            "specReplicasPath": self.spec_replicas_path,
            "statusReplicasPath": self.status_replicas_path,
        }
        if self.label_selector_path:
            scale["labelSelectorPath"] = self.label_selector_path
        return scale


class Version(_Declaration):
    """One version of a custom resource: its schema and how the apiserver serves it."""

    name: str
    spec: type[BaseModel] | None = None
    status: type[BaseModel] | None = None
    served: bool = True
    storage: bool = False
    deprecated: bool = False
    deprecation_warning: str | None = None
    status_subresource: bool | None = None
    """Defaults to on when the version has a status model."""
    scale: Scale | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Version:
        if self.deprecation_warning and not self.deprecated:
            raise ValueError("deprecation_warning is only allowed on a deprecated version")
        if self.scale and not self.has_status_subresource:
            raise ValueError("the scale subresource needs the status subresource")
        return self

    @property
    def has_status_subresource(self) -> bool:
        if self.status_subresource is None:
            return self.status is not None
        return self.status_subresource


class CustomResource(_Declaration):
    """A custom resource declared once; ``olmtool crd generate`` writes its CRD.

    Example::

        etcd_cluster = CustomResource(
            group="etcd.olmtool.dev",
            kind="EtcdCluster",
            short_names=("etcd",),
            versions=(Version(name="v1", spec=Spec, status=Status, storage=True),),
        )
    """

    group: str
    kind: str
    versions: tuple[Version, ...] = Field(min_length=1)
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    plural: str | None = None
    """Defaults to the lower-cased English plural of ``kind``."""
    singular: str | None = None
    list_kind: str | None = None
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    description: str | None = None
    """Describes the resource (the root of each version's schema)."""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_storage_version(self) -> CustomResource:
        names = [v.name for v in self.versions]
        if len(set(names)) != len(names):
            raise ValueError(f"version names must be unique, got {names}")
        storage = [v.name for v in self.versions if v.storage]
        if len(storage) != 1:
            raise ValueError(
                f"exactly one version must be the storage version, got {storage or 'none'}"
            )
        return self

    @property
    def plural_name(self) -> str:
        return self.plural or pluralize(self.kind.lower())

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural_name}.{self.group}"

    def manifest(self) -> dict[str, Any]:
        """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition."""
        metadata: dict[str, Any] = {"name": self.crd_name}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        if self.labels:
            metadata["labels"] = dict(self.labels)
        names: dict[str, Any] = {
            "kind": self.kind,
            "listKind": self.list_kind or f"{self.kind}List",
            "plural": self.plural_name,
            "singular": self.singular_name,
        }
        if self.short_names:
            names["shortNames"] = sorted(self.short_names)
        if self.categories:
            names["categories"] = sorted(self.categories)
        versions = sorted(self.versions, key=lambda v: version_sort_key(v.name))
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {
                "group": self.group,
                "names": names,
                "scope": self.scope,
                "versions": [self._version_manifest(v) for v in versions],
            },
        }

    def _version_manifest(self, version: Version) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": version.name,
            "served": version.served,
            "storage": version.storage,
            "schema": {"openAPIV3Schema": self._root_schema(version)},
        }
        if version.deprecated:
            entry["deprecated"] = True
            if version.deprecation_warning:
                entry["deprecationWarning"] = version.deprecation_warning
        subresources: dict[str, Any] = {}
        if version.has_status_subresource:
            subresources["status"] = {}
        if version.scale:
            subresources["scale"] = version.scale.manifest()
        if subresources:
            entry["subresources"] = subresources
        if version.printer_columns:
            entry["additionalPrinterColumns"] = [c.manifest() for c in version.printer_columns]
        return entry

    def _root_schema(self, version: Version) -> dict[str, Any]:
        properties: dict[str, Any] = {
            "apiVersion": {"type": "string", "description": _API_VERSION_DOC},
            "kind": {"type": "string", "description": _KIND_DOC},
            "metadata": {"type": "object"},
        }
        root: dict[str, Any] = {
            "description": self.description
            or f"{self.kind} is the Schema for the {self.plural_name} API.",
            "type": "object",
            "properties": properties,
        }
        if version.spec is not None:
            spec = model_to_openapi(version.spec)
            if spec.get("required"):
                root["required"] = ["spec"]
            else:
                # An absent spec still gets its field defaults, as if written `spec: {}`.
                spec["default"] = {}
            properties["spec"] = spec
        if version.status is not None:
            properties["status"] = model_to_openapi(version.status)
        return root


_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


def pluralize(word: str) -> str:
    """English plural of a lower-case kind, like Kubernetes' own tooling."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def version_sort_key(name: str) -> tuple[int, int, int, str]:
    """Kubernetes' version priority, highest first: v2, v1, v1beta2, v1beta1, v1alpha1,
    then names that do not look like Kubernetes versions, alphabetically."""
    match = _VERSION_RE.match(name)
    if not match:
        return (0, 0, 0, name)
    major, stage, minor = match.groups()
    rank = {"alpha": 1, "beta": 2, None: 3}[stage]
    return (-rank, -int(major), -int(minor or 0), name)
