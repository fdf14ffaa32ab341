"""CRD upgrade safety: what changes between an installed CRD and its replacement OLM refuses.

:func:`compare_crds` reports, for one (old, new) pair of CustomResourceDefinitions:

- what **OLM v0** refuses (the catalog operator's InstallPlan step): a version listed in
  the old CRD's ``status.storedVersions`` that the new CRD no longer has ("risk of data
  loss"). Statically the stored versions are the old CRD's storage version (or what the
  caller knows more: every storage version along an upgrade path);
- what **OLM v1** refuses (operator-controller's CRD Upgrade Safety preflight, which runs
  sigs.k8s.io/crdify): a changed scope, a removed stored version, a removed field, and per
  field of every version kept: an enum added or values removed, new required fields, a
  bound added or tightened (maximum, minimum, lengths, items, properties), a default
  added, removed or changed, a changed type, oneOf changed, and any other change crdify
  does not know ("unhandled", it fails closed; descriptions are ignored). The same
  per-field rules run between every pair of served versions of the new CRD (unless it
  converts by webhook), minus what the old CRD already had between that pair
  ("ratcheting").

Findings carry the rule's name, the version ("v1", or "v1alpha1 -> v1" for served pairs),
the field path (``^.spec.size``; array items and map values are ``[*]``) and OLM's wording,
sorted: Go's map order is random, ours is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OLM_V0 = "olm-v0"
OLM_V1 = "olm-v1"
BOTH = (OLM_V0, OLM_V1)

V1_CRD = "apiextensions.k8s.io/v1"

_BOUNDS_MAX = ("maximum", "maxItems", "maxLength", "maxProperties")
_BOUNDS_MIN = ("minimum", "minItems", "minLength", "minProperties")
# The check ids bundle and catalog validation report changes under: the stored-version
# rule, and OLM v1's rules by family (so a waiver can accept one kind of change).
STORED_VERSIONS = "crd-upgrade/stored-versions"
RULE_CHECKS = {
    "storedVersionRemoval": STORED_VERSIONS,
    "scope": "crd-upgrade/scope",
    "existingFieldRemoval": "crd-upgrade/field-removed",
    "required": "crd-upgrade/required",
    "enum": "crd-upgrade/enum",
    "default": "crd-upgrade/default",
    "type": "crd-upgrade/type",
    "oneOf": "crd-upgrade/one-of",
    "unhandled": "crd-upgrade/unhandled",
    **dict.fromkeys(_BOUNDS_MAX + _BOUNDS_MIN, "crd-upgrade/bounds"),
}
# Schema keys holding sub-schemas: walked as their own paths, dropped before comparing a
# node (allOf/anyOf/not stay: crdify compares them with the node, as unhandled changes).
_CHILDREN = ("properties", "items", "additionalProperties")
# JSONSchemaProps' Go field names, for the unhandled-change message; with their zero
# value as go-cmp shows a field that is unset.
_GO_FIELDS = {
    "$ref": ("Ref", "<empty>"),
    "$schema": ("Schema", '""'),
    "additionalItems": ("AdditionalItems", "<empty>"),
    "allOf": ("AllOf", "<empty>"),
    "anyOf": ("AnyOf", "<empty>"),
    "definitions": ("Definitions", "<empty>"),
    "dependencies": ("Dependencies", "<empty>"),
    "example": ("Example", "<empty>"),
    "exclusiveMaximum": ("ExclusiveMaximum", "false"),
    "exclusiveMinimum": ("ExclusiveMinimum", "false"),
    "externalDocs": ("ExternalDocs", "<empty>"),
    "format": ("Format", '""'),
    "id": ("ID", '""'),
    "multipleOf": ("MultipleOf", "<empty>"),
    "not": ("Not", "<empty>"),
    "nullable": ("Nullable", "false"),
    "pattern": ("Pattern", '""'),
    "patternProperties": ("PatternProperties", "<empty>"),
    "title": ("Title", '""'),
    "uniqueItems": ("UniqueItems", "false"),
    "x-kubernetes-embedded-resource": ("XEmbeddedResource", "false"),
    "x-kubernetes-int-or-string": ("XIntOrString", "false"),
    "x-kubernetes-list-map-keys": ("XListMapKeys", "<empty>"),
    "x-kubernetes-list-type": ("XListType", "<empty>"),
    "x-kubernetes-map-type": ("XMapType", "<empty>"),
    "x-kubernetes-preserve-unknown-fields": ("XPreserveUnknownFields", "<empty>"),
    "x-kubernetes-validations": ("XValidations", "<empty>"),
}


@dataclass(frozen=True, order=True)
class CrdChange:
    """One change an OLM refuses. ``version`` is empty for CRD-wide rules and
    ``"a -> b"`` for a pair of served versions; ``path`` is empty for CRD-wide rules."""

    crd: str
    version: str
    path: str
    rule: str
    message: str
    refused_by: tuple[str, ...] = (OLM_V1,)

    @property
    def listed(self) -> list[str]:
        """The versions a ``stored versions removed : [a b]`` message lists."""
        return self.message.partition("[")[2].rstrip("]").split()

    @property
    def olm_v0(self) -> bool:
        return OLM_V0 in self.refused_by

    @property
    def check(self) -> str:
        """The check id validation reports this change under."""
        return RULE_CHECKS.get(self.rule, "crd-upgrade/unhandled")

    def schema_path(self, crd: Mapping[str, Any]) -> str:
        """Where in ``crd`` (the new CRD) the change is, in field-path notation
        (``spec.versions[0].schema.openAPIV3Schema.properties.spec``), for line numbers."""
        if not self.version:
            return "spec.scope" if self.rule == "scope" else "spec.versions"
        name = self.version.rpartition(" -> ")[2]
        versions = _versions(_mapping(crd.get("spec")))
        index = next((i for i, v in enumerate(versions) if v.get("name") == name), None)
        if index is None:
            return "spec.versions"
        path = f"spec.versions[{index}].schema.openAPIV3Schema"
        for token in re.findall(r"\.([^.\[]+)|\[([^\]]*)\]", self.path.removeprefix("^")):
            path += f".properties.{token[0]}" if token[0] else ".items"
        return path

    def describe(self) -> str:
        """The line as OLM v1 words it (``validating upgrade for CRD "x": ...``), or
        OLM v0's for what only v0's rule says."""
        where = ": ".join(part for part in (self.version, self.path) if part)
        body = f"{where}: {self.rule}: {self.message}" if where else f"{self.rule}: {self.message}"
        return f'validating upgrade for CRD "{self.crd}": {body}'


def crd_name(crd: Mapping[str, Any]) -> str:
    """The manifest's metadata.name ("" when it has none, or not a string)."""
    metadata = crd.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else ""


