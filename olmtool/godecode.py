"""Plain data decoded into Go types as ``encoding/json`` does it, with Go's error wording.

Kubernetes objects reach their readers as JSON decoded into typed Go structs: the
apiserver decodes a CustomResourceDefinition into ``apiextensions/v1`` types,
operator-framework/api a ClusterServiceVersion into ``v1alpha1`` types. A value of the
wrong JSON type (a string where a list belongs) fails there with ``json: cannot unmarshal
string into Go struct field ClusterServiceVersionSpec.spec.keywords of type []string``, and
Go leaves the field at its zero value.

:func:`decode` walks plain data (what :mod:`olmtool.yamlread` loads) along a :class:`GoType`
and returns both: every problem, with its field path in the apiserver's notation
(``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``), and the value as Go
holds it afterwards (wrong types and nulls dropped from structs, zero values in lists and
maps), so checks that read it can trust the types. Fields a struct does not list are
kept as they are. Go's messages name the innermost struct and the JSON field names from
the outermost one (list indexes and map keys left out); a type with its own
``UnmarshalJSON`` starts afresh ("into Go value of type ...").

>>> names = struct("v1.Names", {"plural": STRING, "shortNames": slice_of(STRING)})
>>> spec = struct("v1.Spec", {"names": names, "group": STRING})
>>> result = decode({"group": 5, "names": {"shortNames": "x"}}, spec)
>>> [f"{p.path}: {p.message}" for p in result.problems]  # doctest: +NORMALIZE_WHITESPACE
['group: cannot unmarshal number into Go struct field Spec.group of type string',
 'names.shortNames: cannot unmarshal string into Go struct field Names.names.shortNames of type []string']
>>> result.value
{'names': {}}
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from olmtool.findings import Problem

__all__ = [
    "ANY",
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT32",
    "INT64",
    "INT_OR_STRING",
    "QUANTITY",
    "STRING",
    "Decoded",
    "GoType",
    "decode",
    "either",
    "go_list",
    "go_map",
    "go_str",
    "json_kind",
    "map_of",
    "slice_of",
    "struct",
]

# resource.Quantity's UnmarshalJSON refuses anything else with this message.
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
QUANTITY_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
IGNORED = "ignored"  # an `either` branch whose JSON Go's UnmarshalJSON silently drops


@dataclass(frozen=True, eq=False)
class GoType:
    """A Go type as JSON decoding sees it.

    ``kind``: ``string``, ``bool``, ``int``, ``float``, ``any`` (interface{}, json.RawMessage,
    apiextensions' JSON), ``bytes`` ([]byte: base64 text), ``quantity``, ``slice``, ``map``
    (string keys), ``struct`` or ``either`` (a type whose UnmarshalJSON picks a type by the
    JSON's kind, like JSONSchemaPropsOrArray).
    """

    name: str  # as Go prints it: "string", "[]string", "v1.ObjectMeta"
    kind: str
    elem: GoType | None = None
    bits: int = 64  # of an int
    custom: bool = False  # has its own UnmarshalJSON: errors inside name no struct field
    fields_factory: Callable[[], Mapping[str, GoType]] | None = field(default=None, repr=False)
    branches: Mapping[str, GoType | str] = field(default_factory=dict, repr=False)
    _fields: dict[str, Mapping[str, GoType]] = field(default_factory=dict, repr=False)

    @property
    def fields(self) -> Mapping[str, GoType]:
        """A struct's fields by JSON name (built on first use: types may be recursive)."""
        if "f" not in self._fields:
            self._fields["f"] = self.fields_factory() if self.fields_factory else {}
        return self._fields["f"]

    @property
    def short_name(self) -> str:
        """The struct's name without its package, as Go's errors print it."""
        return self.name.rpartition(".")[2]


STRING = GoType("string", "string")
BOOL = GoType("bool", "bool")
INT32 = GoType("int32", "int", bits=32)
INT64 = GoType("int64", "int")
FLOAT64 = GoType("float64", "float")
ANY = GoType("interface {}", "any")
BYTES = GoType("[]uint8", "bytes")
QUANTITY = GoType("resource.Quantity", "quantity", custom=True)


def slice_of(elem: GoType) -> GoType:
    return GoType(f"[]{elem.name}", "slice", elem)


def map_of(elem: GoType) -> GoType:
    return GoType(f"map[string]{elem.name}", "map", elem)


def struct(name: str, fields: Mapping[str, GoType] | Callable[[], Mapping[str, GoType]]) -> GoType:
    """A struct; ``fields`` (JSON name -> type) may be a function, for recursive types."""
    factory = fields if callable(fields) else (lambda: fields)
    return GoType(name, "struct", fields_factory=factory)


def either(name: str, branches: Mapping[str, GoType | str]) -> GoType:
    """A type with its own UnmarshalJSON choosing by the JSON's kind (``object``, ``array``,
    ``string``, ``number``, ``bool``, or ``other`` for the rest): the branch's type, or
    :data:`IGNORED` when Go silently keeps nothing."""
    return GoType(name, "either", custom=True, branches=branches)


INT_OR_STRING = either(
    "intstr.IntOrString",
    {"string": STRING, "other": GoType("int32", "int", bits=32, custom=True)},
)


@dataclass
class Decoded:
    """The value as Go holds it after decoding, and what it could not decode."""

    value: Any
    problems: list[Problem]


def json_kind(value: Any) -> str:
    """The JSON kind Go's errors name: string, number, bool, array, object (or null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def decode(value: Any, go_type: GoType) -> Decoded:
    """``value`` decoded into ``go_type``: the value Go would hold and every problem."""
    problems: list[Problem] = []
    decoded = _Decoder(problems).value(value, go_type, _Where("", (), None))
    return Decoded(decoded, problems)


def go_str(value: Any) -> str:
    """A string field as Go holds it: the text, or "" for any other JSON."""
    return value if isinstance(value, str) else ""


def go_list(value: Any) -> list[Any]:
    """A list field as Go holds it: the list, or empty for any other JSON."""
    return value if isinstance(value, list) else []


def go_map(value: Any) -> dict[str, Any]:
    """A struct or map field as Go holds it: the mapping, or empty for any other JSON."""
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class _Where:
    """Where the decoder is: the path to report, Go's field stack and innermost struct."""

    path: str
    stack: tuple[str, ...]
    struct: GoType | None

    def key(self, name: str, owner: GoType) -> _Where:
        path = f"{self.path}.{name}" if self.path else name
        return _Where(path, (*self.stack, name), owner)

    def index(self, index: int | str) -> _Where:
        return _Where(f"{self.path}[{index}]", self.stack, self.struct)

    def fresh(self) -> _Where:
        """Inside a custom UnmarshalJSON: Go decodes from scratch."""
        return _Where(self.path, (), None)


class _Decoder:
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems

    def fail(self, where: _Where, what: str, go_type: GoType) -> None:
        if where.struct is not None and where.stack:
            into = f"Go struct field {where.struct.short_name}.{'.'.join(where.stack)}"
        else:
            into = "Go value"
        self.problems.append(
            Problem(where.path, f"cannot unmarshal {what} into {into} of type {go_type.name}")
        )

    def value(self, value: Any, go_type: GoType, where: _Where) -> Any:
        """The decoded value, or None when Go keeps nothing (a problem is recorded)."""
        if value is None:
            return None
        if go_type.custom and go_type.kind != "either":
            where = where.fresh()
        decode_kind = getattr(self, f"_{go_type.kind.replace('-', '_')}")
        return decode_kind(value, go_type, where)

    def _any(self, value: Any, go_type: GoType, where: _Where) -> Any:
        return value

    def _string(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if isinstance(value, str):
            return value
        self.fail(where, json_kind(value), go_type)
        return None

    def _bool(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if isinstance(value, bool):
            return value
        self.fail(where, json_kind(value), go_type)
        return None

    def _int(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, json_kind(value), go_type)
            return None
        limit = 2 ** (go_type.bits - 1)
        if not math.isfinite(value) or value != int(value) or not -limit <= value < limit:
            self.fail(where, f"number {_number_text(value)}", go_type)
            return None
        return int(value)

    def _float(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, json_kind(value), go_type)
            return None
        if isinstance(value, float) and not math.isfinite(value):
            # sigs.k8s.io/yaml cannot even write it as JSON
            self.problems.append(Problem(where.path, f"json: unsupported value: {value}"))
            return None
        return value

    def _bytes(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if not isinstance(value, str):
            self.fail(where, json_kind(value), go_type)
            return None
        try:
            # Go's base64 decoder skips line breaks
            base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            offset = _bad_base64_offset(value)
            self.problems.append(Problem(where.path, f"illegal base64 data at input byte {offset}"))
            return None
        return value

    def _quantity(self, value: Any, go_type: GoType, where: _Where) -> Any:
        text = value if isinstance(value, str) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = _number_text(value)
        if text is None or not _QUANTITY.match(text.strip()):
            self.problems.append(Problem(where.path, QUANTITY_MESSAGE))
            return None
        return value

    def _slice(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if not isinstance(value, list):
            self.fail(where, json_kind(value), go_type)
            return None
        assert go_type.elem is not None
        return [
            _zero_if_none(self.value(item, go_type.elem, where.index(i)), go_type.elem)
            for i, item in enumerate(value)
        ]

    def _map(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if not isinstance(value, dict):
            self.fail(where, json_kind(value), go_type)
            return None
        assert go_type.elem is not None
        return {
            key: _zero_if_none(self.value(item, go_type.elem, where.index(key)), go_type.elem)
            for key, item in value.items()
        }

    def _struct(self, value: Any, go_type: GoType, where: _Where) -> Any:
        if not isinstance(value, dict):
            self.fail(where, json_kind(value), go_type)
            return None
        fields = go_type.fields
        decoded: dict[str, Any] = {}
        for key, item in value.items():
            field_type = fields.get(key)
            if field_type is None:
                decoded[key] = item  # not a field Go reads here: kept as written
                continue
            result = self.value(item, field_type, where.key(key, go_type))
            if result is not None:
                decoded[key] = result
        return decoded

    def _either(self, value: Any, go_type: GoType, where: _Where) -> Any:
        kind = json_kind(value)
        branch = go_type.branches.get(kind, go_type.branches.get("other", IGNORED))
        if branch == IGNORED or isinstance(branch, str):
            return None
        return self.value(value, branch, where.fresh())


def _zero_if_none(value: Any, go_type: GoType) -> Any:
    """A list item or map value Go could not decode (or null) is its type's zero value."""
    if value is not None:
        return value
    return {
        "string": "",
        "bool": False,
        "int": 0,
        "float": 0.0,
        "slice": [],
        "map": {},
        "struct": {},
    }.get(go_type.kind)


def _number_text(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _bad_base64_offset(text: str) -> int:
    """Where Go's base64.StdEncoding stops (roughly: the first byte outside the alphabet,
    else the length when the padding is wrong)."""
    for index, char in enumerate(text):
        if not (char.isascii() and (char.isalnum() or char in "+/=\r\n")):
            return index
    return len(text)
