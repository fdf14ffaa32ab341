"""File-based catalogs (FBC): load, render, validate, publish and graph them.

    from olmtool.catalog import load_catalog, validate_catalog, render, publish

:mod:`~olmtool.catalog.declcfg` is the plain data model (one dataclass per schema),
:mod:`~olmtool.catalog.load` reads a tree of blobs into it, :mod:`~olmtool.catalog.write`
lays it out like ``opm migrate``, :mod:`~olmtool.catalog.validate` checks it as
``opm validate`` does (and more), :mod:`~olmtool.catalog.render` turns bundles into
blobs, :mod:`~olmtool.catalog.templates` expands basic/semver templates,
:mod:`~olmtool.catalog.publish` writes ``catalog/<package>/`` and
:mod:`~olmtool.catalog.graph` draws upgrade graphs. Serving is :mod:`olmtool.serve`.
"""

from olmtool.catalog.declcfg import DeclarativeConfig
from olmtool.catalog.findings import Finding
from olmtool.catalog.graph import mermaid, upgrade_paths
from olmtool.catalog.load import LoadResult, load_catalog, load_catalog_strict
from olmtool.catalog.publish import add_bundle, catalog_image, publish
from olmtool.catalog.render import BundlePayload, render, render_bundle_dir
from olmtool.catalog.templates import load_template, render_template
from olmtool.catalog.validate import Report, validate_catalog, validate_config
from olmtool.catalog.write import CatalogFormat, render_catalog, write_package

__all__ = [
    "BundlePayload",
    "CatalogFormat",
    "DeclarativeConfig",
    "Finding",
    "LoadResult",
    "Report",
    "add_bundle",
    "catalog_image",
    "load_catalog",
    "load_catalog_strict",
    "load_template",
    "mermaid",
    "publish",
    "render",
    "render_bundle_dir",
    "render_catalog",
    "render_template",
    "upgrade_paths",
    "validate_catalog",
    "validate_config",
    "write_package",
]