def version_names(crd: Mapping[str, Any]) -> list[str]:
    """Every version the CRD defines (v1, or v1beta1's ``versions``/``version``)."""
    spec = _mapping(crd.get("spec"))
    names = [str(v.get("name")) for v in _versions(spec) if v.get("name")]
    if not names and isinstance(spec.get("version"), str):  # v1beta1's single version
        names = [spec["version"]]
    return names


def storage_versions(crd: Mapping[str, Any]) -> list[str]:
    """What a cluster that installed ``crd`` has stored: its ``status.storedVersions``
    when the object carries them, else its storage version."""
    status = _mapping(crd.get("status"))
    stored = status.get("storedVersions")
    if isinstance(stored, list) and stored:
        return [str(v) for v in stored]
    spec = _mapping(crd.get("spec"))
    storage = [str(v.get("name")) for v in _versions(spec) if v.get("storage") is True]
    if not storage:
        names = version_names(crd)
        storage = names[:1]  # v1beta1's first version is its storage version
    return storage


def compare_crds(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    stored_versions: Sequence[str] | None = None,
) -> list[CrdChange]:
    """Every change from ``old`` to ``new`` that OLM v0 or v1 refuses, sorted.

    ``stored_versions`` overrides what the cluster is taken to have stored (default:
    :func:`storage_versions` of ``old``)."""
    name = crd_name(new) or crd_name(old)
    stored = list(stored_versions) if stored_versions is not None else storage_versions(old)
    changes = list(_stored_versions_removed(name, stored, new))
    if old.get("apiVersion") == V1_CRD and new.get("apiVersion") == V1_CRD:
        changes += _olm_v1(name, old, new, stored)
    return sorted(set(changes))


def _stored_versions_removed(
    name: str, stored: Sequence[str], new: Mapping[str, Any]
) -> Iterator[CrdChange]:
    kept = set(version_names(new))
    removed = [v for v in stored if v not in kept]
    if removed:
        yield CrdChange(
            name,
            "",
            "",
            "storedVersionRemoval",
            f"stored versions removed : [{' '.join(removed)}]",
            BOTH,
        )


def olm_v0_message(change: CrdChange) -> str:
    """OLM v0.18's InstallPlan error for a removed stored version (one per version)."""
    return "; ".join(
        f"risk of data loss updating {change.crd}: new CRD removes version {v} "
        "that is listed as a stored version on the existing CRD"
        for v in change.listed
    )


# --- OLM v1 ------------------------------------------------------------------------------


