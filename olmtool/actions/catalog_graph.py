"""``catalog graph``: a catalog's upgrade graph as a tree, as Mermaid, or as OLM's paths.

>>> graph = catalog_graph("catalog/", view=GraphView.paths)
>>> [p.v0_status for p in graph.paths][:1]
['reaches-head']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from olmtool.catalog import (
    GraphView,
    OpmCompat,
    PackageView,
    UpgradePath,
    load_catalog_strict,
    mermaid,
    package_views,
    upgrade_paths,
)
from olmtool.errors import ArgumentError


@dataclass
class CatalogGraph:
    """One view of the graph: ``mermaid`` text, ``packages`` or ``paths``, as asked."""

    view: GraphView
    mermaid: str = ""
    packages: list[PackageView] = field(default_factory=list)
    paths: list[UpgradePath] = field(default_factory=list)


def catalog_graph(
    directory: str | Path,
    *,
    view: GraphView = GraphView.tree,
    package: str | None = None,
    minimum_version: str | None = None,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> CatalogGraph:
    """Load the catalog and draw ``view`` of it (of ``package`` only, when named);
    ``minimum_version`` leaves older bundles out of the Mermaid view. ``opm_compat``
    1.26 draws Mermaid as opm v1.26 does (``minimum_version`` then names a bundle)."""
    if minimum_version is not None and view is not GraphView.mermaid:
        raise ArgumentError("needs the mermaid view", argument="minimum_version")
    try:
        opm_compat = OpmCompat(opm_compat)
    except ValueError:
        choices = ", ".join(OpmCompat)
        raise ArgumentError(
            f"is one of {choices}, not {opm_compat!r}", argument="opm_compat"
        ) from None
    if opm_compat is not OpmCompat.latest and view is not GraphView.mermaid:
        raise ArgumentError("applies to the mermaid view only", argument="opm_compat")
    config = load_catalog_strict(directory)
    if view is GraphView.mermaid and opm_compat is OpmCompat.v1_26:
        from olmtool.catalog import mermaid_v1_26

        text = mermaid_v1_26(config, package=package, minimum_edge=minimum_version)
        return CatalogGraph(view, mermaid=text)
    if view is GraphView.mermaid:
        text = mermaid(config, package=package, minimum_version=minimum_version)
        return CatalogGraph(view, mermaid=text)
    if view is GraphView.tree:
        return CatalogGraph(view, packages=package_views(config, package=package))
    return CatalogGraph(view, paths=upgrade_paths(config, package=package))
