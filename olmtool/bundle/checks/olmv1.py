"""The ``olm-v1`` suite: what OLM v1 (operator-controller) refuses to install.

A target rather than a quality bar, so it runs only when selected by name (``--select
olm-v1``; ``all`` leaves it out). Each rule is operator-controller's own (registry+v1):

- ``olm-v1/install-modes``: without AllNamespaces there is no default target namespace
  (``render.defaultTargetNamespacesForBundle``; ``validateTargetNamespaces`` fails with
  "exactly one target namespace must be specified"); other modes need a watch namespace
  in the ClusterExtension's configuration, behind a feature gate.
- ``olm-v1/dependencies``: ``resolve.NoDependencyValidation`` refuses a resolved bundle
  with an ``olm.package.required``, ``olm.gvk.required`` or ``olm.constraint`` property;
  opm renders those from metadata/dependencies.yaml, metadata/properties.yaml, the CSV's
  ``olm.properties`` annotation and its required CRDs and API services.
- ``olm-v1/webhooks``: ``convert.Convert`` refuses ``webhookdefinitions`` ("webhookDefinitions
  are not supported") unless a webhook-provider feature gate is on, and then
  ``CheckWebhookSupport`` wants AllNamespaces as the only install mode.
- ``olm-v1/api-services``: ``convert.Convert`` refuses owned ``apiservicedefinitions``
  ("apiServiceDefintions are not supported").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from olmtool import yamlread
from olmtool.bundle import format as fmt
from olmtool.bundle.checks import Context, register, register_csv
from olmtool.bundle.checks.csv import annotations_of, mappings_at
from olmtool.bundle.model import Bundle, Object
from olmtool.errors import InputError
from olmtool.findings import Finding
from olmtool.godecode import go_list, go_map, go_str

ALL_NAMESPACES = "AllNamespaces"
# metadata/dependencies.yaml's types and the property each becomes in a catalog
DEPENDENCY_PROPERTIES = {
    "olm.package": "olm.package.required",
    "olm.gvk": "olm.gvk.required",
    "olm.constraint": "olm.constraint",
}
REQUIRED_PROPERTIES = frozenset(DEPENDENCY_PROPERTIES.values())
REFUSED = "OLM v1 installs no dependencies and refuses the bundle"


@register_csv("olm-v1")
def olm_v1_csv(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    for check in (_install_modes, _webhooks, _api_services, _required_apis, _csv_properties):
        yield from check(csv)


def _supported_modes(csv: Object) -> list[str]:
    return [
        go_str(mode.get("type"))
        for mode in mappings_at(csv, "spec.installModes")
        if mode.get("supported") is True
    ]


def _install_modes(csv: Object) -> Iterator[Finding]:
    supported = _supported_modes(csv)
    if ALL_NAMESPACES in supported:
        return
    listed = ", ".join(sorted(set(supported))) or "none"
    path = "spec.installModes" if csv.get("spec.installModes") is not None else "spec"
    yield csv.finding(
        "olm-v1/install-modes",
        "error",
        f"AllNamespaces is not a supported install mode (supported: {listed}): OLM v1 "
        "installs into all namespaces unless the ClusterExtension configures a watch "
        "namespace, a feature-gated option",
        path,
    )


def _webhooks(csv: Object) -> Iterator[Finding]:
    webhooks = go_list(csv.get("spec.webhookdefinitions"))
    if webhooks:
        yield csv.finding(
            "olm-v1/webhooks",
            "error",
            f"{len(webhooks)} webhookdefinitions: OLM v1 refuses them unless a webhook "
            "provider feature gate (cert-manager, OpenShift service CA) is on, and then "
            "wants AllNamespaces as the only install mode",
            "spec.webhookdefinitions",
        )


def _api_services(csv: Object) -> Iterator[Finding]:
    owned = go_list(go_map(csv.get("spec.apiservicedefinitions")).get("owned"))
    if owned:
        yield csv.finding(
            "olm-v1/api-services",
            "error",
            f"{len(owned)} owned apiservicedefinitions: OLM v1 does not install API services",
            "spec.apiservicedefinitions.owned",
        )


def _required_apis(csv: Object) -> Iterator[Finding]:
    for field in ("customresourcedefinitions", "apiservicedefinitions"):
        path = f"spec.{field}.required"
        required = go_list(csv.get(path))
        if required:
            yield csv.finding(
                "olm-v1/dependencies",
                "error",
                f"{len(required)} required {'CRD' if field[0] == 'c' else 'API service'}(s) "
                f"become olm.gvk.required properties: {REFUSED}",
                path,
            )


def _csv_properties(csv: Object) -> Iterator[Finding]:
    raw = annotations_of(csv).get("olm.properties")
    try:
        declared = json.loads(str(raw)) if raw else []
    except ValueError:
        return  # csv/olm-properties and opm's warning cover it
    types = sorted({go_str(p.get("type")) for p in go_list(declared) if isinstance(p, dict)})
    found = [t for t in types if t in REQUIRED_PROPERTIES]
    if found:
        yield csv.finding(
            "olm-v1/dependencies",
            "error",
            f"the olm.properties annotation declares {', '.join(found)}: {REFUSED}",
            "metadata.annotations[olm.properties]",
        )


@register("olm-v1")
def olm_v1_metadata(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """Dependencies in metadata/: opm reads the first file with a ``dependencies`` list and
    the first with a ``properties`` list (whatever they are called)."""
    for key, property_of in (("dependencies", DEPENDENCY_PROPERTIES.get), ("properties", _same)):
        for relative, source, items in _first_lists(bundle, key):
            for index, item in enumerate(items):
                kind = go_str(item.get("type")) if isinstance(item, dict) else ""
                prop = property_of(kind)
                if prop in REQUIRED_PROPERTIES:
                    where = f"{key}[{index}]"
                    what = " ".join(w for w in (kind, _describe(item.get("value"))) if w)
                    becomes = f" (an {prop} property)" if prop != kind else ""
                    yield Finding(
                        "olm-v1/dependencies",
                        "error",
                        f"{what}{becomes}: {REFUSED}",
                        bundle.display(relative),
                        source.line_at(0, where),
                        where,
                    )


def _same(kind: str) -> str:
    return kind


def _first_lists(bundle: Bundle, key: str) -> Iterator[tuple[str, yamlread.YamlFile, list[Any]]]:
    prefix = f"{fmt.METADATA_DIR}/"
    for relative in sorted(bundle.files):
        if not relative.startswith(prefix) or "/" in relative[len(prefix) :]:
            continue
        try:
            source = yamlread.parse(bundle.files[relative].decode("utf-8"))
        except (InputError, UnicodeDecodeError):
            continue  # format/dependencies (or opm, which skips it) has its say
        document = source.documents[0] if source.documents else None
        items = document.get(key) if isinstance(document, dict) else None
        if isinstance(items, list) and items:
            yield relative, source, items
            return


def _describe(value: Any) -> str:
    """A dependency's value in a few words: package and range, or group/version/kind."""
    value = go_map(value)
    if "packageName" in value:
        words = (value.get("packageName"), value.get("version") or value.get("versionRange"))
        return " ".join(go_str(w) for w in words if w)
    if "kind" in value:
        parts = (value.get("group"), value.get("version"), value.get("kind"))
        return "/".join(go_str(p) for p in parts if p)
    message = value.get("failureMessage")
    return repr(go_str(message)) if message else ""
