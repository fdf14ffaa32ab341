"""File-based catalogs (FBC): load, render, validate, publish and graph them.

    from olmtool.catalog import load_catalog, validate_catalog, render, publish

:mod:`~olmtool.catalog.declcfg` is the plain data model (one dataclass per schema),
:mod:`~olmtool.catalog.load` reads a tree of blobs into it, :mod:`~olmtool.catalog.write`
lays it out like ``opm migrate``, :mod:`~olmtool.catalog.validate` checks it as
``opm validate`` does (and more), :mod:`~olmtool.catalog.rendering` turns bundles into
blobs, :mod:`~olmtool.catalog.templates` expands basic/semver templates,
:mod:`~olmtool.catalog.publishing` writes ``catalog/<package>/`` and
:mod:`~olmtool.catalog.graph` draws upgrade graphs. Serving is :mod:`olmtool.serve`.
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.catalog.bundle_checks": ("inspect_bundle",),
        "olmtool.catalog.checks": (
            "CHECKS",
            "origin_of",
        ),
        "olmtool.catalog.choices": (
            "CATALOG_SUITES",
            "BundlePayload",
            "CatalogFormat",
            "GraphView",
            "OpmCompat",
        ),
        "olmtool.catalog.declcfg": ("DeclarativeConfig",),
        "olmtool.catalog.error_tree": ("error_tree_lines", "summary_lines"),
        "olmtool.findings": ("Finding",),
        "olmtool.catalog.graph": (
            "ChannelView",
            "EntryView",
            "PackageView",
            "UpgradePath",
            "mermaid",
            "package_views",
            "upgrade_paths",
        ),
        "olmtool.catalog.load": (
            "LoadResult",
            "RawBlob",
            "catalog_files",
            "decode_blob",
            "iter_json_spans",
            "load_catalog",
            "load_catalog_strict",
            "meta_keys",
            "parse_blobs",
            "read_catalog_text",
        ),
        "olmtool.catalog.mermaid_opm126": ("mermaid_v1_26",),
        "olmtool.catalog.opmtext": (
            "may_differ",
            "object_text",
            "raw_property_texts",
            "yaml_value_text",
        ),
        "olmtool.catalog.publishing": (
            "AddResult",
            "PublishResult",
            "add_bundle",
            "catalog_image",
            "publish",
        ),
        "olmtool.catalog.rendering": (
            "render",
            "render_bundle_dir",
            "render_opened",
        ),
        "olmtool.catalog.settings": ("CatalogSettings",),
        "olmtool.catalog.templates": (
            "load_template",
            "render_template",
        ),
        "olmtool.catalog.validate": (
            "Report",
            "check_model",
            "check_rows",
            "checks_run",
            "report",
            "select_catalog_suites",
            "validate_catalog",
            "validate_config",
        ),
        "olmtool.catalog.write": (
            "render_catalog",
            "render_config",
            "write_package",
        ),
    },
)
