"""Suite ``csv``: the ClusterServiceVersion on its own."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from olmtool.bundle import format as fmt
from olmtool.bundle.checks import Context, register_csv
from olmtool.bundle.checks.layout import dns_subdomain_problem
from olmtool.bundle.csvtypes import decode_csv
from olmtool.bundle.examples import example_gvk, json_offsets
from olmtool.bundle.format import INSTALL_MODE_TYPES
from olmtool.bundle.model import Bundle, Object
from olmtool.findings import Finding
from olmtool.godecode import go_list, go_map, go_str
from olmtool.versions import parse_range, parse_version

OLM_ANNOTATIONS = (
    "alm-examples",
    "olm.examples",
    "olm.skipRange",
    "olm.substitutesFor",
    "olm.properties",
    "olm.targetNamespaces",
    "olm.operatorGroup",
    "olm.operatorNamespace",
    "capabilities",
    "categories",
    "containerImage",
    "createdAt",
    "operatorframework.io/suggested-namespace",
    "operators.operatorframework.io/internal-objects",
)


@register_csv("csv")
def csv_checks(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    if not csv.api_version:
        yield csv.finding(
            "csv/api-version-missing", "error", "the ClusterServiceVersion has no apiVersion"
        )
    elif csv.api_version != fmt.CSV_API_VERSION:
        # OLM and upstream take a CSV by its kind; the apiVersion is not compared.
        yield csv.finding(
            "csv/type-meta",
            "warning",
            f"should be {fmt.CSV_API_VERSION}, not {csv.api_version!r}",
            "apiVersion",
        )
    for check in (_types, _names, _required, _version, _examples, _owned, _install_modes,
                  _min_kube_version, _annotations, _deployments):  # fmt: skip
        yield from check(csv)


def _types(csv: Object) -> Iterator[Finding]:
    """Values upstream's loader cannot decode into the CSV's Go types (it refuses the CSV)."""
    for problem in decode_csv(csv.document):
        yield csv.finding("csv/field-type", "error", problem.message, problem.path)


def _names(csv: Object) -> Iterator[Finding]:
    problem = dns_subdomain_problem(csv.name)
    if problem:
        yield csv.finding("csv/name", "error", f"{csv.name!r}: {problem}", "metadata.name")
    replaces = csv.get("spec.replaces")
    if isinstance(replaces, str) and replaces:  # '' is unset, as upstream reads it
        problem = dns_subdomain_problem(replaces)
        if problem:
            yield csv.finding("csv/replaces", "error", f"{replaces!r}: {problem}", "spec.replaces")


def _required(csv: Object) -> Iterator[Finding]:
    fields = [("spec.displayName", str), ("spec.install", dict)]
    if isinstance(csv.get("spec.install"), dict):
        fields.append(("spec.install.strategy", str))
    for dotted, expected in fields:
        value = csv.get(dotted)
        # a value of another type is csv/field-type's
        if not value and (value is None or isinstance(value, expected)):
            yield csv.finding(
                "csv/required",
                "error",
                f"{dotted.rsplit('.', 1)[1]} is required",
                dotted.rsplit(".", 1)[0],
            )
    strategy = csv.get("spec.install.strategy")
    if isinstance(strategy, str) and strategy and strategy != "deployment":
        yield csv.finding(
            "csv/required",
            "error",
            f"install strategy {strategy!r} is not supported (only 'deployment')",
            "spec.install.strategy",
        )


def _version(csv: Object) -> Iterator[Finding]:
    version = csv.get("spec.version")
    if isinstance(version, str):
        try:
            parse_version(version)
        except ValueError as exc:
            yield csv.finding("csv/version", "error", str(exc), "spec.version")
    skip_range = annotations_of(csv).get("olm.skipRange")
    if isinstance(skip_range, str):
        try:
            parse_range(skip_range)
        except ValueError as exc:
            yield csv.finding(
                "csv/skip-range",
                "error",
                str(exc),
                "metadata.annotations[olm.skipRange]",
            )


def annotations_of(csv: Object) -> dict[str, Any]:
    """The CSV's annotations; none when they are not a mapping (content/metadata says so)."""
    return go_map(csv.get("metadata.annotations"))


