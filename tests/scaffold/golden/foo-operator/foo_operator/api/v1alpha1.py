"""demo.example.com/v1alpha1: the Widget API's schema.

Fields are snake_case here and camelCase in the CRD (observed_generation ->
observedGeneration); the string below a field is its description in the CRD.
"""

from __future__ import annotations

from typing import Annotated

from olmtool.crd import Condition, ListType, Schema
from pydantic import Field


class WidgetSpec(Schema):
    """WidgetSpec is the desired state of a Widget."""

    size: Annotated[int, Field(ge=1, le=10)] = 1
    """Number of instances to run (an example field: replace it with yours)."""


class WidgetStatus(Schema):
    """WidgetStatus is the observed state of a Widget."""

    conditions: Annotated[list[Condition], ListType("map", keys=("type",))] = Field(
        default_factory=list
    )
    """Available, Progressing and Degraded conditions, following Kubernetes conventions."""
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    """The .metadata.generation the status describes."""
