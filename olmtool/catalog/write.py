"""Writing a catalog the way ``opm migrate`` lays it out: ``<root>/<package>/catalog.<ext>``.

Per package: the olm.package blob, channels, bundles, other schemas, deprecations (each
sorted). JSON is 4-space indented without HTML escaping; YAML puts ``---`` before every
document and sorts keys, as sigs.k8s.io/yaml does. Blobs without a package go to
``__global/``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from olmtool import yamlio
from olmtool.catalog import declcfg as dc
from olmtool.fsutil import TreeDiff, diff_tree, write_tree

GLOBAL_DIR = "__global"


class CatalogFormat(StrEnum):
    json = "json"
    yaml = "yaml"


def render_config(config: dc.DeclarativeConfig, fmt: CatalogFormat = CatalogFormat.json) -> str:
    """One file's text for ``config``'s blobs, in opm's order."""
    documents = dc.blobs(config)
    if fmt is CatalogFormat.json:
        return "".join(dc.to_json(blob) + "\n" for blob in documents)
    return "".join("---\n" + yamlio.dump(blob) for blob in documents)


def render_catalog(
    config: dc.DeclarativeConfig, fmt: CatalogFormat = CatalogFormat.json
) -> dict[str, str]:
    """``<package>/catalog.<ext>`` -> text, one file per package."""
    files: dict[str, str] = {}
    for package in config.package_names():
        directory = package or GLOBAL_DIR
        files[f"{directory}/catalog.{fmt.value}"] = render_config(config.for_package(package), fmt)
    return files


def write_package(
    config: dc.DeclarativeConfig,
    root: Path,
    package: str,
    fmt: CatalogFormat = CatalogFormat.json,
    *,
    check: bool = False,
) -> TreeDiff:
    """Make ``root/<package>/`` hold exactly the package's blobs (atomically); or, with
    ``check``, only report how it differs."""
    directory = root / package
    files = {f"catalog.{fmt.value}": render_config(config.for_package(package), fmt)}
    difference = diff_tree(directory, files)
    if difference.stale and not check:
        write_tree(directory, files)
    return difference