def examples_of(csv: Object) -> tuple[list[Any] | None, str | None]:
    """The parsed alm-examples (None if absent) and a parse problem, if any."""
    raw = annotations_of(csv).get("alm-examples")
    if raw is None:
        return None, None
    try:
        examples = json.loads(str(raw)) if str(raw).strip() else []
    except json.JSONDecodeError as exc:
        return (
            None,
            f"alm-examples is not valid JSON: {exc.msg} (at line {exc.lineno}, column {exc.colno} of the JSON)",
        )
    if not isinstance(examples, list):
        return None, "alm-examples must be a JSON array of objects"
    return examples, None


EXAMPLES_AT = "metadata.annotations[alm-examples]"
_LAST_STEP = re.compile(r"(\.[^.\[\]]+|\[[^\]]*\])$")


def example_line(csv: Object, path: str) -> int | None:
    """The CSV line of ``path`` inside alm-examples (``[0].spec.replicas``, else the
    deepest part of it there), when the YAML keeps the JSON's lines (a ``|`` block);
    None: the annotation's own line is all there is."""
    raw = annotations_of(csv).get("alm-examples")
    if not isinstance(raw, str):
        return None
    offsets = _json_offsets(raw)
    while path not in offsets and path:
        path = _LAST_STEP.sub("", path)
    if path not in offsets:
        return None
    return csv.text_line(EXAMPLES_AT, raw.count("\n", 0, offsets[path]))


@functools.lru_cache(maxsize=8)
def _json_offsets(text: str) -> dict[str, int]:
    return json_offsets(text)


def _json_error_line(csv: Object) -> int | None:
    """The CSV line of alm-examples' JSON syntax error."""
    raw = annotations_of(csv).get("alm-examples")
    try:
        json.loads(str(raw))
    except json.JSONDecodeError as exc:
        return csv.text_line(EXAMPLES_AT, exc.lineno - 1)
    return None


def mappings_at(csv: Object, dotted: str) -> list[dict[str, Any]]:
    """The mappings in the list at ``dotted``; other entries (and a non-list) are left out,
    since the field-type checks report them."""
    return [e for e in go_list(csv.get(dotted)) if isinstance(e, dict)]


def owned_entries(csv: Object) -> list[dict[str, Any]]:
    return mappings_at(csv, "spec.customresourcedefinitions.owned")


def _examples(csv: Object) -> Iterator[Finding]:
    annotations = annotations_of(csv)
    at = "metadata.annotations[alm-examples]"
    if "alm-examples" in annotations and "olm.examples" in annotations:
        yield csv.finding(
            "csv/examples-both",
            "warning",
            "both alm-examples and olm.examples are set; consoles read only alm-examples",
            at,
        )
    examples, problem = examples_of(csv)
    if problem:
        yield csv.finding("csv/examples-json", "error", problem, at, line=_json_error_line(csv))
        return
    if examples is None:
        yield csv.finding(
            "csv/no-examples",
            "warning",
            "no alm-examples: consoles cannot offer an example to create",
            "metadata.annotations",
        )
        return
    owned = {
        (go_str(e.get("name")).partition(".")[2], go_str(e.get("version")), go_str(e.get("kind")))
        for e in owned_entries(csv)
    }
    exampled = set()
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            yield csv.finding(
                "csv/examples-json",
                "error",
                f"alm-examples[{index}] is not an object",
                f"{at}[{index}]",
                line=example_line(csv, f"[{index}]"),
            )
            continue
        gvk = example_gvk(example)
        exampled.add(gvk)
        if gvk not in owned:
            yield csv.finding(
                "csv/example-not-owned",
                "error",
                f"alm-examples[{index}] ({example.get('apiVersion')} {example.get('kind')}) is not an API the CSV owns: list its CRD under spec.customresourcedefinitions.owned or drop the example",
                f"{at}[{index}]",
                line=example_line(csv, f"[{index}]"),
            )
    # An entry without a kind or a <plural>.<group> name is reported by its own check.
    owned_kinds = {(g, k) for g, _, k in owned if g and k}
    exampled_kinds = {(g, k) for g, _, k in exampled}
    for group, kind in sorted(owned_kinds - exampled_kinds, key=str):
        yield csv.finding(
            "csv/owned-without-example",
            "warning",
            f"owned API {kind}.{group} has no example in alm-examples",
            at,
        )


