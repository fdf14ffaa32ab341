"""Structural-schema and apiextensions rules for one ``openAPIV3Schema`` (what the
kube-apiserver checks in a CRD version's schema), walked node by node."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from olmtool.crd.markers import (
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    MAP_TYPE,
    PRESERVE_UNKNOWN,
    VALIDATIONS,
)
from olmtool.crd.re2 import python_can_judge, re2_problem
from olmtool.crd.validation import default_problems
from olmtool.crd.violations import Problem
from olmtool.crd.violations import quote as _q

SCHEMA_KEYWORDS = frozenset(
    {
        "id", "$schema", "$ref", "description", "type", "format", "title", "default", "maximum",
        "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
        "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
        "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
        "additionalProperties", "patternProperties", "dependencies", "additionalItems",
        "definitions", "externalDocs", "example", "nullable", PRESERVE_UNKNOWN, EMBEDDED_RESOURCE,
        INT_OR_STRING, LIST_MAP_KEYS, LIST_TYPE, MAP_TYPE, VALIDATIONS,
    }
)  # fmt: skip
FORBIDDEN_KEYWORDS = {
    "id": "id is not supported",
    "$ref": "$ref is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "additionalItems": "additionalItems is not supported",
    "patternProperties": "patternProperties is not supported",
}
# Inside allOf/anyOf/oneOf/not only value validations may appear.
FORBIDDEN_IN_JUNCTORS = {
    "type": "must be empty to be structural",
    "additionalProperties": "must be undefined to be structural",
    "default": "must be undefined to be structural",
    "title": "must be empty to be structural",
    "description": "must be empty to be structural",
    "nullable": "must be false to be structural",
    PRESERVE_UNKNOWN: "must be false to be structural",
    EMBEDDED_RESOURCE: "must be false to be structural",
    INT_OR_STRING: "must be false to be structural",
    LIST_MAP_KEYS: "must be empty to be structural",
    LIST_TYPE: "must be undefined to be structural",
}
JUNCTORS = ("allOf", "anyOf", "oneOf")
VALID_TYPES = ("array", "boolean", "integer", "number", "object", "string")
INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]
CEL_REASONS = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)


class SchemaChecker:
    """Walks one openAPIV3Schema; ``level`` is root, item or field as in apiextensions."""

    def check_root(self, schema: Any, path: str) -> Iterator[Problem]:
        if not isinstance(schema, dict):
            yield Problem(path, "must be a schema object")
            return
        yield from self.check(schema, path, "root", in_resource_meta=False)
        yield from self._root_metadata(schema, path)

    def check(
        self, node: Any, path: str, level: str, *, in_resource_meta: bool
    ) -> Iterator[Problem]:
        if not isinstance(node, dict):
            yield Problem(path, "must be a schema object")
            return
        yield from self._keywords(node, path)
        yield from self._types(node, path, level)
        yield from self._extensions(node, path)
        yield from self._junctors(node, path)
        yield from self._defaults(node, path, level, in_resource_meta)
        yield from self._children(node, path, level)

    def _keywords(self, node: dict[str, Any], path: str) -> Iterator[Problem]:
        for key in sorted(node):
            if key in FORBIDDEN_KEYWORDS:
                yield Problem(f"{path}.{key}", f"Forbidden: {FORBIDDEN_KEYWORDS[key]}")
            elif key not in SCHEMA_KEYWORDS:
                yield Problem(
                    f"{path}.{key}",
                    "unknown field: the apiserver ignores it (misspelled keyword?)",
                    "warning",
                )
        if node.get("uniqueItems") is True:
            yield Problem(
                f"{path}.uniqueItems",
                "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic (use x-kubernetes-list-type: set)",
            )
        extra = node.get("additionalProperties")
        if extra is False:
            yield Problem(
                f"{path}.additionalProperties",
                "Forbidden: additionalProperties cannot be set to false",
            )
        elif extra is not None and node.get("properties"):
            yield Problem(
                f"{path}.additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            )
        if isinstance(node.get("items"), list):
            yield Problem(
                f"{path}.items", "Forbidden: items must be a schema object and not an array"
            )
        for bound in ("exclusiveMinimum", "exclusiveMaximum"):
            if bound in node and not isinstance(node[bound], bool):
                yield Problem(
                    f"{path}.{bound}",
                    f"Invalid value: {node[bound]!r}: must be a boolean (OpenAPI v3.0), with the bound in {bound.replace('exclusiveM', 'm')}",
                )
        pattern = node.get("pattern")
        if pattern is not None:
            yield from check_pattern(pattern, f"{path}.pattern")
        required = node.get("required")
        if required is not None and not (
            isinstance(required, list) and all(isinstance(r, str) for r in required)
        ):
            yield Problem(f"{path}.required", "Invalid value: must be a list of property names")

    def _types(self, node: dict[str, Any], path: str, level: str) -> Iterator[Problem]:
        node_type = node.get("type", "")
        int_or_string = node.get(INT_OR_STRING) is True
        preserve = node.get(PRESERVE_UNKNOWN) is True
        embedded = node.get(EMBEDDED_RESOURCE) is True
        if node_type == "null":
            yield Problem(
                f"{path}.type", "Forbidden: type cannot be set to null (use nullable: true)"
            )
        elif node_type and node_type not in VALID_TYPES:
            yield Problem(
                f"{path}.type",
                f"Unsupported value: {_q(node_type)}: supported values: {', '.join(map(_q, VALID_TYPES))}",
            )
        if embedded and node_type != "object":
            yield Problem(
                f"{path}.type",
                "Required value: must be object if x-kubernetes-embedded-resource is true",
            )
        elif not node_type and not int_or_string and not preserve:
            where = {
                "root": "at the root",
                "item": "for specified array items",
                "field": "for specified object fields",
            }[level]
            yield Problem(f"{path}.type", f"Required value: must not be empty {where}")
        if int_or_string and node_type:
            yield Problem(
                f"{path}.type",
                f"Invalid value: {_q(node_type)}: must be empty if x-kubernetes-int-or-string is true",
            )
        if node_type == "array" and "items" not in node:
            yield Problem(f"{path}.items", "Required value: must be specified")
        if level == "root":
            if node_type and node_type != "object":
                yield Problem(
                    f"{path}.type", f"Invalid value: {_q(node_type)}: must be object at the root"
                )
            if "additionalProperties" in node:
                yield Problem(
                    f"{path}.additionalProperties", "Forbidden: must not be used at the root"
                )
            if embedded:
                yield Problem(
                    f"{path}.{EMBEDDED_RESOURCE}", "Forbidden: must not be used at the root"
                )
        if embedded and "additionalProperties" in node:
            yield Problem(
                f"{path}.additionalProperties",
                "Forbidden: must not be used if x-kubernetes-embedded-resource is set",
            )
        if embedded and not preserve and not node.get("properties"):
            yield Problem(
                f"{path}.properties",
                "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            )
        if level == "root" or embedded:
            properties = node.get("properties") or {}
            for key, wanted in (
                ("kind", "string"),
                ("apiVersion", "string"),
                ("metadata", "object"),
            ):
                child = properties.get(key)
                if isinstance(child, dict) and child.get("type") != wanted:
                    yield Problem(
                        f"{path}.properties[{key}].type",
                        f"Invalid value: {_q(child.get('type'))}: must be {wanted}",
                    )

    def _extensions(self, node: dict[str, Any], path: str) -> Iterator[Problem]:
        node_type = node.get("type", "")
        if node.get(INT_OR_STRING) and node.get(PRESERVE_UNKNOWN):
            yield Problem(
                f"{path}.{PRESERVE_UNKNOWN}",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            )
        if node.get(INT_OR_STRING) and node.get(EMBEDDED_RESOURCE):
            yield Problem(
                f"{path}.{EMBEDDED_RESOURCE}",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            )
        if PRESERVE_UNKNOWN in node and node[PRESERVE_UNKNOWN] is not True:
            yield Problem(
                f"{path}.{PRESERVE_UNKNOWN}", "Invalid value: false: must be true or undefined"
            )
        map_type = node.get(MAP_TYPE)
        if map_type is not None:
            if node_type != "object":
                yield Problem(
                    f"{path}.type",
                    "Required value: must be object if x-kubernetes-map-type is specified",
                )
            if map_type not in ("atomic", "granular"):
                yield Problem(
                    f"{path}.{MAP_TYPE}",
                    f'Unsupported value: {_q(map_type)}: supported values: "atomic", "granular"',
                )
        yield from self._list_type(node, path)
        yield from self._cel_rules(node, path)

    def _list_type(self, node: dict[str, Any], path: str) -> Iterator[Problem]:
        list_type = node.get(LIST_TYPE)
        keys = node.get(LIST_MAP_KEYS) or []
        items = node.get("items") if isinstance(node.get("items"), dict) else None
        if list_type is not None and node.get("type") != "array":
            yield Problem(
                f"{path}.type",
                "Required value: must be array if x-kubernetes-list-type is specified",
            )
        if list_type is not None and list_type not in ("atomic", "set", "map"):
            yield Problem(
                f"{path}.{LIST_TYPE}",
                f'Unsupported value: {_q(list_type)}: supported values: "atomic", "map", "set"',
            )
        if keys and list_type != "map":
            yield Problem(
                f"{path}.{LIST_TYPE}",
                "Invalid value: must be map if x-kubernetes-list-map-keys is non-empty",
            )
        if list_type == "set" and items is not None:
            if items.get("type") == "object" and items.get(MAP_TYPE) != "atomic":
                yield Problem(
                    f"{path}.items.{MAP_TYPE}",
                    "Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set",
                )
            if items.get("type") == "array" and items.get(LIST_TYPE, "atomic") != "atomic":
                yield Problem(
                    f"{path}.items.{LIST_TYPE}",
                    "Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set",
                )
        if list_type != "map":
            return
        if not keys:
            yield Problem(
                f"{path}.{LIST_MAP_KEYS}",
                "Required value: must not be empty if x-kubernetes-list-type is map",
            )
        if items is None:
            yield Problem(
                f"{path}.items",
                "Required value: must have a schema if x-kubernetes-list-type is map",
            )
            return
        if items.get("type") != "object":
            yield Problem(
                f"{path}.items.type",
                f"Invalid value: {_q(items.get('type'))}: must be object if parent array's x-kubernetes-list-type is map",
            )
            return
        properties = items.get("properties") or {}
        required = set(items.get("required") or [])
        if len(set(keys)) != len(keys):
            yield Problem(
                f"{path}.{LIST_MAP_KEYS}", "Invalid value: must not contain duplicate entries"
            )
        for key in keys:
            key_schema = properties.get(key)
            if key_schema is None:
                yield Problem(
                    f"{path}.{LIST_MAP_KEYS}",
                    f"Invalid value: {_q(key)}: entries must all be names of item properties",
                )
            elif key_schema.get("type") in ("array", "object"):
                yield Problem(
                    f"{path}.items.properties[{key}].type",
                    "Invalid value: must be a scalar type if parent array's x-kubernetes-list-type is map",
                )
            elif key not in required and "default" not in key_schema:
                yield Problem(
                    f"{path}.items.properties[{key}]",
                    "Invalid value: map list keys must be required or have a default value",
                )

    def _cel_rules(self, node: dict[str, Any], path: str) -> Iterator[Problem]:
        rules, problems = _list_at(node, VALIDATIONS, path, "rules")
        yield from problems
        for index, rule in enumerate(rules):
            base = f"{path}.{VALIDATIONS}[{index}]"
            if not isinstance(rule, dict):
                yield Problem(base, "Invalid value: must be a mapping with a rule")
                continue
            text = str(rule.get("rule") or "").strip()
            message = rule.get("message")
            if not text:
                yield Problem(f"{base}.rule", "Required value: rule is not specified")
            if message is not None and not str(message).strip():
                yield Problem(
                    f"{base}.message", "Invalid value: message must be non-empty if specified"
                )
            elif message is not None and "\n" in str(message).strip():
                yield Problem(
                    f"{base}.message", "Invalid value: message must not contain line breaks"
                )
            elif "\n" in text and not message:
                yield Problem(
                    f"{base}.message",
                    "Required value: message must be specified if rule contains line breaks",
                )
            reason = rule.get("reason")
            if reason is not None and reason not in CEL_REASONS:
                yield Problem(
                    f"{base}.reason",
                    f"Unsupported value: {_q(reason)}: supported values: {', '.join(map(_q, CEL_REASONS))}",
                )
            for key in sorted(
                set(rule)
                - {"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"}
            ):
                yield Problem(f"{base}.{key}", "unknown field: the apiserver ignores it", "warning")

    def _junctors(self, node: dict[str, Any], path: str) -> Iterator[Problem]:
        skip_any_of = node.get("anyOf") == INT_OR_STRING_ANY_OF
        for junctor in JUNCTORS:
            branches, problems = _list_at(node, junctor, path, "schemas")
            yield from problems
            for index, branch in enumerate(branches):
                if junctor == "anyOf" and skip_any_of:
                    continue
                if (
                    junctor == "allOf"
                    and index == 0
                    and isinstance(branch, dict)
                    and branch.get("anyOf") == INT_OR_STRING_ANY_OF
                ):
                    yield from self._nested(dict(branch, anyOf=[]), f"{path}.allOf[0]", node, path)
                    continue
                yield from self._nested(branch, f"{path}.{junctor}[{index}]", node, path)
        if "not" in node:
            yield from self._nested(node["not"], f"{path}.not", node, path)

    def _nested(
        self, branch: Any, path: str, structural: dict[str, Any] | None, structural_path: str
    ) -> Iterator[Problem]:
        """Value validations under a junctor: no structure of their own, and nothing the
        structural part of the schema does not also specify (completeness)."""
        if not isinstance(branch, dict):
            yield Problem(path, "must be a schema object")
            return
        for key, message in FORBIDDEN_IN_JUNCTORS.items():
            if key in branch and branch[key] not in (None, False, "", []):
                yield Problem(f"{path}.{key}", f"Forbidden: {message}")
        if structural is None:
            yield Problem(structural_path, f"Required value: because it is defined in {path}")
            structural = {}
        properties = branch.get("properties") or {}
        if "metadata" in properties:
            yield Problem(
                f"{path}.properties[metadata]",
                "Forbidden: must not be specified in a nested context",
            )
        for name, child in properties.items():
            yield from self._nested(
                child,
                f"{path}.properties[{name}]",
                (structural.get("properties") or {}).get(name),
                f"{structural_path}.properties[{name}]",
            )
        if isinstance(branch.get("items"), dict):
            yield from self._nested(
                branch["items"],
                f"{path}.items",
                structural.get("items"),
                f"{structural_path}.items",
            )
        for junctor in JUNCTORS:
            for index, sub in enumerate(branch.get(junctor) or []):
                yield from self._nested(
                    sub, f"{path}.{junctor}[{index}]", structural, structural_path
                )
        if "not" in branch:
            yield from self._nested(branch["not"], f"{path}.not", structural, structural_path)

    def _defaults(
        self, node: dict[str, Any], path: str, level: str, in_resource_meta: bool
    ) -> Iterator[Problem]:
        if "default" not in node:
            return
        if level == "root":
            yield Problem(f"{path}.default", "Forbidden: must not be set at the root")
        elif in_resource_meta:
            yield Problem(f"{path}.default", "Forbidden: must not be set in top-level metadata")
        else:
            for problem in default_problems(node):
                yield Problem(f"{path}.default", f"Invalid value: {problem}")

    def _children(self, node: dict[str, Any], path: str, level: str) -> Iterator[Problem]:
        for name, child in (node.get("properties") or {}).items():
            meta = level == "root" and name in ("metadata", "apiVersion", "kind")
            yield from self.check(
                child, f"{path}.properties[{name}]", "field", in_resource_meta=meta
            )
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            yield from self.check(
                extra, f"{path}.additionalProperties", "field", in_resource_meta=False
            )
        items = node.get("items")
        if isinstance(items, dict):
            yield from self.check(items, f"{path}.items", "item", in_resource_meta=False)

    def _root_metadata(self, schema: dict[str, Any], path: str) -> Iterator[Problem]:
        metadata = (schema.get("properties") or {}).get("metadata")
        if not isinstance(metadata, dict):
            return
        allowed = {"type", "properties"}
        extra_keys = set(metadata) - allowed
        props = metadata.get("properties") or {}
        if extra_keys or set(props) - {"name", "generateName"}:
            yield Problem(
                f"{path}.properties[metadata]",
                "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            )


def _list_at(
    node: dict[str, Any], key: str, path: str, what: str
) -> tuple[list[Any], list[Problem]]:
    """The list under ``key`` (empty when unset), or no items and why it is not a list."""
    value = node.get(key)
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [Problem(f"{path}.{key}", f"Invalid value: must be a list of {what}")]
    return value, []


def check_pattern(pattern: Any, path: str) -> Iterator[Problem]:
    if not isinstance(pattern, str):
        yield Problem(path, "Invalid value: must be a string")
        return
    problem = re2_problem(pattern)
    if problem:
        yield Problem(
            path,
            f"Invalid value: {_q(pattern)}: {problem}, which RE2 (Go's regexp, the apiserver's) does not support",
        )
        return
    if not python_can_judge(pattern):
        return  # Go-only syntax (\p{L}, \z, ...): Python's re cannot tell
    try:
        re.compile(pattern)
    except re.error as exc:
        yield Problem(
            path,
            f"Invalid value: {_q(pattern)}: must be a valid regular expression, but isn't: {exc}",
        )