def _olm_v1(
    name: str, old: Mapping[str, Any], new: Mapping[str, Any], stored: Sequence[str]
) -> Iterator[CrdChange]:
    old_spec, new_spec = _mapping(old.get("spec")), _mapping(new.get("spec"))
    old_scope, new_scope = str(old_spec.get("scope", "")), str(new_spec.get("scope", ""))
    if old_scope != new_scope:
        yield CrdChange(
            name, "", "", "scope", f"scope changed : {_q(old_scope)} -> {_q(new_scope)}"
        )
    old_versions = {str(v.get("name")): v for v in _versions(old_spec)}
    for version in _versions(new_spec):
        before = old_versions.get(str(version.get("name")))
        if before is None:
            continue
        label = str(version.get("name"))
        old_paths, new_paths = _flatten(_schema(before)), _flatten(_schema(version))
        for path in sorted(set(old_paths) - set(new_paths)):
            yield CrdChange(name, "", "", "existingFieldRemoval", f"removed field : {label}.{path}")
        for path, rule, message in _compare_schemas(old_paths, new_paths):
            yield CrdChange(name, label, path, rule, message)
    if _mapping(new_spec.get("conversion")).get("strategy") != "Webhook":
        already = set(_served_pairs(old_spec))
        for pair in _served_pairs(new_spec):
            if pair not in already:
                yield CrdChange(name, *pair)