def _owned(csv: Object) -> Iterator[Finding]:
    for index, entry in enumerate(owned_entries(csv)):
        name = go_str(entry.get("name"))
        plural, _, group = name.partition(".")
        if wrong_type(entry.get("name"), str):
            pass  # csv/field-type's
        elif not plural or not group or dns_subdomain_problem(name):
            yield csv.finding(
                "csv/owned-crd-name",
                "error",
                f"owned CRD name {name!r} must be <plural>.<group>, as the CRD's metadata.name",
                f"spec.customresourcedefinitions.owned[{index}].name",
            )
        for key in ("version", "kind"):
            if not entry.get(key) and not wrong_type(entry.get(key), str):
                yield csv.finding(
                    "csv/required",
                    "error",
                    f"owned CRD {name!r} has no {key}",
                    f"spec.customresourcedefinitions.owned[{index}]",
                )


def _install_modes(csv: Object) -> Iterator[Finding]:
    modes = csv.get("spec.installModes")
    if not isinstance(modes, list):
        return
    if not modes:
        yield csv.finding(
            "csv/install-modes",
            "error",
            "spec.installModes is empty: OLM cannot install the operator anywhere",
            "spec.installModes",
        )
        return
    seen: dict[str, int] = {}
    for index, mode in enumerate(modes):
        path = f"spec.installModes[{index}]"
        kind = mode.get("type") if isinstance(mode, dict) else None
        if kind is not None and not isinstance(kind, str):
            continue  # csv/field-type's
        if kind not in INSTALL_MODE_TYPES:
            yield csv.finding(
                "csv/install-modes",
                "error",
                f"unknown install mode type {kind!r} (one of {', '.join(INSTALL_MODE_TYPES)})",
                path,
            )
        elif kind in seen:
            # Upstream means to refuse this but never does; OLM keeps one of the two.
            yield csv.finding(
                "csv/install-modes-duplicate",
                "warning",
                f"install mode {kind} is listed twice (first at installModes[{seen[kind]}])",
                path,
            )
        else:
            seen[kind] = index
    supported = {
        go_str(m.get("type")) for m in modes if isinstance(m, dict) and m.get("supported") is True
    }
    if not supported:
        yield csv.finding(
            "csv/install-modes", "error", "no install mode is supported", "spec.installModes"
        )
    conversion = [
        w
        for w in go_list(csv.get("spec.webhookdefinitions"))
        if isinstance(w, dict) and w.get("type") == "ConversionWebhook"
    ]
    if conversion and supported - {"AllNamespaces"}:
        yield csv.finding(
            "csv/conversion-webhook",
            "error",
            "a CSV with conversion webhooks must support only the AllNamespaces install mode "
            f"(also supports {', '.join(sorted(supported - {'AllNamespaces'}))})",
            "spec.installModes",
        )


def _min_kube_version(csv: Object) -> Iterator[Finding]:
    value = csv.get("spec.minKubeVersion")
    if wrong_type(value, str):
        return  # csv/field-type's
    if value is None or (isinstance(value, str) and not value.strip()):
        yield csv.finding(
            "csv/min-kube-version-empty",
            "warning",
            "spec.minKubeVersion is not set: OLM will install on any Kubernetes version",
            "spec",
        )
        return
    try:
        parse_version(str(value).removeprefix("v"))
    except ValueError as exc:
        yield csv.finding("csv/min-kube-version", "error", str(exc), "spec.minKubeVersion")


