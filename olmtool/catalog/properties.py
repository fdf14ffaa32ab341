"""Known bundle property types: decoding their values and reporting malformed ones.

``problem(property)`` answers what opm's property decoding would reject (and a little
more); the accessors give typed views for rendering, graphs and serving.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

from olmtool import gojson
from olmtool.catalog import declcfg as dc

_RELEASE_IDENTIFIER = re.compile(r"^(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)$")
MAX_RELEASE_LENGTH = 20
_CONSTRAINT_KINDS = ("gvk", "package", "cel", "all", "any", "not")


def _strings(value: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> str | None:
    if not isinstance(value, dict):
        return "value must be an object"
    for key in (*required, *optional):
        if key in value and value[key] is not None and not isinstance(value[key], str):
            return f"{key} must be a string"
    missing = [key for key in required if not value.get(key)]
    return f"{', '.join(missing)} must be set" if missing else None


def _package(value: Any) -> str | None:
    problem = _strings(value, ("packageName", "version"), ("release",))
    if problem is None and value.get("release"):
        return release_problem(value["release"])
    return problem


def _gvk(value: Any) -> str | None:
    return _strings(value, ("kind", "version"), ("group",))


def _package_required(value: Any) -> str | None:
    return _strings(value, ("packageName", "versionRange"))


def decode_bundle_object(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """An olm.bundle.object's manifest, or why it cannot be decoded."""
    if not isinstance(value, dict) or not isinstance(value.get("data"), str):
        return None, "value must be an object with base64 data"
    try:
        decoded = json.loads(_b64decode(value["data"]))
    except (binascii.Error, ValueError):
        return None, "data is not base64-encoded JSON"
    if not isinstance(decoded, dict):
        return None, "data must encode a JSON object"
    return decoded, None


def _bundle_object(value: Any) -> str | None:
    return decode_bundle_object(value)[1]


def _b64decode(data: str) -> bytes:
    """Standard base64; like Go's decoder, line breaks inside the data are ignored."""
    return base64.b64decode(data.replace("\n", "").replace("\r", ""), validate=True)


def _csv_metadata(value: Any) -> str | None:
    return None if isinstance(value, dict) else "value must be an object"


def _constraint(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "value must be an object"
    kinds = [key for key in _CONSTRAINT_KINDS if key in value]
    if len(kinds) != 1:
        return f"needs exactly one of {', '.join(_CONSTRAINT_KINDS)}, found {len(kinds)}"
    if kinds[0] == "cel" and not (isinstance(value["cel"], dict) and value["cel"].get("rule")):
        return "cel needs a rule"
    return None


def _max_openshift_version(value: Any) -> str | None:
    return None if isinstance(value, str) else 'value must be a string such as "4.8"'


_DECODERS: dict[str, Callable[[Any], str | None]] = {
    dc.PROP_PACKAGE: _package,
    dc.PROP_GVK: _gvk,
    dc.PROP_GVK_REQUIRED: _gvk,
    dc.PROP_PACKAGE_REQUIRED: _package_required,
    dc.PROP_BUNDLE_OBJECT: _bundle_object,
    dc.PROP_CSV_METADATA: _csv_metadata,
    dc.PROP_CONSTRAINT: _constraint,
    dc.PROP_MAX_OPENSHIFT_VERSION: _max_openshift_version,
}


def problem(prop: dc.Property) -> str | None:
    """Why opm would fail to decode this property, or None."""
    if not prop.type:
        return "property type must be set"
    if prop.value is None:
        return f"{prop.type}: value must be set"
    decode = _DECODERS.get(prop.type)
    found = decode(prop.value) if decode else None
    return f"{prop.type}: {found}" if found else None


def release_problem(release: str) -> str | None:
    if len(release) > MAX_RELEASE_LENGTH:
        return f"release {release!r} is longer than {MAX_RELEASE_LENGTH} characters"
    if not all(_RELEASE_IDENTIFIER.match(part) for part in release.split(".")):
        return f"release {release!r} is not dot-separated prerelease identifiers"
    return None


# --- typed views --------------------------------------------------------------------------


def gvks(bundle: dc.Bundle, type_: str = dc.PROP_GVK) -> list[tuple[str, str, str]]:
    """(group, version, kind) of every well-formed olm.gvk (or olm.gvk.required)."""
    out = []
    for prop in bundle.properties_of(type_):
        if isinstance(prop.value, dict) and _gvk(prop.value) is None:
            value = prop.value
            out.append((value.get("group") or "", value["version"], value["kind"]))
    return out


def objects(bundle: dc.Bundle) -> list[dict[str, Any]]:
    """The manifests carried as olm.bundle.object properties (undecodable ones skipped)."""
    decoded = (
        decode_bundle_object(p.value)[0] for p in bundle.properties_of(dc.PROP_BUNDLE_OBJECT)
    )
    return [obj for obj in decoded if obj is not None]


def csv_object(bundle: dc.Bundle) -> dict[str, Any] | None:
    """The ClusterServiceVersion among the bundle's objects, if it carries one."""
    for obj in objects(bundle):
        if obj.get("kind") == "ClusterServiceVersion":
            return obj
    return None


def bundle_object(manifest: dict[str, Any]) -> dc.Property:
    """An olm.bundle.object property for one manifest: base64 of ``json.Marshal`` of the
    unstructured object, as opm writes it (sorted keys, no spaces, ``<`` as ``\\u003c``,
    Go's number format)."""
    data = gojson.marshal(manifest)
    value = {"data": base64.b64encode(data.encode("utf-8")).decode("ascii")}
    return dc.Property(dc.PROP_BUNDLE_OBJECT, value, raw=gojson.marshal(value, escape_html=False))
