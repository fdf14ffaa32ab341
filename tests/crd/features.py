"""Feature catalogue for the CRD generator: one CustomResource per group of features.

Not a test module: ``test_golden.py`` renders every ``CustomResource`` below and compares
it with ``golden/<group>_<plural>.yaml``; ``test_properties.py`` fuzzes the spec/status
models. Each field says (in its docstring or comment) which conversion it exercises.
Regenerate the golden files with ``UPDATE_GOLDEN=1 pytest tests/crd/test_golden.py``.
"""

from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from olmtool.crd import (
    Condition,
    CustomResource,
    EmbeddedObject,
    EmbeddedResource,
    Format,
    IntOrString,
    ListType,
    MapType,
    PreserveUnknownFields,
    PrinterColumn,
    Quantity,
    RawObject,
    Rule,
    Scale,
    Schema,
    Version,
    object_markers,
)

GROUP = "features.olmtool.dev"


# --- scalars: numbers, booleans, enums, descriptions, required/optional, defaults -------


class Color(str, Enum):  # noqa: UP042 (the classic str-Enum spelling is what users write)
    """Colors a Python str Enum offers (the enum's docstring is overridden below)."""

    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class ScalarsSpec(Schema):
    """ScalarsSpec covers numbers, booleans and enums.

    Its description comes from this (multi-line) class docstring.
    """

    replicas: Annotated[int, Field(ge=1, le=9)]
    """Required integer with inclusive bounds (minimum/maximum)."""
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5
    """Exclusive bounds: gt/lt become minimum/maximum with exclusiveMinimum/Maximum: true."""
    port: Annotated[int, Field(gt=1024, le=65535)] = 8080
    """An exclusive lower bound next to an inclusive upper bound."""
    step: Annotated[float, Field(ge=0, le=100, multiple_of=0.5)] = 1.5
    """multipleOf on a number."""
    percent: int = Field(
        default=50, ge=0, le=100, description="Description from Field(description=)."
    )
    enabled: bool = True
    """A boolean with a default."""
    color: Color = Color.GREEN
    """A Python str Enum (this docstring overrides the Enum class docstring)."""
    size: Literal[1, 3, 5] = 3
    """An int Literal."""
    tier: Literal["gold", "silver", "bronze"] = "silver"
    """A str Literal."""
    mode: Literal["Managed"] = "Managed"
    """A single-value Literal: pydantic's const becomes an enum of one."""
    weight: Annotated[int, Field(ge=0)] | None = None
    """Nullable integer keeping its bound; the None default is dropped."""
    priority: Literal["low", "high"] | None = None
    """Nullable enum."""
    budget: float
    """Required number without constraints and without a default."""


scalars = CustomResource(
    group=GROUP,
    kind="Scalar",
    versions=(Version(name="v1", spec=ScalarsSpec, storage=True),),
)


# --- strings: lengths, patterns, formats --------------------------------------------------


