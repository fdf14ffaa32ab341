"""Suites ``loader``, ``format`` and ``content``: files, annotations and object metadata."""

from __future__ import annotations

import json
from collections.abc import Iterator

from olmtool import yamlread
from olmtool.bundle import format as fmt
from olmtool.bundle.checks import Context, register
from olmtool.bundle.model import Bundle, Object
from olmtool.findings import Finding, Severity
from olmtool.k8snames import dns_subdomain_problem, label_value_problem, qualified_name_problem

# RBAC object names are path segments (system:foo is fine), not DNS names.
PATH_SEGMENT_KINDS = frozenset({"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})
DEPENDENCY_TYPES = ("olm.gvk", "olm.package", "olm.label", "olm.constraint")


# -- loader ------------------------------------------------------------------------------


@register("loader")
def loader_problems(bundle: Bundle, context: Context) -> Iterator[Finding]:
    yield from (p for p in bundle.problems if p.suite == "loader")
    for crd in bundle.crds:
        if crd.api_version not in fmt.CRD_API_VERSIONS:
            yield crd.finding(
                "loader/crd-api-version",
                "error",
                f"CustomResourceDefinition apiVersion {crd.api_version!r} is not "
                f"{' or '.join(fmt.CRD_API_VERSIONS)}",
                "apiVersion",
            )


# -- format ------------------------------------------------------------------------------


@register("format")
def annotations(bundle: Bundle, context: Context) -> Iterator[Finding]:
    yield from (p for p in bundle.problems if p.suite == "format")
    values = bundle.annotations
    if values is None:
        return
    file = bundle.display(fmt.ANNOTATIONS_FILE)

    def at(
        check: str, message: str, key: str | None = None, severity: Severity = "error"
    ) -> Finding:
        line = bundle.annotation_line(f"annotations[{key}]") if key else 1
        return Finding(check, severity, message, file, line, f"annotations[{key}]" if key else None)

    for key in fmt.REQUIRED_ANNOTATIONS:
        if key not in values:
            yield at("format/annotation-missing", f"required annotation {key} is missing")
    if fmt.MEDIATYPE in values and bundle.csvs and values[fmt.MEDIATYPE] != fmt.REGISTRY_V1:
        yield at(
            "format/mediatype",
            f"mediatype {values[fmt.MEDIATYPE]!r} does not match the bundle's content: a bundle "
            f"with a ClusterServiceVersion is {fmt.REGISTRY_V1!r}",
            fmt.MEDIATYPE,
        )
    for key, expected in fmt.FIXED_VALUES.items():
        if key in values and values[key].rstrip("/") != expected.rstrip("/"):
            # opm and OLM read manifests/ and metadata/ whatever these say.
            yield at(
                "format/directory-annotation",
                f"is {values[key]!r} but the bundle's directory is {expected!r}",
                key,
                "warning",
            )
    if fmt.PACKAGE in values and not values[fmt.PACKAGE].strip():
        yield at("format/package-empty", "the package name is empty", fmt.PACKAGE)
    channels = [c.strip() for c in values.get(fmt.CHANNELS, "").split(",")]
    if fmt.CHANNELS in values and not all(channels):
        yield at(
            "format/channels-empty",
            "channels must be a non-empty, comma-separated list",
            fmt.CHANNELS,
        )
    if fmt.DEFAULT_CHANNEL in values:
        default = values[fmt.DEFAULT_CHANNEL].strip()
        if not default:
            yield at(
                "format/default-channel-empty",
                "the default channel, when present, must not be empty",
                fmt.DEFAULT_CHANNEL,
            )
        elif all(channels) and default not in channels:
            # The default channel is the package's: another bundle may well bring it.
            yield at(
                "format/default-channel-unknown",
                f"default channel {default!r} is not one of this bundle's channels "
                f"({', '.join(channels)}); the package needs another bundle in it",
                fmt.DEFAULT_CHANNEL,
                "warning",
            )
    yield from _labels_match(bundle, values)
    yield from _dependencies(bundle)


def _labels_match(bundle: Bundle, values: dict[str, str]) -> Iterator[Finding]:
    """bundle.Dockerfile LABELs (and image labels) should repeat the annotations exactly.

    OLM and opm read metadata/annotations.yaml, never the Dockerfile, so a Dockerfile
    that disagrees only misleads whoever builds the image with it: a warning. An image
    without the package label is not taken for a bundle by opm at all: an error.
    """
    dockerfile = bundle.files.get(fmt.DOCKERFILE)
    if dockerfile is not None:
        labels = fmt.parse_dockerfile_labels(dockerfile.decode("utf-8", errors="replace"))
        file = bundle.display(fmt.DOCKERFILE)
        for key, value in sorted(values.items()):
            if key not in labels:
                yield Finding(
                    "format/dockerfile-labels",
                    "warning",
                    f"LABEL {key} is missing (annotations.yaml has it)",
                    file,
                    None,
                )
            elif labels[key][0] != value:
                yield Finding(
                    "format/dockerfile-labels",
                    "warning",
                    f"LABEL {key}={labels[key][0]} differs from annotations.yaml ({value!r})",
                    file,
                    labels[key][1],
                )
    if bundle.image_labels is not None:
        for key, value in sorted(values.items()):
            label = bundle.image_labels.get(key)
            if label == value:
                continue
            if key == fmt.PACKAGE and label is None:
                yield Finding(
                    "format/image-labels",
                    "error",
                    f"the image has no {key} label: opm does not recognise it as a bundle",
                    bundle.label,
                )
            else:
                yield Finding(
                    "format/image-labels",
                    "warning",
                    f"image label {key} is {label!r}, annotations.yaml says {value!r}",
                    bundle.label,
                )


def _dependencies(bundle: Bundle) -> Iterator[Finding]:
    relative = "metadata/dependencies.yaml"
    if relative not in bundle.files:
        return
    file = bundle.display(relative)
    try:
        source = yamlread.parse(bundle.files[relative].decode("utf-8", errors="replace"))
        document = source.documents[0] if len(source.documents) == 1 else None
    except Exception as exc:  # InputError with a line
        yield Finding(
            "format/dependencies", "error", f"cannot parse: {exc}", file, getattr(exc, "line", None)
        )
        return
    entries = document.get("dependencies") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        yield Finding(
            "format/dependencies", "error", "expected a list under 'dependencies:'", file, 1
        )
        return
    for index, entry in enumerate(entries):
        path = f"dependencies[{index}]"
        line = source.line_at(0, path)
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind not in DEPENDENCY_TYPES:
            yield Finding(
                "format/dependencies",
                "error",
                f"unknown dependency type {kind!r} (known: {', '.join(DEPENDENCY_TYPES)})",
                file,
                line,
                path,
            )
        elif not isinstance(entry.get("value"), dict):
            yield Finding(
                "format/dependencies",
                "error",
                "a dependency needs a 'value' mapping",
                file,
                line,
                path,
            )


# -- content -----------------------------------------------------------------------------


@register("content")
def object_content(bundle: Bundle, context: Context) -> Iterator[Finding]:
    for obj in bundle.manifest_objects:
        if not obj.kind:
            # Upstream's loader cannot decode an object without kind ("Object 'Kind' is
            # missing"), and nothing could apply it.
            yield obj.finding(
                "content/kind-missing",
                "error",
                f"the object {obj.name or '(unnamed)'} has no kind",
                None,
            )
            continue
        if not obj.api_version and obj.kind != fmt.CSV_KIND:  # the CSV's: csv checks
            # Upstream decodes such objects and checks only their metadata.
            yield obj.finding(
                "content/type-meta",
                "warning",
                f"the {obj.kind} {obj.name or '(unnamed)'} has no apiVersion",
                None,
            )
        if obj.kind not in fmt.SUPPORTED_KINDS:
            yield obj.finding(
                "content/unsupported-kind",
                "error",
                f"{obj.kind} {obj.name or '(unnamed)'} cannot be shipped in a bundle; OLM would refuse the InstallPlan "
                "(supported: ConfigMap, Secret, Service, ServiceAccount, RBAC, PodDisruptionBudget, "
                "PriorityClass, NetworkPolicy, monitoring and console kinds)",
                "kind",
            )
        yield from _metadata(obj)


def _metadata(obj: Object) -> Iterator[Finding]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        yield obj.finding("content/metadata", "error", "the object has no metadata", None)
        return
    name = metadata.get("name")
    if obj.kind == fmt.CSV_KIND:
        problem = None  # csv/name reports it
    elif obj.kind in PATH_SEGMENT_KINDS:
        problem = (
            None
            if isinstance(name, str) and name and "/" not in name and name not in (".", "..")
            else "must be a non-empty path segment"
        )
    else:
        problem = dns_subdomain_problem(name)
    if problem:
        yield obj.finding("content/metadata", "error", f"{name!r}: {problem}", "metadata.name")
    for field in ("labels", "annotations"):
        items = metadata.get(field)
        if items is None:
            continue
        if not isinstance(items, dict):
            yield obj.finding(
                "content/metadata",
                "error",
                f"metadata.{field} must be a mapping",
                f"metadata.{field}",
            )
            continue
        for key, value in items.items():
            where = f"metadata.{field}[{key}]"
            if value is None:
                value = ""  # Go reads null into a string as ""
            problem = qualified_name_problem(str(key))
            if problem:
                yield obj.finding("content/metadata", "error", f"key {key!r}: {problem}", where)
            elif field == "labels" and (not isinstance(value, str) or label_value_problem(value)):
                yield obj.finding(
                    "content/metadata",
                    "error",
                    f"label value {value!r} is not a valid label value",
                    where,
                )
            elif field == "annotations" and not isinstance(value, str):
                yield obj.finding(
                    "content/metadata",
                    "error",
                    f"annotation {key} is {json.dumps(value)}, not a string: quote it",
                    where,
                )
