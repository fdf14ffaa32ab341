"""Types the ``operators.coreos.com`` kinds share, and how optional fields are written.

Real OLM's CRDs (controller-gen from Go types) are lax: optional fields are neither
nullable nor defaulted, and few values are constrained. OLM's controllers write Go zero
values and ``null`` freely, so our schemas must never be stricter than theirs: an object
real OLM writes that our schema rejects breaks its sync loop, and a field our schema lacks
(outside a preserve-unknown-fields object) is silently pruned by the apiserver.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema

from olmtool.crd import CustomResource, PrinterColumn, Schema, Version

GROUP = "operators.coreos.com"
CATEGORIES = ("olm",)

T = TypeVar("T")
# `None` in Python but absent from the schema: no `nullable: true` and no default, as
# controller-gen writes an optional Go field. The apiserver prunes a `null` sent for it
# (as it does with real OLM's CRDs) instead of storing it.
Opt = Union[T, SkipJsonSchema[None]]  # noqa: UP007 - a generic alias needs Union


class ObjectReference(Schema):
    """A reference to a Kubernetes object (core/v1 ObjectReference)."""

    api_version: Opt[str] = None
    field_path: Opt[str] = None
    kind: Opt[str] = None
    name: Opt[str] = None
    namespace: Opt[str] = None
    resource_version: Opt[str] = None
    uid: Opt[str] = None


class LabelSelectorRequirement(Schema):
    """A selector requirement: a key, an operator and values."""

    key: str
    operator: str
    """In, NotIn, Exists or DoesNotExist."""
    values: Opt[list[str]] = None


class LabelSelector(Schema):
    """A label query over a set of resources (meta/v1 LabelSelector)."""

    match_expressions: Opt[list[LabelSelectorRequirement]] = None
    match_labels: Opt[dict[str, str]] = None


class OLMCondition(Schema):
    """A condition as OLM's own kinds record it (free-form type, reason and status)."""

    type: str
    status: str
    """True, False or Unknown."""
    reason: Opt[str] = None
    message: Opt[str] = None
    last_transition_time: Opt[datetime] = None
    last_update_time: Opt[datetime] = None


_CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class MetaCondition(Schema):
    """A meta/v1 Condition, with the constraints its Go type declares."""

    type: Annotated[str, StringConstraints(max_length=316, pattern=_CONDITION_TYPE)]
    """Type of condition in CamelCase or in foo.example.com/CamelCase."""
    status: Literal["True", "False", "Unknown"]
    observed_generation: Opt[Annotated[int, Field(ge=0)]] = None
    last_transition_time: datetime
    reason: Annotated[
        str, StringConstraints(min_length=1, max_length=1024, pattern=_CONDITION_REASON)
    ]
    message: Annotated[str, StringConstraints(max_length=32768)]


class OverrideCondition(MetaCondition):
    """A condition an administrator sets on an OperatorCondition (time optional)."""

    last_transition_time: Opt[datetime] = None  # type: ignore[assignment]


def olm_kind(kind: str, *, versions: tuple[Version, ...], **names: Any) -> CustomResource:
    """One of OLM's kinds: group ``operators.coreos.com``, category ``olm``; ``names``
    are the rest of :class:`~olmtool.crd.CustomResource` (short names, description)."""
    return CustomResource(group=GROUP, kind=kind, categories=CATEGORIES, versions=versions, **names)


def v1alpha1(spec: type[Schema], status: type[Schema], *columns: PrinterColumn) -> tuple[Version]:
    """The one stored version of OLM's oldest kinds, with its printer columns."""
    return (
        Version(name="v1alpha1", spec=spec, status=status, storage=True, printer_columns=columns),
    )
