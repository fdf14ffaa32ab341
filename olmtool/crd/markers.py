"""Schema markers: what controller-gen's ``+kubebuilder:`` comments are for Go types.

Markers go into ``typing.Annotated`` metadata on a field, or onto a whole model with
:func:`object_markers`::

    class Spec(Schema):
        ports: Annotated[list[Port], ListType("map", keys=("name",))] = []
        replicas: Annotated[int, Field(ge=1), Rule("self % 2 == 1", message="must be odd")]

Each marker only adds Kubernetes vendor keys (``x-kubernetes-*``) to the JSON schema
pydantic produces; :mod:`olmtool.crd.openapi` turns that into a structural schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
MAP_TYPE = "x-kubernetes-map-type"
VALIDATIONS = "x-kubernetes-validations"


class Marker:
    """Base class: a marker edits the JSON schema of the node it annotates."""

    def apply(self, schema: dict[str, Any]) -> None:
        raise NotImplementedError

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        # A model-typed field comes back as {"$ref": ...}; the marker's keys stay next to
        # the reference (the shared definition is not touched) and are merged when the
        # reference is inlined.
        self.apply(schema)
        return schema


@dataclass(frozen=True)
class PreserveUnknownFields(Marker):
    """Keep fields the schema does not declare (``x-kubernetes-preserve-unknown-fields``).

    Required for untyped values (``typing.Any``, ``dict[str, Any]``), which a structural
    schema cannot otherwise describe.
    """

    def apply(self, schema: dict[str, Any]) -> None:
        schema[PRESERVE_UNKNOWN] = True


@dataclass(frozen=True)
class EmbeddedResource(Marker):
    """The value is a whole Kubernetes object (apiVersion, kind, metadata are implied)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema[EMBEDDED_RESOURCE] = True


@dataclass(frozen=True)
class ListType(Marker):
    """How server-side apply merges a list: ``atomic``, ``set`` or ``map`` (with ``keys``)."""

    type: Literal["atomic", "set", "map"]
    keys: tuple[str, ...] = ()

    def apply(self, schema: dict[str, Any]) -> None:
        schema[LIST_TYPE] = self.type
        if self.keys:
            schema[LIST_MAP_KEYS] = list(self.keys)


@dataclass(frozen=True)
class MapType(Marker):
    """How server-side apply merges an object: ``granular`` (per key) or ``atomic``."""

    type: Literal["granular", "atomic"]

    def apply(self, schema: dict[str, Any]) -> None:
        schema[MAP_TYPE] = self.type


@dataclass(frozen=True)
class Rule(Marker):
    """A CEL validation rule (``x-kubernetes-validations``), evaluated by the apiserver.

    ``self`` is the annotated value; ``oldSelf`` the previous one on updates.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: (
        Literal[
            "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"
        ]
        | None
    ) = None
    field_path: str | None = None

    def as_dict(self) -> dict[str, str]:
        entry = {"rule": self.rule}
        optional = {
            "message": self.message,
            "messageExpression": self.message_expression,
            "reason": self.reason,
            "fieldPath": self.field_path,
        }
        entry.update({key: value for key, value in optional.items() if value is not None})
        return entry

    def apply(self, schema: dict[str, Any]) -> None:
        schema.setdefault(VALIDATIONS, []).append(self.as_dict())


@dataclass(frozen=True)
class Format(Marker):
    """An OpenAPI string format the apiserver checks (``hostname``, ``ipv4``, ``cidr``...)."""

    format: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["format"] = self.format


@dataclass(frozen=True)
class IntOrStringSchema(Marker):
    """Replace the node with the int-or-string pattern the apiserver recognises."""

    pattern: str | None = None

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        for key in ("anyOf", "oneOf", "type"):
            schema.pop(key, None)
        self.apply(schema)
        return schema

    def apply(self, schema: dict[str, Any]) -> None:
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        schema[INT_OR_STRING] = True
        if self.pattern:
            schema["pattern"] = self.pattern


ModelT = TypeVar("ModelT", bound=type[BaseModel])


def object_markers(*markers: Marker) -> Callable[[ModelT], ModelT]:
    """Apply markers to a whole model, e.g. a CEL rule that compares two fields::

    @object_markers(Rule("self.minReplicas <= self.maxReplicas"))
    class Autoscaling(Schema):
        min_replicas: int
        max_replicas: int
    """

    def decorate(model: ModelT) -> ModelT:
        original = model.__get_pydantic_json_schema__.__func__  # type: ignore[attr-defined]

        def hook(
            cls: type[BaseModel], core_schema: CoreSchema, handler: GetJsonSchemaHandler
        ) -> JsonSchemaValue:
            schema = original(cls, core_schema, handler)
            # Only the decorated class itself, not subclasses that inherit the hook.
            if cls is model:
                target = handler.resolve_ref_schema(schema)
                for marker in markers:
                    marker.apply(target)
            return schema

        model.__get_pydantic_json_schema__ = classmethod(hook)  # type: ignore[method-assign,assignment]
        model.model_rebuild(force=True)
        return model

    return decorate
