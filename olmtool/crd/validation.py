"""Validating objects against a CRD's schema the way the kube-apiserver does.

The apiserver first prunes (drops fields the schema does not declare, unless
``x-kubernetes-preserve-unknown-fields``, and nulls of non-nullable fields), then
validates against the OpenAPI v3.0 schema. We do the same with ``jsonschema`` (draft 4
has OpenAPI 3.0's boolean ``exclusiveMinimum``). CEL rules (``x-kubernetes-validations``)
are not evaluated here.

>>> report = validate_object(crd_manifest, {"apiVersion": "etcd.olmtool.dev/v1beta1",
...     "kind": "EtcdCluster", "metadata": {"name": "a"}, "spec": {"replicas": 4}})
>>> report.errors
['spec.replicas: 4 is not one of [1, 3, 5, 7]']
"""

from __future__ import annotations

import ast
import base64
import copy
import datetime
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from olmtool.crd.markers import (
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    PRESERVE_UNKNOWN,
)

_OPENAPI_ONLY = ("nullable", "example", "externalDocs", "x-kubernetes-")
# Keywords the apiserver refuses in a CRD schema (the CRD checks report them): left out,
# since jsonschema would act on them ($ref and id resolve references).
_REFUSED = frozenset(
    {"id", "$schema", "$ref", "definitions", "dependencies", "additionalItems", "patternProperties"}
)
_TYPES = frozenset({"array", "boolean", "integer", "number", "object", "string"})


@dataclass(frozen=True)
class SchemaViolation:
    """One value a schema rejects. ``path`` is the offending field in apiserver notation
    (``spec.webhooks[0].sideEffects``; for a missing required field, that field itself);
    ``at`` is the node jsonschema judged (the parent object for ``required``); ``keyword``
    the failing schema keyword (``required``, ``type``, ``enum``, ...)."""

    path: str
    at: str
    keyword: str
    message: str  # jsonschema's wording, as validate_against reports it after ``at``
    value: Any = None  # the offending value (for enum and type problems)
    expected: Any = None  # the keyword's value: the enum's values, anyOf's branches, ...

    @property
    def text(self) -> str:
        return f"{self.at}: {self.message}" if self.at else self.message


