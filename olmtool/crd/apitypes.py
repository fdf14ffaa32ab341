"""The ``apiextensions.k8s.io/v1`` Go types a CustomResourceDefinition is decoded into.

The kube-apiserver decodes a CRD into these structs before validating anything: a value
of the wrong JSON type (``type: 5``, ``pattern: [a]``, a printer column that is a string)
fails there, and the CRD is refused with Go's "cannot unmarshal" message. Object metadata
is left to the checks that own it (``content/metadata`` in a bundle); status is ignored.
"""

from __future__ import annotations

from olmtool.findings import Problem
from olmtool.godecode import (
    ANY,
    BOOL,
    BYTES,
    FLOAT64,
    INT32,
    INT64,
    STRING,
    GoType,
    decode,
    either,
    map_of,
    slice_of,
    struct,
)

__all__ = ["CUSTOM_RESOURCE_DEFINITION", "JSON_SCHEMA_PROPS", "decode_crd", "decode_schema"]

STRINGS = slice_of(STRING)
JSON = GoType("v1.JSON", "any", custom=True)


def _schema_fields() -> dict[str, GoType]:
    return {
        "id": STRING,
        "$schema": STRING,
        "$ref": STRING,
        "description": STRING,
        "type": STRING,
        "format": STRING,
        "title": STRING,
        "default": JSON,
        "maximum": FLOAT64,
        "exclusiveMaximum": BOOL,
        "minimum": FLOAT64,
        "exclusiveMinimum": BOOL,
        "maxLength": INT64,
        "minLength": INT64,
        "pattern": STRING,
        "maxItems": INT64,
        "minItems": INT64,
        "uniqueItems": BOOL,
        "multipleOf": FLOAT64,
        "enum": slice_of(JSON),
        "maxProperties": INT64,
        "minProperties": INT64,
        "required": STRINGS,
        "items": SCHEMA_OR_ARRAY,
        "allOf": slice_of(JSON_SCHEMA_PROPS),
        "oneOf": slice_of(JSON_SCHEMA_PROPS),
        "anyOf": slice_of(JSON_SCHEMA_PROPS),
        "not": JSON_SCHEMA_PROPS,
        "properties": map_of(JSON_SCHEMA_PROPS),
        "additionalProperties": SCHEMA_OR_BOOL,
        "patternProperties": map_of(JSON_SCHEMA_PROPS),
        "dependencies": map_of(SCHEMA_OR_STRINGS),
        "additionalItems": SCHEMA_OR_BOOL,
        "definitions": map_of(JSON_SCHEMA_PROPS),
        "externalDocs": struct("v1.ExternalDocumentation", {"description": STRING, "url": STRING}),
        "example": JSON,
        "nullable": BOOL,
        "x-kubernetes-preserve-unknown-fields": BOOL,
        "x-kubernetes-embedded-resource": BOOL,
        "x-kubernetes-int-or-string": BOOL,
        "x-kubernetes-list-map-keys": STRINGS,
        "x-kubernetes-list-type": STRING,
        "x-kubernetes-map-type": STRING,
        "x-kubernetes-validations": slice_of(VALIDATION_RULE),
    }


JSON_SCHEMA_PROPS = struct("v1.JSONSchemaProps", _schema_fields)
# Their UnmarshalJSON keeps a schema for an object, a list for an array (OrArray) and
# silently nothing for other JSON; OrBool decodes anything but an object as a bool.
SCHEMA_OR_ARRAY = either(
    "v1.JSONSchemaPropsOrArray",
    {"object": JSON_SCHEMA_PROPS, "array": slice_of(JSON_SCHEMA_PROPS), "other": "ignored"},
)
SCHEMA_OR_BOOL = either(
    "v1.JSONSchemaPropsOrBool",
    {"object": JSON_SCHEMA_PROPS, "other": GoType("bool", "bool", custom=True)},
)
SCHEMA_OR_STRINGS = either(
    "v1.JSONSchemaPropsOrStringArray",
    {"object": JSON_SCHEMA_PROPS, "array": STRINGS, "other": "ignored"},
)
VALIDATION_RULE = struct(
    "v1.ValidationRule",
    {
        "rule": STRING,
        "message": STRING,
        "messageExpression": STRING,
        "reason": STRING,
        "fieldPath": STRING,
        "optionalOldSelf": BOOL,
    },
)

NAMES = struct(
    "v1.CustomResourceDefinitionNames",
    {
        "plural": STRING,
        "singular": STRING,
        "shortNames": STRINGS,
        "kind": STRING,
        "listKind": STRING,
        "categories": STRINGS,
    },
)
SERVICE_REFERENCE = struct(
    "v1.ServiceReference",
    {"namespace": STRING, "name": STRING, "path": STRING, "port": INT32},
)
CONVERSION = struct(
    "v1.CustomResourceConversion",
    {
        "strategy": STRING,
        "webhook": struct(
            "v1.WebhookConversion",
            {
                "clientConfig": struct(
                    "v1.WebhookClientConfig",
                    {"url": STRING, "service": SERVICE_REFERENCE, "caBundle": BYTES},
                ),
                "conversionReviewVersions": STRINGS,
            },
        ),
    },
)
VERSION = struct(
    "v1.CustomResourceDefinitionVersion",
    {
        "name": STRING,
        "served": BOOL,
        "storage": BOOL,
        "deprecated": BOOL,
        "deprecationWarning": STRING,
        "schema": struct("v1.CustomResourceValidation", {"openAPIV3Schema": JSON_SCHEMA_PROPS}),
        "subresources": struct(
            "v1.CustomResourceSubresources",
            {
                "status": struct("v1.CustomResourceSubresourceStatus", {}),
                "scale": struct(
                    "v1.CustomResourceSubresourceScale",
                    {
                        "specReplicasPath": STRING,
                        "statusReplicasPath": STRING,
                        "labelSelectorPath": STRING,
                    },
                ),
            },
        ),
        "additionalPrinterColumns": slice_of(
            struct(
                "v1.CustomResourceColumnDefinition",
                {
                    "name": STRING,
                    "type": STRING,
                    "format": STRING,
                    "description": STRING,
                    "priority": INT32,
                    "jsonPath": STRING,
                },
            )
        ),
        "selectableFields": slice_of(struct("v1.SelectableField", {"jsonPath": STRING})),
    },
)
CUSTOM_RESOURCE_DEFINITION = struct(
    "v1.CustomResourceDefinition",
    {
        "apiVersion": STRING,
        "kind": STRING,
        "metadata": ANY,
        "spec": struct(
            "v1.CustomResourceDefinitionSpec",
            {
                "group": STRING,
                "names": NAMES,
                "scope": STRING,
                "versions": slice_of(VERSION),
                "conversion": CONVERSION,
                "preserveUnknownFields": BOOL,
            },
        ),
        "status": ANY,
    },
)


def decode_crd(crd: dict) -> tuple[dict, list[Problem]]:
    """The CRD as the apiserver holds it after decoding, and what it could not decode."""
    result = decode(crd, CUSTOM_RESOURCE_DEFINITION)
    return result.value or {}, result.problems


def decode_schema(schema: object) -> tuple[dict, list[Problem]]:
    """One openAPIV3Schema decoded as a JSONSchemaProps (paths relative to it)."""
    result = decode(schema, JSON_SCHEMA_PROPS)
    return result.value if isinstance(result.value, dict) else {}, result.problems
