"""Synthetic catalogs for resolver tests, built in memory on the graph tests' helpers.

``entry("0.1.2", replaces="0.1.1")`` and ``config(...)`` (package ``op``, bundles named
``op.v<version>``) come from :mod:`tests.catalog.test_graph`; :func:`package` builds any
other package with channels and bundle properties (provided and required APIs, required
packages).
"""

from __future__ import annotations

from olmtool.catalog import declcfg as dc
from olmtool.catalog.model import GVK, ResolvedCatalog, build_model
from olmtool.olm.resolver import CatalogSource
from tests.catalog.test_graph import config, entry

__all__ = ["chain", "config", "entry", "model", "package", "source"]


def package(
    name: str,
    channels: dict[str, list[dc.ChannelEntry]],
    *,
    default: str = "",
    provides: dict[str, list[GVK]] | None = None,
    requires: dict[str, list[GVK]] | None = None,
    requires_packages: dict[str, list[tuple[str, str]]] | None = None,
) -> dc.DeclarativeConfig:
    """Package ``name``; bundle versions come from entry names ``<name>.v<version>``."""
    names = list(dict.fromkeys(e.name for entries in channels.values() for e in entries))
    bundles = []
    for bundle_name in names:
        props = [
            dc.Property(
                dc.PROP_PACKAGE,
                {"packageName": name, "version": bundle_name.removeprefix(f"{name}.v")},
            )
        ]
        for group, version, kind in (provides or {}).get(bundle_name, []):
            props.append(
                dc.Property(dc.PROP_GVK, {"group": group, "version": version, "kind": kind})
            )
        for group, version, kind in (requires or {}).get(bundle_name, []):
            props.append(
                dc.Property(
                    dc.PROP_GVK_REQUIRED, {"group": group, "version": version, "kind": kind}
                )
            )
        for required, version_range in (requires_packages or {}).get(bundle_name, []):
            props.append(
                dc.Property(
                    dc.PROP_PACKAGE_REQUIRED,
                    {"packageName": required, "versionRange": version_range},
                )
            )
        bundles.append(dc.Bundle(bundle_name, name, f"example.com/{bundle_name}", props))
    return dc.DeclarativeConfig(
        packages=[dc.Package(name, default_channel=default or next(iter(channels)))],
        channels=[dc.Channel(ch, name, list(entries)) for ch, entries in channels.items()],
        bundles=bundles,
    )


def chain(
    name: str, *versions: str, skip_range: dict[str, str] | None = None
) -> list[dc.ChannelEntry]:
    """Entries ``<name>.v<version>`` each replacing the one before (optionally skipRanges)."""
    entries = []
    for index, version in enumerate(versions):
        entries.append(
            dc.ChannelEntry(
                name=f"{name}.v{version}",
                replaces=f"{name}.v{versions[index - 1]}" if index else "",
                skip_range=(skip_range or {}).get(version, ""),
            )
        )
    return entries


def model(*configs: dc.DeclarativeConfig) -> ResolvedCatalog:
    merged = dc.DeclarativeConfig()
    for each in configs:
        merged.extend(each)
    return build_model(merged)


def source(
    name: str, *configs: dc.DeclarativeConfig, namespace: str = "ns", priority: int = 0
) -> CatalogSource:
    return CatalogSource(name, namespace, model(*configs), priority)
