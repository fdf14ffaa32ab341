"""The choices a caller makes about catalogs (output format, bundle payload, graph view).

A leaf module: the CLI builds its options from these without importing the catalog code.
"""

from __future__ import annotations

from enum import StrEnum


class CatalogFormat(StrEnum):
    json = "json"
    yaml = "yaml"


class BundlePayload(StrEnum):
    """How a rendered bundle carries its manifests."""

    objects = "objects"  # one olm.bundle.object per manifest (opm's default)
    csv_metadata = "csv-metadata"  # a single olm.csv.metadata, no manifests (smaller)


class GraphView(StrEnum):
    tree = "tree"  # channels and entries (package_views), for a terminal tree
    mermaid = "mermaid"  # what `opm alpha render-graph` prints
    paths = "paths"  # the upgrades OLM v0 and OLM v1 would make from every bundle


# Optional suites of ``catalog validate --select``: ``olm-v1`` reports what OLM v1
# (operator-controller) cannot install or upgrade to.
CATALOG_SUITES = ("olm-v1",)
