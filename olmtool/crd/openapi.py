"""pydantic model -> structural OpenAPI v3 schema, as the kube-apiserver wants it.

pydantic writes JSON Schema 2020-12 with ``$defs`` references, ``anyOf`` for
optionals, numeric ``exclusiveMinimum`` and ``const``. A CRD needs a *structural*
schema in OpenAPI v3.0 dialect: everything inlined, every node typed, ``nullable``
instead of ``anyOf: [.., null]``, boolean ``exclusiveMinimum``. This module converts
one into the other and refuses what cannot be expressed, naming the model and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from olmtool.crd.markers import (
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    LIST_TYPE,
    PRESERVE_UNKNOWN,
    VALIDATIONS,
)
from olmtool.errors import SchemaError

# Keywords of apiextensions.k8s.io/v1 JSONSchemaProps that the converter passes through.
PASSTHROUGH_KEYS = frozenset(
    {
        "description", "type", "format", "default", "maximum", "minimum", "maxLength",
        "minLength", "pattern", "maxItems", "minItems", "multipleOf", "enum", "maxProperties",
        "minProperties", "nullable", "example", "externalDocs", "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations",
    }
)  # fmt: skip
# pydantic/JSON-Schema keywords with no meaning for the apiserver: dropped.
DROPPED_KEYS = frozenset({"title", "$comment", "readOnly", "writeOnly", "deprecated", "$schema"})
# Structural keywords handled explicitly below.
STRUCTURE_KEYS = frozenset(
    {
        "$ref", "$defs", "anyOf", "oneOf", "allOf", "not", "properties", "required",
        "additionalProperties", "items", "prefixItems", "uniqueItems", "const", "examples",
        "exclusiveMinimum", "exclusiveMaximum", "discriminator",
    }
)  # fmt: skip


def model_to_openapi(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a pydantic model.

    >>> class Spec(Schema):
    ...     replicas: int = 1
    >>> model_to_openapi(Spec)
    {'type': 'object', 'properties': {'replicas': {'default': 1, 'type': 'integer'}}}
    """
    try:
        raw = model.model_json_schema(mode="validation")
    except Exception as exc:  # pydantic refuses some types outright (e.g. callables)
        raise SchemaError(
            f"pydantic cannot describe this model: {exc}", model=model.__name__
        ) from exc
    definitions = raw.pop("$defs", {})
    converter = _Converter(definitions)
    return converter.convert(raw, _Where(model=model.__name__))


@dataclass(frozen=True)
class _Where:
    """Where in the user's models the converter is, for error messages."""

    model: str
    field_path: tuple[str, ...] = ()
    refs: tuple[str, ...] = field(default=())

    def child(self, name: str) -> _Where:
        return _Where(self.model, (*self.field_path, name), self.refs)

    def enter(self, ref: str, model: str) -> _Where:
        return _Where(model, (), (*self.refs, ref))

    def error(self, message: str) -> SchemaError:
        return SchemaError(message, model=self.model, field=".".join(self.field_path) or None)


