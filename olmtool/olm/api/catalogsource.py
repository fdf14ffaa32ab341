"""CatalogSource (v1alpha1): a repository of operator bundles OLM resolves from."""

from __future__ import annotations

from datetime import datetime

from olmtool.crd import PrinterColumn, Schema
from olmtool.olm.api.common import Opt, olm_kind, v1alpha1


class Icon(Schema):
    base64data: str
    mediatype: str


class RegistryPoll(Schema):
    interval: Opt[str] = None
    """How often to poll the catalog image for a new digest, a Go duration like 45m."""


class UpdateStrategy(Schema):
    registry_poll: Opt[RegistryPoll] = None


class CatalogSourceSpec(Schema):
    """Where a catalog is served from and how OLM connects to it."""

    source_type: str
    """grpc (with image, or address host:port; address is ignored when image is set),
    configmap or internal."""
    address: Opt[str] = None
    """host:port of a running registry server."""
    image: Opt[str] = None
    """A catalog image OLM runs a registry pod from."""
    config_map: Opt[str] = None
    secrets: Opt[list[str]] = None
    priority: Opt[int] = None
    """Higher wins when several catalogs offer the same bundle."""
    update_strategy: Opt[UpdateStrategy] = None
    display_name: Opt[str] = None
    description: Opt[str] = None
    publisher: Opt[str] = None
    icon: Opt[Icon] = None


class ConfigMapReference(Schema):
    name: str
    namespace: str
    last_update_time: Opt[datetime] = None
    resource_version: Opt[str] = None
    uid: Opt[str] = None


class ConnectionState(Schema):
    last_observed_state: str
    """The gRPC connectivity state: READY when usable."""
    address: Opt[str] = None
    last_connect: Opt[datetime] = None


class RegistryService(Schema):
    created_at: Opt[datetime] = None
    port: Opt[str] = None
    protocol: Opt[str] = None
    service_name: Opt[str] = None
    service_namespace: Opt[str] = None


class CatalogSourceStatus(Schema):
    connection_state: Opt[ConnectionState] = None
    registry_service: Opt[RegistryService] = None
    config_map_reference: Opt[ConfigMapReference] = None
    latest_image_registry_poll: Opt[datetime] = None
    reason: Opt[str] = None
    message: Opt[str] = None


catalog_source = olm_kind(
    "CatalogSource",
    short_names=("catsrc",),
    description="CatalogSource is a repository of CSVs, CRDs, and operator packages.",
    versions=v1alpha1(
        CatalogSourceSpec,
        CatalogSourceStatus,
        PrinterColumn(name="Display", json_path=".spec.displayName",
                      description="The pretty name of the catalog"),
        PrinterColumn(name="Type", json_path=".spec.sourceType",
                      description="The type of the catalog"),
        PrinterColumn(name="Publisher", json_path=".spec.publisher",
                      description="The publisher of the catalog"),
        PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
    ),
)  # fmt: skip
