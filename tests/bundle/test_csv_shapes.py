"""The ClusterServiceVersion has two descriptions here: the Go types upstream's loader
decodes it into (:mod:`olmtool.bundle.csvtypes`, for ``csv/field-type``) and OLM v0.18.3's
CRD schema (:mod:`olmtool.olm.api`, written to ``olmtool/olm/crds``). They must agree:
every field the decoder knows is in the CRD's schema, with a JSON type Go would decode
into the field's type."""

from __future__ import annotations

from typing import Any

from olmtool.bundle.csvtypes import CLUSTER_SERVICE_VERSION
from olmtool.bundle.objectschemas import csv_schema
from olmtool.godecode import GoType

# the JSON types a Go kind decodes from
JSON_TYPES = {
    "string": {"string"},
    "bytes": {"string"},
    "bool": {"boolean"},
    "int": {"integer"},
    "float": {"number"},
    "slice": {"array"},
    "map": {"object"},
    "struct": {"object"},
}


def mismatches(go: GoType, schema: dict[str, Any], path: str, seen: set[str]) -> list[str]:
    """Where the decoder's type ``go`` and the CRD's ``schema`` disagree, below ``path``."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return []  # kept whole by the CRD (the install strategy's Deployment specs)
    if go.kind in ("any", "either"):
        return []
    if go.kind == "quantity" or go.name == "intstr.IntOrString":
        ok = schema.get("x-kubernetes-int-or-string") or schema.get("type") in ("string", "integer")
        return [] if ok else [f"{path}: {go.name} but the CRD says {schema.get('type')}"]
    expected = JSON_TYPES["string"] if go.custom else JSON_TYPES[go.kind]
    if schema.get("type") not in expected:
        return [f"{path}: {go.name} but the CRD says {schema.get('type')!r}"]
    if go.kind == "slice":
        return mismatches(go.elem, schema.get("items") or {}, f"{path}[]", seen)  # type: ignore[arg-type]
    if go.kind == "map" and isinstance(schema.get("additionalProperties"), dict):
        return mismatches(go.elem, schema["additionalProperties"], f"{path}{{}}", seen)  # type: ignore[arg-type]
    if go.kind != "struct" or (go.name, path) in seen:
        return []
    seen.add((go.name, path))  # type: ignore[arg-type]
    found = []
    properties = schema.get("properties") or {}
    for name, field_type in sorted(go.fields.items()):
        if name not in properties:
            found.append(f"{path}.{name}: decoded as {field_type.name}, not in the CRD")
            continue
        found += mismatches(field_type, properties[name], f"{path}.{name}", seen)
    return found


def test_the_decoder_and_the_crd_schema_describe_one_csv() -> None:
    spec = CLUSTER_SERVICE_VERSION.fields["spec"]
    crd_spec = csv_schema()["properties"]["spec"]
    assert mismatches(spec, crd_spec, "spec", set()) == []


def test_a_disagreement_is_found() -> None:
    """The comparison itself: a field the CRD types otherwise, and one it lacks."""
    spec = CLUSTER_SERVICE_VERSION.fields["spec"]
    crd_spec = csv_schema()["properties"]["spec"]
    changed = {**crd_spec, "properties": {**crd_spec["properties"], "keywords": {"type": "string"}}}
    del changed["properties"]["replaces"]
    found = mismatches(spec, changed, "spec", set())
    assert "spec.keywords: []string but the CRD says 'string'" in found
    assert "spec.replaces: decoded as string, not in the CRD" in found