@dataclass
class ObjectReport:
    """What the apiserver would say about an object: validation errors and pruned fields
    (``violations``: the errors with their paths, in the same order)."""

    errors: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    violations: list[SchemaViolation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def openapi_to_jsonschema(schema: dict[str, Any]) -> dict[str, Any]:
    """A draft-4 JSON Schema with the same meaning as a CRD's OpenAPI v3.0 schema."""
    converted = _convert(schema)
    converted["$schema"] = "http://json-schema.org/draft-04/schema#"
    return converted


def _convert(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` is a decoded schema (:mod:`.apitypes`); what the apiserver would refuse in
    it (the CRD checks report that) is left out rather than given to jsonschema."""
    out = {
        k: v
        for k, v in node.items()
        if not k.startswith(_OPENAPI_ONLY) and k != "default" and k not in _REFUSED
    }
    if out.get("type") not in _TYPES:
        out.pop("type", None)
    if not isinstance(out.get("multipleOf"), (int, float)) or out["multipleOf"] <= 0:
        out.pop("multipleOf", None)
    if not isinstance(node.get("items"), dict):
        out.pop("items", None)
    if "properties" in node:
        out["properties"] = {name: _convert(child) for name, child in node["properties"].items()}
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(node["additionalProperties"])
    if isinstance(node.get("items"), dict):
        out["items"] = _convert(node["items"])
    for junctor in ("allOf", "anyOf", "oneOf"):
        if junctor in node:
            out[junctor] = [_convert(branch) for branch in node[junctor]]
    if "not" in node:
        out["not"] = _convert(node["not"])
    if node.get(INT_OR_STRING):
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get(EMBEDDED_RESOURCE):
        out["required"] = sorted({*out.get("required", []), "apiVersion", "kind"})
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string", "minLength": 1})
        props.setdefault("kind", {"type": "string", "minLength": 1})
        props.setdefault("metadata", {"type": "object"})
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    return out


def prune(value: Any, schema: dict[str, Any], path: str = "") -> tuple[Any, list[str]]:
    """Drop what the apiserver would drop; returns the pruned copy and the dropped paths."""
    pruned, dropped = _pruned(value, schema, path)
    return copy.deepcopy(pruned), dropped


def _pruned(value: Any, schema: dict[str, Any], path: str) -> tuple[Any, list[str]]:
    """Like :func:`prune`, without copying what is kept whole: the result shares subtrees
    with ``value`` (new mappings and lists only where something may be dropped)."""
    dropped: list[str] = []
    return _prune(value, schema, path, dropped, root=True), dropped


def _prune(
    value: Any, schema: dict[str, Any], path: str, dropped: list[str], *, root: bool = False
) -> Any:
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keeps_unknown = schema.get(PRESERVE_UNKNOWN) is True
        implicit = (
            ("apiVersion", "kind", "metadata") if root or schema.get(EMBEDDED_RESOURCE) else ()
        )
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if key in implicit:
                kept[key] = item  # apiVersion, kind and metadata: validated as ObjectMeta
                continue
            child_schema = properties.get(key)
            if child_schema is None and isinstance(extra, dict):
                child_schema = extra
            if child_schema is None:
                if keeps_unknown or extra is True:
                    kept[key] = item
                else:
                    dropped.append(join_path(path, [key]))
                continue
            if item is None and not child_schema.get("nullable"):
                continue
            kept[key] = _prune(item, child_schema, join_path(path, [key]), dropped)
        return kept
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [
            _prune(item, schema["items"], f"{path}[{i}]", dropped) for i, item in enumerate(value)
        ]
    return value


def validate_against(value: Any, schema: dict[str, Any], path: str = "") -> ObjectReport:
    """Prune, then validate ``value`` against an OpenAPI v3.0 schema node. Every violation
    is reported (jsonschema's ``iter_errors``), not just the first."""
    pruned, dropped = _pruned(value, schema, path)
    violations = [
        SchemaViolation(where, where, "x-kubernetes-list-type", message)
        for where, message in duplicate_list_entries(pruned, schema, path)
    ]
    violations += [_violation(error, path) for error in compiled(schema).iter_errors(pruned)]
    violations.sort(key=lambda v: v.text)
    return ObjectReport(errors=[v.text for v in violations], pruned=dropped, violations=violations)


def compiled(schema: dict[str, Any]) -> Any:
    """The jsonschema validator of an OpenAPI schema node, compiled once per process for as
    long as the node is cached (the entry holds the node, so its id is not reused)."""
    key = id(schema)
    entry = _COMPILED.get(key)
    if entry is None or entry[0] is not schema:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.pop(next(iter(_COMPILED)))  # the oldest entry
        validator = _OpenAPIValidator(openapi_to_jsonschema(schema), format_checker=_FORMATS)
        entry = _COMPILED[key] = (schema, validator)
    return entry[1]


_COMPILED: dict[int, tuple[dict[str, Any], Any]] = {}
_COMPILED_MAX = 256


def _violation(error: ValidationError, base: str) -> SchemaViolation:
    at = join_path(base, error.absolute_path)
    if error.validator == "required":
        name = _required_name(error.message)
        return SchemaViolation(join_path(at, [name]), at, "required", error.message)
    return SchemaViolation(
        at, at, str(error.validator), error.message, error.instance, error.validator_value
    )


def _required_name(message: str) -> str:
    """The property of jsonschema's "'name' is a required property"."""
    quoted = message.removesuffix(" is a required property")
    try:
        name = ast.literal_eval(quoted)
    except (ValueError, SyntaxError):
        return quoted
    return name if isinstance(name, str) else quoted


def join_path(base: str, steps: Any) -> str:
    """``base`` extended by keys and indexes in apiserver notation (``a.b[0].c``); keys that
    are not plain names (``app.kubernetes.io/name``) in brackets, as the YAML line lookup
    reads them."""
    out = base
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif _PLAIN_KEY.match(str(step)):
            out = f"{out}.{step}" if out else str(step)
        else:
            out += f"[{step}]"
    return out


_PLAIN_KEY = re.compile(r"^[^.\[\]]+$")


def validate_object(crd: dict[str, Any], obj: Any) -> ObjectReport:
    """Validate a custom resource against the version of ``crd`` it names; ``crd`` is
    well typed (a bundle's CRD decoded with :func:`~olmtool.crd.apitypes.decode_crd`)."""
    if not isinstance(obj, dict):
        return ObjectReport(errors=["object must be a mapping"])
    spec = crd.get("spec") or {}
    group = spec.get("group")
    kind = (spec.get("names") or {}).get("kind")
    api_version = str(obj.get("apiVersion", ""))
    obj_group, _, version_name = api_version.rpartition("/")
    if obj_group != group or obj.get("kind") != kind:
        return ObjectReport(
            errors=[f"{api_version or '<no apiVersion>'} {obj.get('kind')} is not a {group} {kind}"]
        )
    for version in spec.get("versions") or []:
        if version.get("name") == version_name:
            if not version.get("served", True):
                return ObjectReport(errors=[f"version {version_name} of {kind} is not served"])
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            return validate_against(obj, schema)
    served = sorted(str(v.get("name") or "") for v in spec.get("versions") or [])
    return ObjectReport(
        errors=[f"{kind} has no version {version_name!r} (versions: {', '.join(served)})"]
    )


def default_problems(node: dict[str, Any]) -> list[str]:
    """Why a schema node's ``default`` would be rejected: it must survive pruning and validate."""
    default = node["default"]
    if default is None:
        return [] if node.get("nullable") else ["null default on a field that is not nullable"]
    schema = {k: v for k, v in node.items() if k != "default"}
    report = validate_against(default, schema)
    problems = [f"default does not validate: {e}" for e in report.errors]
    problems += [f"default has unknown field {p} (it would be pruned)" for p in report.pruned]
    return problems


@functools.lru_cache(maxsize=1024)
def go_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Go RE2 pattern (what the apiserver runs) so Python matches the same strings.

    RE2's ``$`` is the end of the text (Python's also matches before a final newline), and
    ``\\s``, ``\\d``, ``\\w`` are ASCII-only (``\\s`` without ``\\v`` or ``\\x1c``-``\\x1f``).
    """
    classes = {"s": r"\t\n\f\r ", "d": "0-9", "w": "0-9A-Za-z_"}
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if escaped in classes:
                out.append(classes[escaped] if in_class else f"[{classes[escaped]}]")
            elif escaped.lower() in classes and not in_class:
                out.append(f"[^{classes[escaped.lower()]}]")
            else:
                out.append(char + escaped)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # A "]" right after "[" or "[^" is a literal member of the class.
            prefix = (
                "[^]"
                if pattern.startswith("[^]", i)
                else "[]"
                if pattern.startswith("[]", i)
                else ""
            )
            if prefix:
                out.append(prefix)
                i += len(prefix)
                continue
        elif char == "$":
            char = r"\Z"
        out.append(char)
        i += 1
    return re.compile("".join(out), re.ASCII)


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        regex = go_regex(pattern)
    except re.error:
        return  # the CRD checks report the pattern; the apiserver refuses the CRD
    if not regex.search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_OpenAPIValidator = jsonschema.validators.extend(jsonschema.Draft4Validator, {"pattern": _pattern})

_FORMATS = jsonschema.FormatChecker()
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    """RFC 3339, as the apiserver's strfmt checks it (without optional packages)."""
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.match(value):
        return False
    datetime.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    return True


@_FORMATS.checks("byte", raises=ValueError)
def _is_byte(value: object) -> bool:
    """Base64 (standard alphabet, padded), as Go decodes ``[]byte`` and the apiserver's
    strfmt checks ``format: byte``; Go skips carriage returns and newlines."""
    if not isinstance(value, str):
        return True
    text = value.replace("\r", "").replace("\n", "")
    base64.b64decode(text, validate=True)
    return len(text) % 4 == 0


def duplicate_list_entries(
    value: Any, schema: dict[str, Any], path: str
) -> Iterator[tuple[str, str]]:
    """Duplicate items of ``set`` lists and duplicate keys of ``map`` lists, which the
    apiserver rejects (``Duplicate value``) after schema validation: (path, message)."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            child_schema = properties.get(key) or (extra if isinstance(extra, dict) else None)
            if child_schema is not None:
                yield from duplicate_list_entries(
                    child, child_schema, f"{path}.{key}" if path else key
                )
        return
    if not isinstance(value, list):
        return
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    seen: set[str] = set()
    for index, item in enumerate(value):
        if schema.get(LIST_TYPE) == "set":
            identity = json.dumps(item, sort_keys=True)
        elif schema.get(LIST_TYPE) == "map" and isinstance(item, dict):
            identity = json.dumps(
                {k: item.get(k) for k in schema.get(LIST_MAP_KEYS) or []}, sort_keys=True
            )
        else:
            identity = None
        if identity is not None:
            if identity in seen:
                yield f"{path}[{index}]", f"Duplicate value: {identity}"
            seen.add(identity)
        yield from duplicate_list_entries(item, items, f"{path}[{index}]")