def _annotations(csv: Object) -> Iterator[Finding]:
    annotations = annotations_of(csv)
    canonical = {key.lower(): key for key in OLM_ANNOTATIONS}
    for key in annotations:
        expected = canonical.get(str(key).lower())
        if expected and expected != key:
            yield csv.finding(
                "csv/annotation-case",
                "error",
                f"annotation {key!r} must be spelled {expected!r}; OLM ignores it otherwise",
                f"metadata.annotations[{key}]",
            )
    if "olm.properties" in annotations:
        yield csv.finding(
            "csv/olm-properties",
            "warning",
            "the olm.properties annotation is discouraged: declare properties in metadata/properties.yaml",
            "metadata.annotations[olm.properties]",
        )


def deployments_of(csv: Object) -> list[dict[str, Any]]:
    return mappings_at(csv, "spec.install.spec.deployments")


def pod_spec_of(deployment: dict[str, Any]) -> dict[str, Any]:
    """A deployment's pod spec as Go holds it (empty where a level is not a mapping)."""
    return go_map(go_map(go_map(deployment.get("spec")).get("template")).get("spec"))


def wrong_type(value: Any, expected: type) -> bool:
    """Set, but not of the type Go decodes it into (csv/field-type reports it)."""
    return value is not None and not isinstance(value, expected)


def _deployments(csv: Object) -> Iterator[Finding]:
    for index, deployment in enumerate(deployments_of(csv)):
        path = f"spec.install.spec.deployments[{index}]"
        name = deployment.get("name")
        if not wrong_type(name, str) and (not name or dns_subdomain_problem(name)):
            yield csv.finding(
                "csv/deployment", "error", f"deployment name {name!r} must be a DNS subdomain", path
            )
        spec = deployment.get("spec")
        if not isinstance(spec, dict):
            if spec is None:
                yield csv.finding("csv/deployment", "error", f"deployment {name} has no spec", path)
            continue
        yield from _selector(csv, spec, name, path)
        restart_policy = pod_spec_of(deployment).get("restartPolicy")
        if isinstance(restart_policy, str) and restart_policy not in ("", "Always"):
            yield csv.finding(
                "csv/deployment",
                "error",
                f"deployment {name}: restartPolicy {restart_policy!r} is not allowed "
                "(a Deployment's pods only take Always)",
                f"{path}.spec.template.spec.restartPolicy",
            )
        containers = pod_spec_of(deployment).get("containers")
        if wrong_type(containers, list):
            continue
        if not containers:
            yield csv.finding(
                "csv/deployment",
                "error",
                f"deployment {name} has no containers",
                f"{path}.spec.template",
            )
        for c_index, container in enumerate(containers or []):
            if isinstance(container, dict) and (
                wrong_type(container.get("image"), str) or wrong_type(container.get("name"), str)
            ):
                continue
            if (
                not isinstance(container, dict)
                or not container.get("image")
                or not container.get("name")
            ):
                yield csv.finding(
                    "csv/deployment",
                    "error",
                    f"deployment {name}: every container needs a name and an image",
                    f"{path}.spec.template.spec.containers[{c_index}]",
                )


def _selector(csv: Object, spec: dict[str, Any], name: Any, path: str) -> Iterator[Finding]:
    """The selector's matchLabels select the pod template's labels."""
    selector = spec.get("selector")
    match_labels = selector.get("matchLabels") if isinstance(selector, dict) else None
    if wrong_type(selector, dict) or wrong_type(match_labels, dict):
        return
    labels = go_map(go_map(go_map(spec.get("template")).get("metadata")).get("labels"))
    if not match_labels:
        yield csv.finding(
            "csv/deployment",
            "error",
            f"deployment {name} has no spec.selector.matchLabels",
            f"{path}.spec",
        )
    elif any(labels.get(k) != v for k, v in match_labels.items()):
        yield csv.finding(
            "csv/deployment",
            "error",
            f"deployment {name}: selector {json.dumps(match_labels)} does not match the pod template's labels {json.dumps(labels)}",
            f"{path}.spec.selector",
        )
