"""The CRD checker reports each apiserver / structural-schema violation with its path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from olmtool.crd import check_crd, check_schema

ROOT = "spec.versions[0].schema.openAPIV3Schema"


def crd_with(schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {
                "kind": "Widget",
                "listKind": "WidgetList",
                "plural": "widgets",
                "singular": "widget",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    **version,
                }
            ],
        },
    }


def spec_schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": spec}}


def test_valid_crd_has_no_findings() -> None:
    schema = spec_schema(
        {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}
    )
    assert check_crd(crd_with(schema)) == []


# (schema of .spec, expected path below ROOT.properties[spec], expected message fragment)
SCHEMA_CASES = [
    (
        {"type": "object", "properties": {"a": {}}},
        ".properties[a].type",
        "must not be empty for specified object fields",
    ),
    ({"type": "array"}, ".items", "Required value: must be specified"),
    ({"type": "array", "items": {}}, ".items.type", "must not be empty for specified array items"),
    (
        {"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}},
        ".properties[a].$ref",
        "$ref is not supported",
    ),
    (
        {"type": "object", "definitions": {"x": {"type": "string"}}},
        ".definitions",
        "definitions is not supported",
    ),
    (
        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        ".uniqueItems",
        "quadratic",
    ),
    (
        {"type": "object", "additionalProperties": False},
        ".additionalProperties",
        "cannot be set to false",
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "string"},
        },
        ".additionalProperties",
        "mutual exclusive",
    ),
    ({"type": "null"}, ".type", "type cannot be set to null"),
    (
        {"type": "integer", "minimum": 1, "exclusiveMinimum": 1},
        ".exclusiveMinimum",
        "must be a boolean",
    ),
    ({"type": "string", "pattern": "a(?=b)"}, ".pattern", "RE2"),
    ({"type": "string", "pattern": "a("}, ".pattern", "must be a valid regular expression"),
    (
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "type": "string",
            "x-kubernetes-int-or-string": True,
        },
        ".type",
        "must be empty if x-kubernetes-int-or-string",
    ),
    (
        {"type": "string", "anyOf": [{"type": "string", "minLength": 1}]},
        ".anyOf[0].type",
        "must be empty to be structural",
    ),
    (
        {"type": "string", "anyOf": [{"description": "x"}]},
        ".anyOf[0].description",
        "must be empty to be structural",
    ),
    (
        {"type": "object", "anyOf": [{"properties": {"b": {"minLength": 1}}}]},
        ".properties[b]",
        "because it is defined in",
    ),
    (
        {"type": "object", "x-kubernetes-embedded-resource": True},
        ".properties",
        "must not be empty if x-kubernetes-embedded-resource",
    ),
    (
        {
            "type": "string",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        ".type",
        "must be object if x-kubernetes-embedded-resource",
    ),
    (
        {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
        ".x-kubernetes-preserve-unknown-fields",
        "must be true or undefined",
    ),
    (
        {"type": "string", "x-kubernetes-list-type": "set"},
        ".type",
        "must be array if x-kubernetes-list-type",
    ),
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
        ".x-kubernetes-list-type",
        "Unsupported value",
    ),
    (
        {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        ".items.type",
        "must be object if parent array",
    ),
    (
        {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            "x-kubernetes-list-type": "map",
        },
        ".x-kubernetes-list-map-keys",
        "must not be empty",
    ),
    (
        {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["nom"],
        },
        ".x-kubernetes-list-map-keys",
        "entries must all be names of item properties",
    ),
    (
        {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        ".items.properties[name]",
        "must be required or have a default",
    ),
    (
        {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"},
        ".items.x-kubernetes-map-type",
        "must be atomic",
    ),
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["a"]},
        ".x-kubernetes-list-type",
        "must be map if x-kubernetes-list-map-keys",
    ),
    (
        {"type": "string", "x-kubernetes-map-type": "atomic"},
        ".type",
        "must be object if x-kubernetes-map-type",
    ),
    (
        {"type": "object", "x-kubernetes-validations": [{"rule": " "}]},
        ".x-kubernetes-validations[0].rule",
        "rule is not specified",
    ),
    (
        {"type": "object", "x-kubernetes-validations": [{"rule": "a\n&& b"}]},
        ".x-kubernetes-validations[0].message",
        "must be specified if rule contains line breaks",
    ),
    (
        {"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}]},
        ".x-kubernetes-validations[0].reason",
        "Unsupported value",
    ),
    ({"type": "integer", "default": "three"}, ".default", "default does not validate"),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": 1}},
        ".default",
        "unknown field b",
    ),
    ({"type": "integer", "minimun": 1}, ".minimun", "unknown field"),
    (
        {
            "type": "object",
            "properties": {"metadata": {"type": "object"}},
            "anyOf": [{"properties": {"metadata": {"type": "object"}}}],
        },
        ".anyOf[0].properties[metadata]",
        "nested context",
    ),
]


@pytest.mark.parametrize(
    ("spec", "suffix", "fragment"), SCHEMA_CASES, ids=[c[2][:40] for c in SCHEMA_CASES]
)
def test_schema_violation_is_reported_with_its_path(
    spec: dict[str, Any], suffix: str, fragment: str
) -> None:
    findings = check_crd(crd_with(spec_schema(spec)))
    expected_path = f"{ROOT}.properties[spec]{suffix}"
    matching = [f for f in findings if f.path == expected_path and fragment in f.message]
    assert matching, f"expected {expected_path}: ...{fragment}... in {[str(f) for f in findings]}"


def test_every_violation_is_reported_not_just_the_first() -> None:
    spec = {"type": "object", "properties": {"a": {}, "b": {"type": "array"}, "c": {"$ref": "#/x"}}}
    paths = {f.path for f in check_crd(crd_with(spec_schema(spec)))}
    base = f"{ROOT}.properties[spec].properties"
    assert {f"{base}[a].type", f"{base}[b].items", f"{base}[c].$ref"} <= paths


def test_int_or_string_pattern_is_structural() -> None:
    node = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "pattern": "^[0-9]+$",
    }
    assert check_crd(crd_with(spec_schema({"type": "object", "properties": {"port": node}}))) == []


def test_root_rules() -> None:
    findings = {
        str(f) for f in check_schema({"type": "string", "additionalProperties": {"type": "string"}})
    }
    assert 'openAPIV3Schema.type: Invalid value: "string": must be object at the root' in findings
    assert (
        "openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root" in findings
    )
    metadata = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
        },
    }
    assert any(
        "must not specify anything other than name and generateName" in str(f)
        for f in check_schema(metadata)
    )
    allowed = {
        "type": "object",
        "properties": {
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 20}},
            }
        },
    }
    assert check_schema(allowed) == []


CRD_CASES = [
    (
        lambda c: c["metadata"].update(name="gadgets.example.com"),
        "metadata.name",
        "must be spec.names.plural",
    ),
    (lambda c: c["spec"].update(group="example"), "spec.group", "at least one dot"),
    (lambda c: c["spec"].update(scope="Global"), "spec.scope", "Unsupported value"),
    (lambda c: c["spec"]["names"].update(plural="Widgets"), "spec.names.plural", "RFC 1035"),
    (
        lambda c: c["spec"]["names"].update(listKind="Widget"),
        "spec.names.listKind",
        "may not be the same",
    ),
    (lambda c: c["spec"]["names"].update(shortNames=["W"]), "spec.names.shortNames[0]", "RFC 1035"),
    (
        lambda c: c["spec"]["versions"][0].update(storage=False),
        "spec.versions",
        "exactly one version marked as storage",
    ),
    (
        lambda c: c["spec"]["versions"].append(dict(c["spec"]["versions"][0], storage=False)),
        "spec.versions[1].name",
        "Duplicate value",
    ),
    (
        lambda c: c["spec"]["versions"][0].update(deprecationWarning="old"),
        "spec.versions[0].deprecationWarning",
        "only be set for deprecated",
    ),
    (
        lambda c: c["spec"]["versions"][0].pop("schema"),
        "spec.versions[0].schema.openAPIV3Schema",
        "schemas are required",
    ),
    (
        lambda c: c["spec"]["versions"][0].update(
            subresources={
                "scale": {"specReplicasPath": ".replicas", "statusReplicasPath": ".status.r"}
            }
        ),
        "spec.versions[0].subresources.scale.specReplicasPath",
        "under .spec",
    ),
    (
        lambda c: c["spec"]["versions"][0].update(
            subresources={"scale": {"specReplicasPath": ".spec.r"}}
        ),
        "spec.versions[0].subresources.scale.statusReplicasPath",
        "Required value",
    ),
    (
        lambda c: c["spec"]["versions"][0].update(
            additionalPrinterColumns=[{"name": "A", "type": "float", "jsonPath": "spec.a"}]
        ),
        "spec.versions[0].additionalPrinterColumns[0].type",
        "must be one of",
    ),
    (
        lambda c: c["spec"]["versions"][0].update(
            additionalPrinterColumns=[{"name": "A", "type": "string", "jsonPath": "spec.a"}]
        ),
        "spec.versions[0].additionalPrinterColumns[0].jsonPath",
        "starting with .",
    ),
    (
        lambda c: c.update(apiVersion="apiextensions.k8s.io/v1beta1"),
        "apiVersion",
        "removed in Kubernetes 1.22",
    ),
    (
        lambda c: (
            c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].update(nullable=True)
            or c["spec"]["versions"][0].update(subresources={"status": {}})
        ),
        f"{ROOT}.nullable",
        "if the status subresource is enabled",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"), CRD_CASES, ids=[c[1] + ":" + c[2][:20] for c in CRD_CASES]
)
def test_crd_violation_is_reported(mutate, path: str, fragment: str) -> None:
    crd = copy.deepcopy(crd_with(spec_schema({"type": "object"})))
    mutate(crd)
    findings = check_crd(crd)
    assert any(f.path == path and fragment in f.message for f in findings), [
        str(f) for f in findings
    ]


def test_not_a_mapping() -> None:
    assert [f.path for f in check_crd(["not", "a", "crd"])] == ["<root>"]


def test_root_validations_and_preserve_unknown_fields_with_status() -> None:
    """Both are allowed at the root of a schema whose version has a status subresource
    (apiextensions' allowedFieldsAtRootSchema lists them)."""
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.size() < 40", "message": "name too long"}
        ],
        "properties": {"spec": {"type": "object"}, "status": {"type": "object"}},
    }
    assert check_crd(crd_with(schema, subresources={"status": {}})) == []


def test_empty_string_default_is_not_reported() -> None:
    """kube-apiserver accepts ``default: ""``: no finding (an old local build did not)."""
    spec = {"type": "object", "properties": {"notes": {"type": "string", "default": ""}}}
    assert check_crd(crd_with(spec_schema(spec))) == []


@pytest.mark.parametrize(
    "pattern",
    [
        # a Gateway-API-style HTTP header name: *+ and the rest are inside a class
        r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$",
        r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$",
        r"^[(?=)]+$",
        r"^\(?=x$",
        r"^\p{L}[\p{L}\p{N}]*\z",  # Go-only syntax: Python's re cannot judge it
    ],
)
def test_patterns_go_accepts(pattern: str) -> None:
    spec = {"type": "object", "properties": {"name": {"type": "string", "pattern": pattern}}}
    assert check_crd(crd_with(spec_schema(spec))) == []
