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

from olmtool.catalog.bundle_checks import inspect_bundle
from olmtool.catalog.checks import CHECKS
from olmtool.catalog.declcfg import DeclarativeConfig
from olmtool.catalog.error_tree import error_tree_lines
from olmtool.catalog.findings import Finding
from olmtool.catalog.graph import (
    ChannelView,
    EntryView,
    PackageView,
    UpgradePath,
    mermaid,
    package_views,
    upgrade_paths,
)
from olmtool.catalog.load import LoadResult, load_catalog, load_catalog_strict
from olmtool.catalog.publish import AddResult, PublishResult, add_bundle, catalog_image, publish
from olmtool.catalog.render import BundlePayload, render, render_bundle_dir
from olmtool.catalog.settings import CatalogSettings
from olmtool.catalog.templates import load_template, render_template
from olmtool.catalog.validate import (
    Report,
    check_model,
    check_rows,
    report,
    validate_catalog,
    validate_config,
)
from olmtool.catalog.write import CatalogFormat, render_catalog, render_config, write_package

__all__ = [
    "CHECKS",
    "AddResult",
    "BundlePayload",
    "CatalogFormat",
    "CatalogSettings",
    "ChannelView",
    "DeclarativeConfig",
    "EntryView",
    "Finding",
    "LoadResult",
    "PackageView",
    "PublishResult",
    "Report",
    "UpgradePath",
    "add_bundle",
    "catalog_image",
    "check_model",
    "check_rows",
    "error_tree_lines",
    "inspect_bundle",
    "load_catalog",
    "load_catalog_strict",
    "load_template",
    "mermaid",
    "package_views",
    "publish",
    "render",
    "render_bundle_dir",
    "render_catalog",
    "render_config",
    "render_template",
    "report",
    "upgrade_paths",
    "validate_catalog",
    "validate_config",
    "write_package",
]
