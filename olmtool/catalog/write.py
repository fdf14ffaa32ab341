"""Writing a catalog the way ``opm migrate`` lays it out: ``<root>/<package>/catalog.<ext>``.

Per package: the olm.package blob, channels, bundles, other schemas, deprecations (each
sorted). JSON is 4-space indented without HTML escaping; YAML puts ``---`` before every
document and sorts keys, as sigs.k8s.io/yaml does — in YAML 1.1 like it (and like the
loader), so strings such as ``"yes"`` or ``"12:30"`` stay quoted strings. Blobs without a package go to
``__global/``.
"""

from __future__ import annotations

from pathlib import Path

from olmtool import yamlwrite
from olmtool.catalog import declcfg as dc
from olmtool.catalog.choices import CatalogFormat
from olmtool.fsutil import TreeDiff, diff_tree, remove_stale, write_tree

GLOBAL_DIR = "__global"


def render_config(
    config: dc.DeclarativeConfig,
    fmt: CatalogFormat = CatalogFormat.json,
    *,
    raw_values: bool = False,
) -> str:
    """One file's text for ``config``'s blobs, in opm's order. With ``raw_values``, JSON
    property values are written as opm holds them (``Property.raw``): what ``opm render``
    prints. Catalog files are written without, so that rewriting a loaded catalog does not
    change its bytes."""
    if fmt is CatalogFormat.json:
        documents = dc.blobs(config, raw=raw_values)
        return "".join(dc.to_json(blob) + "\n" for blob in documents)
    documents = dc.blobs(config)
    return "".join("---\n" + yamlwrite.dump_as_go(blob) for blob in documents)


def render_catalog(
    config: dc.DeclarativeConfig, fmt: CatalogFormat = CatalogFormat.json
) -> dict[str, str]:
    """``<package>/catalog.<ext>`` -> text, one file per package."""
    return {
        f"{package or GLOBAL_DIR}/catalog.{fmt.value}": render_config(part, fmt)
        for package, part in dc.by_package(config).items()
    }


def write_package(
    config: dc.DeclarativeConfig,
    root: Path,
    package: str,
    fmt: CatalogFormat = CatalogFormat.json,
    *,
    check: bool = False,
) -> TreeDiff:
    """Make ``root/<package>/`` hold exactly the package's blobs (atomically); or, with
    ``check``, only report how it differs.

    The new tree is staged beside the catalog root, not in it: opm (and an image build
    that copies the root) reads every file below the root, so a run killed mid-write must
    not leave anything there (``fsutil.write_tree``; the next write removes leftovers).
    """
    directory = root / package
    files = {f"catalog.{fmt.value}": render_config(config.for_package(package), fmt)}
    difference = diff_tree(directory, files)
    staging_dir = root.absolute().parent
    if difference.stale and not check:
        write_tree(directory, files, staging_dir=staging_dir)
    elif not check:
        remove_stale(directory, staging_dir=staging_dir)
    return difference
