"""godecode: plain data decoded into Go types as encoding/json does, with Go's words."""

from __future__ import annotations

from typing import Any

import pytest

from olmtool.crd.apitypes import decode_crd
from olmtool.godecode import (
    ANY,
    BOOL,
    BYTES,
    FLOAT64,
    INT32,
    INT64,
    INT_OR_STRING,
    QUANTITY,
    STRING,
    GoType,
    decode,
    either,
    go_list,
    go_map,
    go_str,
    json_kind,
    map_of,
    slice_of,
    struct,
)

NAMES = struct("v1.Names", {"plural": STRING, "shortNames": slice_of(STRING)})
SPEC = struct(
    "v1.Spec",
    {
        "names": NAMES,
        "group": STRING,
        "replicas": INT32,
        "size": INT64,
        "ratio": FLOAT64,
        "enabled": BOOL,
        "labels": map_of(STRING),
        "raw": ANY,
        "port": INT_OR_STRING,
        "memory": QUANTITY,
        "ca": BYTES,
    },
)


def messages(value: Any, go_type=SPEC) -> list[str]:
    return [f"{p.path}: {p.message}" for p in decode(value, go_type).problems]


def test_well_typed_data_decodes_unchanged():
    value = {
        "names": {"plural": "etcds", "shortNames": ["e"]},
        "group": "g",
        "replicas": 3,
        "size": 2**40,
        "ratio": 0.5,
        "enabled": False,
        "labels": {"a": "b"},
        "raw": [{"anything": [1, None]}],
        "port": "http",
        "memory": "1Gi",
        "ca": "aGVsbG8=\n",
        "unknown": {"kept": True},
    }
    result = decode(value, SPEC)
    assert result.problems == []
    assert result.value == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"group": 5}, "group: cannot unmarshal number into Go struct field Spec.group of type string"),
        ({"enabled": "true"}, "enabled: cannot unmarshal string into Go struct field Spec.enabled of type bool"),
        ({"names": " "}, "names: cannot unmarshal string into Go struct field Spec.names of type v1.Names"),
        ({"names": {"shortNames": [{"a": 1}]}}, "names.shortNames[0]: cannot unmarshal object into Go struct field Names.names.shortNames of type string"),
        ({"labels": ["a"]}, "labels: cannot unmarshal array into Go struct field Spec.labels of type map[string]string"),
        ({"labels": {"a": True}}, "labels[a]: cannot unmarshal bool into Go struct field Spec.labels of type string"),
        ({"replicas": 2.5}, "replicas: cannot unmarshal number 2.5 into Go struct field Spec.replicas of type int32"),
        ({"replicas": 2**31}, "replicas: cannot unmarshal number 2147483648 into Go struct field Spec.replicas of type int32"),
        ({"ratio": "x"}, "ratio: cannot unmarshal string into Go struct field Spec.ratio of type float64"),
        ({"port": 1.5}, "port: cannot unmarshal number 1.5 into Go value of type int32"),
        ({"port": [1]}, "port: cannot unmarshal array into Go value of type int32"),
        ({"memory": "lots"}, "memory: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ({"ca": "not base64!"}, "ca: illegal base64 data at input byte 3"),
        ({"ca": 5}, "ca: cannot unmarshal number into Go struct field Spec.ca of type []uint8"),
    ],
)  # fmt: skip
def test_wrong_types_in_go_words(value: dict, expected: str):
    assert messages(value) == [expected]


def test_go_keeps_the_zero_value():
    """Wrong types and nulls leave struct fields unset and list items at their zero value."""
    value = {"group": 5, "names": {"shortNames": ["a", 5, None]}, "labels": None, "replicas": 3.0}
    assert decode(value, SPEC).value == {"names": {"shortNames": ["a", "", ""]}, "replicas": 3}


def test_either_picks_by_json_kind_and_may_drop_silently():
    schema = struct("v1.Schema", {"type": STRING})
    items = either("v1.OrArray", {"object": schema, "array": slice_of(schema), "other": "ignored"})
    extra = either("v1.OrBool", {"object": schema, "other": GoType("bool", "bool", custom=True)})
    holder = struct("v1.Holder", {"items": items, "extra": extra})
    assert decode({"items": 5}, holder).value == {}  # Go's UnmarshalJSON keeps nothing
    assert messages({"items": {"type": 5}}, holder) == [
        "items.type: cannot unmarshal number into Go struct field Schema.type of type string"
    ]
    assert messages({"items": [{"type": []}]}, holder) == [
        "items[0].type: cannot unmarshal array into Go struct field Schema.type of type string"
    ]
    assert messages({"extra": "no"}, holder) == [
        "extra: cannot unmarshal string into Go value of type bool"
    ]
    assert decode({"extra": True}, holder).value == {"extra": True}


def test_crd_paths_name_map_keys_as_the_apiserver_does():
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": "not checked here",
        "spec": {
            "versions": [
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "properties": {"spec": {"properties": {"size": {"type": 5}}}}
                        }
                    },
                    "additionalPrinterColumns": [None],
                }
            ]
        },
    }
    decoded, problems = decode_crd(crd)
    assert [(p.path, p.message) for p in problems] == [
        (
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type",
            "cannot unmarshal number into Go struct field JSONSchemaProps.spec.versions.schema."
            "openAPIV3Schema.properties.properties.type of type string",
        )
    ]
    assert decoded["spec"]["versions"][0]["additionalPrinterColumns"] == [{}]


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "null"), (True, "bool"), (1, "number"), (1.5, "number"), ("", "string"), ([], "array"), ({}, "object")],
)  # fmt: skip
def test_json_kind(value: Any, kind: str):
    assert json_kind(value) == kind


def test_field_readers_give_go_zero_values():
    assert go_str(5) == "" and go_str("a") == "a"
    assert go_list("a") == [] and go_list([1]) == [1]
    assert go_map([1]) == {} and go_map({"a": 1}) == {"a": 1}
