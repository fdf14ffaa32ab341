"""Ready-made field types for Kubernetes APIs written as pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from olmtool.crd.markers import EmbeddedResource, IntOrStringSchema, PreserveUnknownFields

# Initialisms Kubernetes API conventions write in capitals inside camelCase names.
INITIALISMS = frozenset(
    {"api", "cidr", "cpu", "dns", "fqdn", "http", "https", "id", "ip", "json", "tcp", "tls",
     "ttl", "udp", "uid", "uri", "url", "uuid"}
)  # fmt: skip


def kube_camel(name: str) -> str:
    """``peer_url`` -> ``peerURL``, ``pod_ips`` -> ``podIPs``, ``storage_size`` -> ``storageSize``."""
    first, *rest = name.split("_")
    return first + "".join(_capitalize(word) for word in rest if word)


def _capitalize(word: str) -> str:
    if word in INITIALISMS:
        return word.upper()
    if word.endswith("s") and word[:-1] in INITIALISMS:
        return word[:-1].upper() + "s"
    return word[:1].upper() + word[1:]


class Schema(BaseModel):
    """Base class for API schemas: Kubernetes naming with Python attributes.

    Attributes are written in snake_case and appear in camelCase in the CRD
    (``storage_size`` -> ``storageSize``); a string literal right below an attribute is
    its description, like a Go doc comment::

        class Spec(Schema):
            storage_size: Quantity = "1Gi"
            \"\"\"Size of each member's volume.\"\"\"
    """

    model_config = ConfigDict(
        alias_generator=kube_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
    )


QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

IntOrString = Annotated[int | str, IntOrStringSchema()]
"""An integer or a string (``x-kubernetes-int-or-string``), like a port name or number."""

Quantity = Annotated[
    int | Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)],
    IntOrStringSchema(pattern=QUANTITY_PATTERN),
]
"""A Kubernetes resource quantity such as ``1Gi``, ``500m`` or ``2``."""


def _require_type_meta(value: dict[str, Any]) -> dict[str, Any]:
    """The apiserver requires apiVersion and kind in an embedded resource; so do we."""
    missing = [key for key in ("apiVersion", "kind") if not value.get(key)]
    if missing:
        raise ValueError(f"an embedded Kubernetes object needs {' and '.join(missing)}")
    return value


EmbeddedObject = Annotated[
    dict[str, Any], AfterValidator(_require_type_meta), EmbeddedResource(), PreserveUnknownFields()
]
"""A complete Kubernetes object of any kind (like Go's ``runtime.RawExtension``)."""

RawObject = Annotated[dict[str, Any], PreserveUnknownFields()]
"""Free-form JSON object kept as is (``x-kubernetes-preserve-unknown-fields``)."""


class Condition(Schema):
    """Condition contains details for one aspect of the current state of this API resource."""

    type: Annotated[
        str,
        StringConstraints(
            max_length=316,
            pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        ),
    ]
    """Type of condition in CamelCase or in foo.example.com/CamelCase."""
    status: Literal["True", "False", "Unknown"]
    """Status of the condition, one of True, False, Unknown."""
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    """The .metadata.generation that the condition was set based upon."""
    last_transition_time: datetime
    """Last time the condition transitioned from one status to another."""
    reason: Annotated[
        str,
        StringConstraints(
            min_length=1,
            max_length=1024,
            pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        ),
    ]
    """A programmatic identifier indicating the reason for the condition's last transition."""
    message: Annotated[str, StringConstraints(max_length=32768)]
    """A human readable message indicating details about the transition."""
