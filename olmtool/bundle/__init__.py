"""OLM bundles (registry+v1): build them from ``olmtool.yaml`` and validate them.

    from olmtool.bundle import build_bundle, write_bundle, load_bundle, validate_bundle

:func:`build_bundle` renders a bundle (CSV merged into an optional hand-edited base,
CRDs, extra manifests, annotations, bundle.Dockerfile, scorecard config);
:func:`write_bundle` swaps it into place atomically or reports drift. :func:`load_bundle`
reads any bundle directory without failing on its defects, and :func:`validate_bundle`
runs the upstream validators' checks (plus the ones upstream misses) over it. Several
releases of a package (``bundle.releases``) resolve to one ``BundleSettings`` each
(:class:`ResolvedRelease`); :func:`check_rebuild` says whether one may be rewritten.
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.bundle.build": (
            "BuiltBundle",
            "build_bundle",
            "manifest_file_name",
            "write_bundle",
        ),
        "olmtool.bundle.suites": ("OPTIONAL_SUITES", "TARGET_SUITES"),
        "olmtool.bundle.format": ("INSTALL_MODE_TYPES",),
        "olmtool.bundle.checks.table": ("CHECKS", "CheckInfo", "origin_of"),
        "olmtool.bundle.csv": (
            "generate_csv",
            "merge_into_base",
        ),
        "olmtool.bundle.image": ("bundle_image", "directory_image"),
        "olmtool.bundle.monitoring": ("monitoring_crds",),
        "olmtool.bundle.model": (
            "Bundle",
            "load_bundle",
        ),
        "olmtool.bundle.rebuild": ("RebuildCheck", "check_rebuild"),
        "olmtool.bundle.releasefile": ("ReleaseEdit", "add_release"),
        "olmtool.bundle.releases": ("ResolvedRelease",),
        "olmtool.bundle.settings": ("BundleSettings",),
        "olmtool.bundle.source": (
            "bundle_directory",
            "fetch_image",
            "image_bundle",
            "open_bundle",
            "resolve_source",
            "unpacked_image",
        ),
        "olmtool.bundle.validate": (
            "Report",
            "select_suites",
            "validate_bundle",
        ),
    },
)