def _served_pairs(spec: Mapping[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    """(``"a -> b"``, path, rule, message) for every pair of served versions, older first."""
    served = [v for v in _versions(spec) if v.get("served") is True and v.get("name")]
    served.sort(key=lambda v: _kube_version_key(str(v["name"])))
    flat = [(str(v["name"]), _flatten(_schema(v))) for v in served]
    for i, (older, older_paths) in enumerate(flat):
        for newer, newer_paths in flat[i + 1 :]:
            pair = f"{older} -> {newer}"
            for path in sorted(set(older_paths) - set(newer_paths)):
                yield pair, path, "existingFieldRemoval", f"removed field : {path}"
            for path, rule, message in _compare_schemas(older_paths, newer_paths):
                yield pair, path, rule, message


def _compare_schemas(
    old_paths: Mapping[str, Mapping[str, Any]], new_paths: Mapping[str, Mapping[str, Any]]
) -> Iterator[tuple[str, str, str]]:
    for path, before in old_paths.items():
        after = new_paths.get(path)
        if after is None or before == after:
            continue
        for rule, message in compare_properties(before, after):
            yield path, rule, message


def compare_properties(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(rule, message) for each refused change of one schema node (children dropped),
    crdify's comparators in a fixed order, then whatever none of them handled."""
    a, b = dict(old), dict(new)
    found: list[tuple[str, str]] = []
    for key in ("description", *_CHILDREN):
        a.pop(key, None)
        b.pop(key, None)
    for rule, check in _COMPARATORS:
        message = check(a, b, rule)
        a.pop(rule, None)
        b.pop(rule, None)
        if message:
            found.append((rule, message))
    if a != b:
        found.append(("unhandled", _unhandled(a, b)))
    return found


def _enum(a: Mapping[str, Any], b: Mapping[str, Any], _rule: str) -> str | None:
    before, after = a.get("enum"), b.get("enum")
    if not before and after:
        return f"enum constraint added when there was none previously : {_raw_list(after)}"
    if before:
        kept = {_raw(v) for v in after or []}
        removed = sorted({_raw(v) for v in before} - kept)
        if removed:
            return f"allowed enum values removed : [{' '.join(removed)}]"
    return None


def _required(a: Mapping[str, Any], b: Mapping[str, Any], _rule: str) -> str | None:
    added = sorted(set(b.get("required") or []) - set(a.get("required") or []))
    return f"new required fields: [{' '.join(map(str, added))}]" if added else None


def _bound(a: Mapping[str, Any], b: Mapping[str, Any], rule: str) -> str | None:
    """A bound added, or tightened: a max* lowered, a min* raised."""
    before, after = a.get(rule), b.get(rule)
    if after is None:
        return None
    if before is None:
        return f"{rule} constraint added when there was none previously : {_number(after)}"
    lowered = _as_number(after) < _as_number(before)
    raised = _as_number(after) > _as_number(before)
    if lowered and rule in _BOUNDS_MAX:
        return f"{rule} decreased : {_number(before)} -> {_number(after)}"
    if raised and rule in _BOUNDS_MIN:
        return f"{rule} increased : {_number(before)} -> {_number(after)}"
    return None


def _default(a: Mapping[str, Any], b: Mapping[str, Any], _rule: str) -> str | None:
    has_a, has_b = "default" in a, "default" in b
    if not has_a and has_b:
        return f"default added when there was none previously : {_q(_raw(b['default']))}"
    if has_a and not has_b:
        return f"default value removed : {_q(_raw(a['default']))}"
    if has_a and _raw(a["default"]) != _raw(b["default"]):
        return f"default value changed : {_q(_raw(a['default']))} -> {_q(_raw(b['default']))}"
    return None


def _type(a: Mapping[str, Any], b: Mapping[str, Any], _rule: str) -> str | None:
    before, after = str(a.get("type", "")), str(b.get("type", ""))
    return f"type changed : {_q(before)} -> {_q(after)}" if before != after else None


def _one_of(a: Mapping[str, Any], b: Mapping[str, Any], _rule: str) -> str | None:
    def shapes(node: Mapping[str, Any]) -> set[str]:
        items = node.get("oneOf") or []
        return {
            _raw({k: v for k, v in item.items() if k not in ("description", "example")})
            for item in items
            if isinstance(item, Mapping)
        }

    before, after = shapes(a), shapes(b)
    if not before and after:
        return "oneOf constraint added when there was none previously"
    problems = []
    if before - after:
        problems.append(f"allowed oneOf schemas removed: [{' '.join(sorted(before - after))}]")
    if after - before and before:
        problems.append(f"allowed oneOf schemas added: [{' '.join(sorted(after - before))}]")
    if len(problems) > 1:
        return f"[{', '.join(problems)}]"
    return problems[0] if problems else None


_COMPARATORS = (
    ("default", _default),
    ("enum", _enum),
    *((rule, _bound) for rule in (*_BOUNDS_MAX, *_BOUNDS_MIN)),
    ("oneOf", _one_of),
    ("required", _required),
    ("type", _type),
)


def _unhandled(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """operator-controller's concise form: ``unhandled changes found (Format "" -> "email")``."""
    details = []
    for key in sorted(set(a) | set(b), key=lambda k: _GO_FIELDS.get(k, (k,))[0]):
        if a.get(key) == b.get(key) and (key in a) == (key in b):
            continue
        field, zero = _GO_FIELDS.get(key, (key, "<empty>"))
        details.append(f"{field} {_shown(a, key, zero)} -> {_shown(b, key, zero)}")
    return f"unhandled changes found ({'; '.join(details)})"


def _shown(node: Mapping[str, Any], key: str, zero: str) -> str:
    if key not in node:
        return zero
    value = node[key]
    if isinstance(value, Mapping | list):
        return "<complex value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _q(value)
    return _number(value)


# --- schema walking ------------------------------------------------------------------------


def _flatten(schema: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every schema node by path: ``^`` the root, ``.name`` a property, ``[*]`` array
    items and map values."""
    flat: dict[str, Mapping[str, Any]] = {}
    pending: list[tuple[str, Any]] = [("^", schema)]
    while pending:
        path, node = pending.pop()
        if not isinstance(node, Mapping):
            continue
        flat[path] = node
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            pending += [(f"{path}.{name}", child) for name, child in properties.items()]
        items = node.get("items")
        if isinstance(items, Mapping):
            pending.append((f"{path}[*]", items))
        elif isinstance(items, list):
            pending += [(f"{path}[{i}]", child) for i, child in enumerate(items)]
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            pending.append((f"{path}[*]", extra))
    return flat


def _schema(version: Mapping[str, Any]) -> Mapping[str, Any]:
    schema = _mapping(version.get("schema")).get("openAPIV3Schema")
    return schema if isinstance(schema, Mapping) else {}


def _versions(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    versions = spec.get("versions")
    return [v for v in versions if isinstance(v, Mapping)] if isinstance(versions, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _kube_version_key(name: str) -> tuple[int, int, int, int, str]:
    """apimachinery's CompareKubeAwareVersionStrings, ascending: non-kube-like names
    first (reverse lexical among themselves), then alpha < beta < GA, major, minor."""
    match = _KUBE_VERSION.match(name)
    if match is None:
        return (0, 0, 0, 0, "".join(chr(0x10FFFF - ord(c)) for c in name))
    stage = {"alpha": 1, "beta": 2, None: 3}[match[2]]
    return (1, stage, int(match[1]), int(match[3] or 0), "")


# --- Go's printing -----------------------------------------------------------------------


def _raw(value: Any) -> str:
    """JSON as Go's json.Marshal of the value writes it (what crdify compares)."""
    from olmtool import gojson

    return gojson.marshal(value, escape_html=False)


def _raw_list(values: Iterable[Any]) -> str:
    return f"[{' '.join(sorted(_raw(v) for v in values))}]"


def _q(text: str) -> str:
    """Go's %q of a string (ASCII and common escapes)."""
    return json.dumps(text)


def _as_number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _number(value: Any) -> str:
    """Go's %v of a float64 or int64 bound: ``10``, ``1.5``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)
