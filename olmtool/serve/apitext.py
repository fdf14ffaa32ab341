"""The strings of a served ``Bundle`` message, byte for byte as opm v1.26.0 fills them.

opm v1.26 (operator-registry ``alpha/declcfg/load.go``, ``pkg/api/model_to_api.go``):

- ``object``: each ``olm.bundle.object`` in property order, its data through
  ``k8s.io/apimachinery/pkg/util/yaml.ToJSON``: data that starts with ``{`` (after
  Unicode white space) is returned **as it is** (spaces, key order, escapes, a trailing
  newline); anything else is YAML converted by ``json.Marshal`` (sorted keys, ``<``,
  ``>``, ``&`` escaped as ``\\u003c``..., Go's number format). :func:`object_text`.
- ``csvJson``: the first of those texts whose ``kind`` is ClusterServiceVersion.
- ``properties[].value`` and the ``olm.gvk`` dependencies: the property's value as opm
  holds it after loading (``declcfg.Meta`` first replaces the text ``\\u003c``,
  ``\\u003e`` and ``\\u0026`` by ``<``, ``>`` and ``&`` in every blob): from a JSON file
  the value's text compacted, otherwise unchanged (key order, number text, other
  escapes, a literal U+2028); from a YAML file ``json.Marshal`` of the YAML (sorted keys,
  Go numbers, U+2028 escaped), HTML characters unescaped. :func:`property_text`.
- ``olm.package`` dependencies: ``{"packageName":..,"version":<versionRange>}`` written
  by the property package's encoder (HTML characters not escaped).

Newer opm adds what v1.26 does not have (``--opm-compat latest``, the default): a CSV
synthesized from ``olm.csv.metadata`` (:func:`synthesized_csv`) when no object is one,
that property hidden, and deprecation messages.
"""

from __future__ import annotations

import json
import re
from typing import Any

from olmtool import gojson, yamlread
from olmtool.catalog import declcfg as dc
from olmtool.catalog import object_text as opm_object_text
from olmtool.catalog import yaml_value_text
from olmtool.errors import InputError

CSV_KIND = "ClusterServiceVersion"
CSV_API_VERSION = "operators.coreos.com/v1alpha1"

object_text = opm_object_text  # yaml.ToJSON: JSON data as it is, YAML as json.Marshal


def is_csv(text: str) -> bool:
    """Whether an object text is a ClusterServiceVersion as opm v1.26's ``extractCSV``
    tells: it reads the text as YAML (sigs.k8s.io/yaml on go-yaml v2), so JSON that YAML
    refuses (a UTF-16 surrogate escape such as Python's ``\\ud83d``, characters YAML
    does not allow, a tab before the ``{``) is no CSV there."""
    if CSV_KIND not in text:  # most objects: no need to parse them
        return False
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if obj is not None and not _yaml_trouble(text):
        return isinstance(obj, dict) and obj.get("kind") == CSV_KIND  # YAML reads it alike
    try:
        obj = yamlread.load(text)
    except (InputError, ValueError):
        return False
    return isinstance(obj, dict) and obj.get("kind") == CSV_KIND


# Where JSON and YAML part ways: surrogate escapes, characters libyaml refuses or reads as
# line breaks, and tabs in block context (before the "{"). One pattern each: a pattern
# that starts with a literal or a class is searched fast.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")
_NOT_YAML_TEXT = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]"
)


def _yaml_trouble(text: str) -> bool:
    return (
        "\t" in text[: len(text) - len(text.lstrip())]
        or _SURROGATE_ESCAPE.search(text) is not None
        or _NOT_YAML_TEXT.search(text) is not None
    )


def property_text(prop: dc.Property, *, yaml_source: bool, raw: str | None = None) -> str:
    """A property value's text as opm v1.26 serves it (:mod:`olmtool.catalog.opmtext`).
    ``raw``: the value's text taken from its JSON file, where it differs from what the
    parsed value gives back."""
    if raw is not None:
        return raw
    if yaml_source:
        return yaml_value_text(prop.value)
    return dc.to_json(prop.value, indent=None)


def package_dependency(value: Any) -> str:
    """The ``olm.package`` dependency opm v1.26 builds from an olm.package.required value
    (``property.MustBuildPackage(packageName, versionRange)``; keys match as Go's decoder
    matches them, case-insensitively, the last one winning)."""
    fields = {str(k).lower(): v for k, v in value.items()} if isinstance(value, dict) else {}
    package = {
        "packageName": _string(fields.get("packagename")),
        "version": _string(fields.get("versionrange")),
    }
    return gojson.marshal(package, escape_html=False)


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --- newer opm: a CSV from olm.csv.metadata ------------------------------------------------


def synthesized_csv(bundle: dc.Bundle, version: str, package: dc.Package | None) -> str:
    """A minimal CSV from olm.csv.metadata, for bundles that carry no CSV object (newer
    opm's ``csvMetadataToCsv``; opm v1.26 serves none).

    metadata.name is the bundle, the spec gets the metadata fields, the version, the
    related images, a stub deployment install strategy (packageserver needs one) and the
    package's icon and description when the metadata has none. Keys follow the Go struct
    order of operator-framework/api's ClusterServiceVersion.
    """
    meta = bundle.properties_of(dc.PROP_CSV_METADATA)[0].value
    meta = meta if isinstance(meta, dict) else {}
    metadata: dict[str, Any] = {"name": bundle.name, "creationTimestamp": None}
    for key in ("labels", "annotations"):
        if meta.get(key):
            metadata[key] = meta[key]
    spec: dict[str, Any] = {
        "install": {"strategy": "deployment", "spec": {"deployments": None}},
        "version": version,
    }
    _put(spec, "maturity", meta.get("maturity"))
    spec["customresourcedefinitions"] = meta.get("crdDescriptions") or {}
    spec["apiservicedefinitions"] = meta.get("apiServiceDefinitions") or {}
    _put(spec, "nativeAPIs", meta.get("nativeAPIs"))
    _put(spec, "minKubeVersion", meta.get("minKubeVersion"))
    spec["displayName"] = meta.get("displayName") or ""
    _put(spec, "description", meta.get("description") or (package.description if package else ""))
    for key in ("keywords", "maintainers"):
        _put(spec, key, meta.get(key))
    spec["provider"] = meta.get("provider") or {}
    _put(spec, "links", meta.get("links"))
    if package is not None and package.icon is not None:
        spec["icon"] = [
            {"base64data": package.icon.base64data, "mediatype": package.icon.mediatype}
        ]
    _put(spec, "installModes", meta.get("installModes"))
    related = [{"name": r.name, "image": r.image} for r in bundle.related_images]
    _put(spec, "relatedImages", related)
    spec["cleanup"] = {"enabled": False}
    csv = {
        "kind": CSV_KIND,
        "apiVersion": CSV_API_VERSION,
        "metadata": metadata,
        "spec": spec,
        "status": {"cleanup": {}},
    }
    return go_json(csv)


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """Go's omitempty: leave out empty values."""
    if value:
        target[key] = value


def go_json(value: Any) -> str:
    """Compact JSON as Go's json.Marshal writes a struct (HTML characters escaped), keys
    in the order given."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES:
        text = text.replace(char, escaped)
    return text


# Outside strings JSON has none of these characters, so plain replacement is safe.
_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)