class StringsSpec(Schema):
    """StringsSpec covers string constraints and formats."""

    name: Annotated[
        str, StringConstraints(min_length=1, max_length=63, pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
    ]
    """Required DNS label: minLength, maxLength and pattern."""
    display_name: Annotated[str, Field(max_length=20)] = "unnamed"
    """maxLength only, with a default."""
    code: Annotated[str, Field(min_length=3, pattern=r"^[A-Z]+$")] | None = None
    """Nullable string keeping minLength and pattern."""
    host: Annotated[str, Format("hostname")] = "localhost"
    """format via the Format marker."""
    address: Annotated[str, Format("ipv4")] | None = None
    """Nullable string with a format."""
    created_at: datetime
    """Required datetime: format date-time."""
    expires_at: datetime | None = None
    """Nullable datetime."""
    notes: str = ""
    """Plain string with an empty default."""


strings = CustomResource(
    group=GROUP,
    kind="Text",
    plural="texts",
    description="Text exercises string constraints (a custom root description).",
    versions=(Version(name="v1", spec=StringsSpec, storage=True),),
)


# --- collections: lists, sets, maps, list/map types, container defaults -------------------


class Port(Schema):
    """A named port: the item of a list-type map keyed by name."""

    name: Annotated[str, Field(min_length=1, max_length=15)]
    """Key of the list map."""
    port: Annotated[int, Field(ge=1, le=65535)]
    """Port number."""
    protocol: Literal["TCP", "UDP"] = "TCP"
    """Transport protocol."""


class Limits(Schema):
    """Limits applied to every member."""

    cpu: Quantity = "500m"
    """CPU limit."""
    memory: Quantity = "1Gi"
    """Memory limit."""


class Volume(Schema):
    """A volume: the value type of a dict[str, Model]."""

    size: Quantity
    """Volume size."""
    read_only: bool = False
    """Mount read-only."""


class CollectionsSpec(Schema):
    """CollectionsSpec covers lists, sets and maps."""

    args: Annotated[list[str], Field(min_length=1, max_length=8)] = ["--serve"]
    """minItems/maxItems with a list default."""
    tags: set[str] = set()
    """A Python set: x-kubernetes-list-type set (never uniqueItems)."""
    order: Annotated[list[str], ListType("atomic")] = []
    """An atomic list."""
    zones: Annotated[list[str], ListType("set"), Field(max_length=3)] = []
    """An explicit set list with maxItems."""
    ports: Annotated[list[Port], ListType("map", keys=("name",)), Field(max_length=4)] = [
        Port(name="client", port=2379)
    ]
    """A list-type map keyed by name, with a default list of models."""
    labels: dict[str, str] = {}
    """dict[str, str]: additionalProperties string."""
    annotations: dict[str, str] = {"owner": "features"}
    """A non-empty dict default."""
    volumes: dict[str, Volume] = {}
    """dict[str, Model]: the model is inlined in additionalProperties."""
    requests: dict[str, Quantity] = {}
    """dict[str, Quantity]: int-or-string values."""
    limits: Annotated[Limits, MapType("granular")] = Limits()
    """A nested model default (serialised with camelCase keys), map type granular."""
    selector: Annotated[dict[str, str], MapType("atomic")] = {}
    """An atomic map."""
    matrix: list[list[int]] = []
    """Nested lists."""


collections = CustomResource(
    group=GROUP,
    kind="Collection",
    versions=(Version(name="v1", spec=CollectionsSpec, storage=True),),
)


# --- unions: nullable values, int-or-string, quantities -----------------------------------


class Tls(Schema):
    """TLS settings (this docstring is the description of the nullable object)."""

    enabled: bool = False
    """Serve TLS."""
    secret_name: str | None = None
    """Secret holding the certificate."""


class UnionsSpec(Schema):
    """UnionsSpec covers X | None, IntOrString and Quantity."""

    target_port: IntOrString
    """Required int-or-string."""
    max_unavailable: IntOrString | None = None
    """Nullable int-or-string."""
    memory: Quantity = "1Gi"
    """Quantity: int-or-string with the quantity pattern."""
    storage: Quantity | None = None
    """Nullable quantity."""
    nickname: str | None = None
    """Nullable string."""
    tls: Tls | None = None
    """Nullable object: the model is inlined and marked nullable."""
    timeout: float | None = 2.5
    """Nullable number with a non-null default."""
    items: list[int] | None = None
    """Nullable list."""
    sparse: list[str | None] = []
    """List with nullable items."""
    weights: dict[str, int | None] = {}
    """Map with nullable values."""


unions = CustomResource(
    group=GROUP,
    kind="Union",
    versions=(Version(name="v1", spec=UnionsSpec, storage=True),),
)


# --- embedded resources and preserve-unknown-fields ---------------------------------------


class PodTemplate(Schema):
    """A typed Kubernetes object embedded whole."""

    api_version: Annotated[str, Field(min_length=1)]
    """APIVersion of the embedded object."""
    kind: Annotated[str, Field(min_length=1)]
    """Kind of the embedded object."""
    metadata: RawObject = {}
    """Object metadata."""
    spec: RawObject = {}
    """Free-form spec."""


class EmbeddedSpec(Schema):
    """EmbeddedSpec covers embedded resources and free-form values."""

    template: Annotated[PodTemplate, EmbeddedResource()]
    """A typed model marked EmbeddedResource()."""
    object: EmbeddedObject | None = None
    """Any Kubernetes object (EmbeddedObject), nullable."""
    objects: list[EmbeddedObject] = []
    """A list of embedded objects."""
    config: RawObject = {}
    """A free-form object (RawObject)."""
    value: Annotated[Any, PreserveUnknownFields()] = None
    """Any JSON value: no type, preserve-unknown-fields."""
    settings: Annotated[dict[str, Any], PreserveUnknownFields()] = {"debug": False}
    """An untyped dict marked PreserveUnknownFields(), with a default."""


embedded = CustomResource(
    group=GROUP,
    kind="Embedding",
    versions=(Version(name="v1", spec=EmbeddedSpec, storage=True),),
)


# --- Kubernetes markers: CEL rules, list/map types on models, names, cluster scope ---------


@object_markers(
    Rule("self.minReplicas <= self.maxReplicas", message="minReplicas must not exceed maxReplicas")
)
class Autoscaling(Schema):
    """Autoscaling bounds (model-level CEL rule via @object_markers)."""

    min_replicas: Annotated[int, Field(ge=1)] = 1
    """Lower bound."""
    max_replicas: Annotated[int, Field(ge=1, le=100)] = 3
    """Upper bound."""


@object_markers(MapType("atomic"))
class Selector(Schema):
    """A selector replaced as a whole (model-level MapType)."""

    match_labels: dict[str, str] = {}
    """Labels to match."""


class MarkersSpec(Schema):
    """MarkersSpec covers CEL rules and markers on models."""

    replicas: Annotated[int, Field(ge=0), Rule("self % 2 == 1", message="must be odd")] = 3
    """A field-level CEL rule next to a bound."""
    cluster_name: Annotated[
        str,
        Rule("self == oldSelf", message="is immutable", reason="FieldValueForbidden"),
    ] = "default"
    """Transition rule with a reason."""
    autoscaling: Annotated[
        Autoscaling,
        Rule(
            "self.maxReplicas <= 50",
            message_expression="'maxReplicas is ' + string(self.maxReplicas)",
            field_path=".maxReplicas",
        ),
    ] = Autoscaling()
    """A field rule merged after the model's own rule; this docstring overrides the model's."""
    fallback: Autoscaling | None = None
    """The same model without a field rule (nullable)."""
    selector: Selector = Field(default_factory=Selector, description="Field(description=) wins.")
    finalizers: Annotated[list[str], ListType("set"), Field(max_length=8)] = []
    """A set list of strings."""


kubernetes_markers = CustomResource(
    group=GROUP,
    kind="ClusterWidget",
    scope="Cluster",
    plural="clusterwidgets",
    singular="clusterwidget",
    list_kind="ClusterWidgetList",
    short_names=("cwidget", "cw"),
    categories=("features", "all"),
    labels={"app.kubernetes.io/part-of": "olmtool-features"},
    annotations={"features.olmtool.dev/purpose": "tests"},
    versions=(Version(name="v1", spec=MarkersSpec, storage=True),),
)


# --- versions: served/storage/deprecated, subresources, printer columns ------------------


class WidgetSpecV1Alpha1(Schema):
    """The first, no longer served, Widget API."""

    size: Annotated[int, Field(ge=0)] = 1
    """Number of widgets."""


class WidgetSpecV1Beta1(Schema):
    """The deprecated Widget API."""

    replicas: Annotated[int, Field(ge=0)] = 1
    """Number of widgets."""


class WidgetSpec(Schema):
    """WidgetSpec is the desired state of a Widget."""

    replicas: Annotated[int, Field(ge=0, le=10)] = 1
    """Number of widgets (the scale subresource's spec path)."""
    paused: bool = False
    """Stop reconciling."""


class WidgetStatus(Schema):
    """WidgetStatus is the observed state of a Widget."""

    replicas: Annotated[int, Field(ge=0)] = 0
    """Observed widgets (the scale subresource's status path)."""
    ready_replicas: Annotated[int, Field(ge=0)] = 0
    """Ready widgets."""
    selector: str = ""
    """Label selector for the scale subresource (labelSelectorPath)."""
    last_update: datetime | None = None
    """When the status last changed."""
    conditions: Annotated[list[Condition], ListType("map", keys=("type",))] = []
    """Standard conditions."""


_widget_columns = (
    PrinterColumn(name="Replicas", json_path=".spec.replicas", type="integer", format="int32",
                  description="Desired widgets"),
    PrinterColumn(name="Ready", json_path=".status.readyReplicas", type="integer", priority=1),
    PrinterColumn(name="Updated", json_path=".status.lastUpdate", type="string",
                  format="date-time", priority=1),
    PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
)  # fmt: skip

versions = CustomResource(
    group=GROUP,
    kind="Widget",
    short_names=("wd",),
    versions=(
        Version(name="v1alpha1", spec=WidgetSpecV1Alpha1, served=False, deprecated=True),
        Version(
            name="v1beta1",
            spec=WidgetSpecV1Beta1,
            status=WidgetStatus,
            status_subresource=False,
            deprecated=True,
            deprecation_warning=f"{GROUP}/v1beta1 Widget is deprecated; use {GROUP}/v1",
        ),
        Version(
            name="v1",
            spec=WidgetSpec,
            status=WidgetStatus,
            storage=True,
            scale=Scale(label_selector_path=".status.selector"),
            printer_columns=_widget_columns,
        ),
    ),
)


SPEC_MODELS = (
    ScalarsSpec,
    StringsSpec,
    CollectionsSpec,
    UnionsSpec,
    EmbeddedSpec,
    MarkersSpec,
    WidgetSpec,
    WidgetStatus,
)
"""Models the property tests fuzz (spec and status of the feature resources)."""
