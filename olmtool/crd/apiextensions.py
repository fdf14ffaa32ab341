"""apiextensions validation of a CustomResourceDefinition outside its schemas: apiVersion,
names, group, scope, versions, subresources and printer columns."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from olmtool.crd.markers import PRESERVE_UNKNOWN, VALIDATIONS
from olmtool.crd.schema_rules import SchemaChecker
from olmtool.crd.violations import Problem
from olmtool.crd.violations import quote as _q
from olmtool.godecode import go_map

ALLOWED_AT_ROOT_WITH_STATUS = frozenset(
    {
        "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
        "uniqueItems", "multipleOf", "required", "items", "properties", "externalDocs", "example",
        # Allowed since apiextensions knows them (1.15 and 1.23); an older apiserver drops
        # an unknown field rather than refusing the CRD.
        PRESERVE_UNKNOWN, VALIDATIONS,
    }
)  # fmt: skip
PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = (
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
)

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def crd_violations(crd: dict[str, Any]) -> Iterator[Problem]:
    api_version = crd.get("apiVersion")
    if api_version == "apiextensions.k8s.io/v1beta1":
        yield Problem(
            "apiVersion",
            "apiextensions.k8s.io/v1beta1 was removed in Kubernetes 1.22; use apiextensions.k8s.io/v1",
        )
        return
    if api_version != "apiextensions.k8s.io/v1":
        yield Problem(
            "apiVersion",
            f'Unsupported value: {_q(api_version)}: supported values: "apiextensions.k8s.io/v1"',
        )
    if crd.get("kind") != "CustomResourceDefinition":
        yield Problem(
            "kind",
            f'Unsupported value: {_q(crd.get("kind"))}: supported values: "CustomResourceDefinition"',
        )
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        yield Problem("spec", "Required value")
        return
    group = spec.get("group") or ""
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    yield from _check_names(names)
    if not group:
        yield Problem("spec.group", "Required value")
    elif not _DNS1123_SUBDOMAIN.match(group) or len(group) > 253:
        yield Problem(
            "spec.group", f"Invalid value: {_q(group)}: must be a DNS subdomain (lower case, dots)"
        )
    elif "." not in group:
        yield Problem(
            "spec.group", f"Invalid value: {_q(group)}: should be a domain with at least one dot"
        )
    # metadata is not decoded here (content checks own it): read it as Go would hold it
    name = go_map(crd.get("metadata")).get("name")
    expected = f"{names.get('plural', '')}.{group}"
    if name != expected:
        yield Problem(
            "metadata.name",
            f'Invalid value: {_q(name)}: must be spec.names.plural+"."+spec.group ({expected})',
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        yield Problem(
            "spec.scope",
            f'Unsupported value: {_q(spec.get("scope"))}: supported values: "Cluster", "Namespaced"',
        )
    if spec.get("preserveUnknownFields") is True:
        yield Problem(
            "spec.preserveUnknownFields",
            "Invalid value: true: must be false in order to use defaults in the schema",
        )
    yield from _check_versions(spec.get("versions"))


def _check_names(names: dict[str, Any]) -> Iterator[Problem]:
    base = "spec.names"
    for key in ("plural", "kind"):
        if not names.get(key):
            yield Problem(f"{base}.{key}", "Required value")
    for key in ("plural", "singular"):
        value = names.get(key)
        if value and not _DNS1035_LABEL.match(value):
            yield Problem(
                f"{base}.{key}",
                f"Invalid value: {_q(value)}: a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-'",
            )
    for key in ("kind", "listKind"):
        value = names.get(key)
        if value and not _DNS1035_LABEL.match(value.lower()):
            yield Problem(
                f"{base}.{key}",
                f"Invalid value: {_q(value)}: may have mixed case, but should otherwise match a DNS-1035 label",
            )
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        yield Problem(
            f"{base}.listKind",
            f"Invalid value: {_q(names['listKind'])}: kind and listKind may not be the same",
        )
    for key in ("shortNames", "categories"):
        for index, value in enumerate(names.get(key) or []):
            if not isinstance(value, str) or not _DNS1035_LABEL.match(value):
                yield Problem(
                    f"{base}.{key}[{index}]",
                    f"Invalid value: {_q(value)}: must be a lowercase RFC 1035 label",
                )


def _check_versions(versions: Any) -> Iterator[Problem]:
    if not isinstance(versions, list) or not versions:
        yield Problem("spec.versions", "Required value: must have at least one version")
        return
    seen: set[str] = set()
    storage = 0
    for index, version in enumerate(versions):
        base = f"spec.versions[{index}]"
        if not isinstance(version, dict):
            yield Problem(base, "must be a mapping")
            continue
        name = version.get("name")
        if not name or not isinstance(name, str) or not _DNS1035_LABEL.match(name):
            yield Problem(f"{base}.name", f"Invalid value: {_q(name)}: must be a DNS-1035 label")
        elif name in seen:
            yield Problem(f"{base}.name", f"Duplicate value: {_q(name)}")
        seen.add(str(name))
        storage += bool(version.get("storage"))
        yield from _check_deprecation(version, base)
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            yield Problem(f"{base}.schema.openAPIV3Schema", "Required value: schemas are required")
        else:
            yield from SchemaChecker().check_root(schema, f"{base}.schema.openAPIV3Schema")
            if "status" in subresources and isinstance(schema, dict):
                for key in sorted(set(schema) - ALLOWED_AT_ROOT_WITH_STATUS):
                    yield Problem(
                        f"{base}.schema.openAPIV3Schema.{key}",
                        "Forbidden: only description, type, properties, required and value validations are allowed at the root of the schema if the status subresource is enabled",
                    )
        yield from _check_scale(subresources.get("scale"), f"{base}.subresources.scale")
        for col_index, column in enumerate(version.get("additionalPrinterColumns") or []):
            yield from _check_column(column, f"{base}.additionalPrinterColumns[{col_index}]")
    if storage != 1:
        yield Problem(
            "spec.versions",
            f"Invalid value: must have exactly one version marked as storage version (found {storage})",
        )


def _check_deprecation(version: dict[str, Any], base: str) -> Iterator[Problem]:
    warning = version.get("deprecationWarning")
    if warning is None:
        return
    if not version.get("deprecated"):
        yield Problem(
            f"{base}.deprecationWarning", "Invalid value: can only be set for deprecated versions"
        )
    elif len(warning) > 256:
        yield Problem(f"{base}.deprecationWarning", "Too long: must have at most 256 bytes")
    elif any(ord(ch) < 32 or ord(ch) == 127 for ch in warning):
        yield Problem(
            f"{base}.deprecationWarning",
            "Invalid value: must only contain printable UTF-8 characters",
        )


def _check_scale(scale: Any, base: str) -> Iterator[Problem]:
    if scale is None:
        return
    for key, prefix, required in (
        ("specReplicasPath", ".spec.", True),
        ("statusReplicasPath", ".status.", True),
        ("labelSelectorPath", ".status.", False),
    ):
        value = scale.get(key)
        if not value:
            if required:
                yield Problem(f"{base}.{key}", "Required value")
            continue
        if not value.startswith("."):
            yield Problem(
                f"{base}.{key}",
                f"Invalid value: {_q(value)}: must be a simple json path starting with .",
            )
        elif not value.startswith(prefix):
            yield Problem(
                f"{base}.{key}",
                f"Invalid value: {_q(value)}: should be a json path under {prefix.rstrip('.')}",
            )


def _check_column(column: dict[str, Any], base: str) -> Iterator[Problem]:
    if not column.get("name"):
        yield Problem(f"{base}.name", "Required value")
    col_type = column.get("type")
    if col_type not in PRINTER_COLUMN_TYPES:
        yield Problem(
            f"{base}.type",
            f"Invalid value: {_q(col_type)}: must be one of {','.join(PRINTER_COLUMN_TYPES)}",
        )
    col_format = column.get("format")
    if col_format and col_format not in PRINTER_COLUMN_FORMATS:
        yield Problem(
            f"{base}.format",
            f"Invalid value: {_q(col_format)}: must be one of {','.join(PRINTER_COLUMN_FORMATS)}",
        )
    json_path = column.get("jsonPath")
    if not json_path:
        yield Problem(f"{base}.jsonPath", "Required value")
    elif not json_path.startswith("."):
        yield Problem(
            f"{base}.jsonPath",
            f"Invalid value: {_q(json_path)}: must be a simple json path starting with .",
        )