class _Converter:
    def __init__(self, definitions: dict[str, Any]):
        self.definitions = definitions

    def convert(self, node: dict[str, Any], where: _Where) -> dict[str, Any]:
        node = dict(node)
        if "$ref" in node:
            return self._inline(node, where)
        if "allOf" in node and len(node["allOf"]) == 1:
            # Older pydantic releases wrap a reference with siblings in allOf.
            inner = node.pop("allOf")[0]
            return _merge(self.convert(inner, where), self.convert(node, where))
        if "anyOf" in node or "oneOf" in node:
            return self._union(node, where)
        return self._plain(node, where)

    def _inline(self, node: dict[str, Any], where: _Where) -> dict[str, Any]:
        ref = node.pop("$ref")
        name = ref.rsplit("/", 1)[-1]
        target = self.definitions.get(name)
        if target is None:
            raise where.error(f"unresolvable reference {ref}")
        model = target.get("title", name)
        if name in where.refs:
            cycle = " -> ".join([*(self.definitions[r].get("title", r) for r in where.refs), model])
            raise where.error(
                f"recursive model ({cycle}) cannot be expressed in a structural schema; "
                "break the cycle or mark the field PreserveUnknownFields()"
            )
        inlined = self.convert(target, where.enter(name, model))
        if not node:
            return inlined
        return _merge(inlined, self._plain(node, where, annotations_only=True))

    def _union(self, node: dict[str, Any], where: _Where) -> dict[str, Any]:
        branches = node.pop("anyOf", None) or node.pop("oneOf")
        node.pop("discriminator", None)
        if node.get(INT_OR_STRING):
            return self._plain(node, where)  # the marker already wrote the exact anyOf
        non_null = [b for b in branches if b.get("type") != "null"]
        nullable = len(non_null) < len(branches)
        if node.get(PRESERVE_UNKNOWN) and len(non_null) > 1:
            return self._plain(node, where)
        if len(non_null) != 1:
            kinds = ", ".join(self._describe(b) for b in non_null)
            hint = (
                "use IntOrString"
                if sorted(self._describe(b) for b in non_null) == ["integer", "string"]
                else "use one type, or mark the field PreserveUnknownFields()"
            )
            raise where.error(
                f"Union of {kinds} cannot be expressed in a structural schema; {hint}"
            )
        if node.get("default", 0) is None:
            del node["default"]
        result = _merge(
            self.convert(non_null[0], where), self._plain(node, where, annotations_only=True)
        )
        # The apiserver checks enum before nullable, so a nullable enum would still reject
        # null. Without nullable it prunes the null instead: the field reads as unset,
        # which is what None means to the model.
        if nullable and "enum" not in result:
            result["nullable"] = True
        return result

    def _describe(self, branch: dict[str, Any]) -> str:
        if "$ref" in branch:
            name = branch["$ref"].rsplit("/", 1)[-1]
            return self.definitions.get(name, {}).get("title", name)
        return str(branch.get("type", "any"))

    def _plain(
        self, node: dict[str, Any], where: _Where, *, annotations_only: bool = False
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in DROPPED_KEYS or key in STRUCTURE_KEYS:
                continue
            if key not in PASSTHROUGH_KEYS:
                raise where.error(f"JSON Schema keyword {key!r} has no equivalent in a CRD schema")
            out[key] = value
        if "default" in out and out["default"] is None:
            # No null defaults: optional means absent. (An empty string is a default
            # like any other; kube-apiserver accepts `default: ""`.)
            del out["default"]
        if "const" in node:
            out["enum"] = [node["const"]]
        if node.get("examples"):
            out["example"] = node["examples"][0]
        _exclusive_bounds(node, out)
        if annotations_only:
            return out

        node_type = out.get("type")
        if isinstance(node_type, list):
            raise where.error(f"a value of several types {node_type} is not structural")
        if "not" in node:
            out["not"] = node["not"]
        if node_type == "object" or "properties" in node:
            self._object(node, out, where)
        elif node_type == "array":
            self._array(node, out, where)
        elif node_type is None and not (out.get(PRESERVE_UNKNOWN) or out.get(INT_OR_STRING)):
            raise where.error(
                "has no type (typing.Any?); give it a type or mark it PreserveUnknownFields()"
            )
        if out.get(INT_OR_STRING):
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out

    def _object(self, node: dict[str, Any], out: dict[str, Any], where: _Where) -> None:
        out["type"] = "object"
        properties = node.get("properties") or {}
        if properties:
            out["properties"] = {
                name: self.convert(prop, where.child(name)) for name, prop in properties.items()
            }
        if node.get("required"):
            out["required"] = sorted(node["required"])
        extra = node.get("additionalProperties")
        if extra is None or extra is False:
            return  # false means extra="forbid": the apiserver prunes unknown fields anyway
        untyped = extra is True or extra == {}
        if untyped:
            if not out.get(PRESERVE_UNKNOWN) and not out.get(EMBEDDED_RESOURCE):
                raise where.error(
                    "untyped dict (dict[str, Any]) cannot be expressed in a structural schema; "
                    "give its values a type or mark it PreserveUnknownFields()"
                )
            return
        if properties:
            raise where.error(
                "a model with both fields and typed extra values cannot be structural "
                "(properties and additionalProperties are mutually exclusive)"
            )
        out["additionalProperties"] = self.convert(extra, where.child("*"))

    def _array(self, node: dict[str, Any], out: dict[str, Any], where: _Where) -> None:
        if "prefixItems" in node:
            raise where.error("tuples cannot be expressed in a CRD schema; use list[T]")
        out["items"] = self.convert(node.get("items", {}), where.child("[]"))
        if node.get("uniqueItems"):
            # The apiserver forbids uniqueItems (quadratic cost); a set list says the same.
            if out.get(LIST_TYPE, "set") != "set":
                raise where.error(
                    f"a set (unique items) cannot have x-kubernetes-list-type {out[LIST_TYPE]!r}"
                )
            out[LIST_TYPE] = "set"


def _exclusive_bounds(node: dict[str, Any], out: dict[str, Any]) -> None:
    """JSON Schema 2020-12 numeric exclusive bounds -> OpenAPI 3.0 boolean flags."""
    for exclusive, bound, stricter in (
        ("exclusiveMinimum", "minimum", max),
        ("exclusiveMaximum", "maximum", min),
    ):
        value = node.get(exclusive)
        if value is None or isinstance(value, bool):
            if value:
                out[exclusive] = True
            continue
        inclusive = out.get(bound)
        if inclusive is not None and stricter(inclusive, value) == inclusive and inclusive != value:
            continue  # the inclusive bound is already the stricter one
        out[bound] = value
        out[exclusive] = True


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Keys written next to a reference (field description, default, markers) win."""
    merged = dict(base)
    for key, value in overlay.items():
        if key == VALIDATIONS:
            merged[key] = [*base.get(key, []), *value]
        else:
            merged[key] = value
    return merged
