"""The resolved catalog model: what a file-based catalog means, built once.

:mod:`olmtool.catalog.declcfg` mirrors the files; this package links them (operator-registry's
``alpha/model``): :func:`build_model` turns a config into a :class:`ResolvedCatalog` of
:class:`Package` -> :class:`Channel` -> :class:`Entry` -> :class:`Bundle`, each with the
:class:`~olmtool.catalog.declcfg.Origin` of its blob, and reports what does not resolve.
Validation (:mod:`olmtool.catalog.validate`), graphs (:mod:`olmtool.catalog.graph`) and
the catalog server (:mod:`olmtool.serve`) all work on it.

    catalog = build_model(config)
    stable = catalog.packages["etcd"].channels["stable"]
    stable.head, stable.edges, stable.entries[0].bundle.channels

The edge functions (:func:`upgrade_edges`, :func:`channel_heads`, ...) also take plain
declcfg channels.
"""

from olmtool.catalog.model.build import BundleInspector, ModelBuilder, build_model, lean_bundle
from olmtool.catalog.model.edges import (
    Edge,
    EdgeKind,
    bundle_versions,
    channel_head,
    channel_heads,
    distances_to_head,
    entry_edges,
    successors,
    upgrade_edges,
)
from olmtool.catalog.model.types import (
    GVK,
    Bundle,
    Channel,
    CrdInfo,
    Entry,
    Package,
    ResolvedCatalog,
)

__all__ = [
    "GVK",
    "Bundle",
    "BundleInspector",
    "Channel",
    "CrdInfo",
    "Edge",
    "EdgeKind",
    "Entry",
    "ModelBuilder",
    "Package",
    "ResolvedCatalog",
    "build_model",
    "bundle_versions",
    "channel_head",
    "channel_heads",
    "distances_to_head",
    "entry_edges",
    "lean_bundle",
    "successors",
    "upgrade_edges",
]
