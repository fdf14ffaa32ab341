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


class OpmCompat(StrEnum):
    """Which opm the behaviours that changed after opm v1.26 follow (docs/opm-compat.md).

    ``latest``: newer operator-registry where it changed something olmtool does (the
    semver template's edges, Mermaid's direction and skipRange edges, served deprecations
    and CSVs synthesized from olm.csv.metadata). ``1.26``: opm v1.26.0's bytes exactly.
    """

    latest = "latest"
    v1_26 = "1.26"


# Optional suites of ``catalog validate --select``: ``olm-v1`` reports what OLM v1
# (operator-controller) cannot install or upgrade to.
CATALOG_SUITES = ("olm-v1", "crd-upgrade")
