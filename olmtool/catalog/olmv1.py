"""The ``olm-v1`` suite of ``catalog validate --select olm-v1``: what OLM v1 cannot install.

The bundle rules of :mod:`olmtool.bundle.checks.olmv1` (operator-controller's), read from
a bundle blob: install modes and owned API services from ``olm.csv.metadata`` or the CSV
among the ``olm.bundle.object`` properties, webhooks from that CSV (``olm.csv.metadata``
does not carry them), dependencies from the properties themselves (exactly
``resolve.NoDependencyValidation``). Two rules only a catalog can tell:

- ``olm-v1/image-empty``: operator-controller pulls the resolved bundle's ``image`` and
  installs what it unpacks; ``olm.bundle.object`` properties (what OLM v0 can install
  from) are never read.
- ``olm-v1/upgrade-blocked`` (a warning): OLM v1 upgrades an installed bundle to the
  highest-versioned of its successors (the "OLM v1 next" of ``catalog graph -f paths``)
  and checks that bundle only once resolved: when OLM v1 cannot install it, the upgrade
  fails, whatever the other successors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from olmtool.catalog import declcfg as dc
from olmtool.catalog import properties as props
from olmtool.catalog.checks import bundle_scope, channel_scope, finding
from olmtool.catalog.choices import CATALOG_SUITES
from olmtool.catalog.graph import channel_upgrade_paths
from olmtool.catalog.model import ResolvedCatalog
from olmtool.errors import InputError
from olmtool.findings import Finding

OLM_V1 = "olm-v1"
ALL_NAMESPACES = "AllNamespaces"
DEPENDENCY_PROPERTIES = (dc.PROP_PACKAGE_REQUIRED, dc.PROP_GVK_REQUIRED, dc.PROP_CONSTRAINT)


def select_catalog_suites(selected: Iterable[str] = ()) -> tuple[str, ...]:
    """The optional catalog suites named in ``selected`` (comma lists allowed)."""
    names = [n.strip() for item in selected for n in item.split(",") if n.strip()]
    unknown = sorted(set(names) - set(CATALOG_SUITES))
    if unknown:
        raise InputError(
            f"unknown suite {', '.join(unknown)} (catalog suites: {', '.join(CATALOG_SUITES)})"
        )
    return tuple(s for s in CATALOG_SUITES if s in names)


def check_olm_v1(config: dc.DeclarativeConfig, catalog: ResolvedCatalog) -> list[Finding]:
    """Every bundle OLM v1 cannot install (one finding per reason), then every upgrade
    OLM v1 would resolve to such a bundle."""
    found: list[Finding] = []
    blocked: dict[tuple[str, str], list[str]] = {}  # (package, bundle) -> checks
    for bundle in config.bundles:
        for check, message in _blockers(bundle):
            scope = bundle_scope(bundle.name)
            found.append(finding(check, message, bundle.origin, bundle.package, scope))
            blocked.setdefault((bundle.package, bundle.name), []).append(check)
    found += _blocked_upgrades(catalog, blocked)
    return found


def _blockers(bundle: dc.Bundle) -> Iterator[tuple[str, str]]:
    csv = props.csv_object(bundle)
    spec = _mapping(csv.get("spec")) if csv else {}
    metadata = _csv_metadata(bundle)
    modes = _install_modes(metadata, csv)
    if modes is not None:
        supported = sorted(
            {
                str(m.get("type"))
                for m in modes
                if isinstance(m, dict) and m.get("supported") is True
            }
        )
        if ALL_NAMESPACES not in supported:
            yield (
                "olm-v1/install-modes",
                f"AllNamespaces is not a supported install mode (supported: "
                f"{', '.join(supported) or 'none'}): OLM v1 has no default target namespace",
            )
    dependencies = sorted({p.type for p in bundle.properties if p.type in DEPENDENCY_PROPERTIES})
    if dependencies:
        yield (
            "olm-v1/dependencies",
            f"declares dependencies ({', '.join(dependencies)}): OLM v1 installs no "
            "dependencies and refuses the bundle",
        )
    webhooks = _list(spec.get("webhookdefinitions"))
    if webhooks:
        yield (
            "olm-v1/webhooks",
            f"its CSV has {len(webhooks)} webhookdefinitions: OLM v1 refuses them unless a "
            "webhook provider feature gate is on",
        )
    services = _first_present(metadata, "apiServiceDefinitions", spec, "apiservicedefinitions")
    owned = _list(_mapping(services).get("owned"))
    if owned:
        yield (
            "olm-v1/api-services",
            f"owns {len(owned)} API service(s): OLM v1 does not install API services",
        )
    if not bundle.image:
        yield (
            "olm-v1/image-empty",
            "no bundle image: OLM v1 installs what it pulls from the image and never reads "
            "olm.bundle.object properties",
        )


def _blocked_upgrades(
    catalog: ResolvedCatalog, blocked: dict[tuple[str, str], list[str]]
) -> list[Finding]:
    found = []
    for package in catalog.declared_packages():
        for channel in sorted(package.channels.values(), key=lambda c: c.name):
            for path in channel_upgrade_paths(channel, package):
                why = blocked.get((package.name, path.v1_next))
                if not path.v1_next or not why or (package.name, path.bundle) in blocked:
                    continue
                found.append(
                    finding(
                        "olm-v1/upgrade-blocked",
                        f"OLM v1 upgrades {path.bundle} to {path.v1_next}, its newest "
                        f"successor, which OLM v1 cannot install ({', '.join(why)}): the "
                        "upgrade fails; no other successor is tried",
                        channel.origin,
                        package.name,
                        channel_scope(channel.name),
                    )
                )
    return found


def _install_modes(metadata: dict[str, Any], csv: dict[str, Any] | None) -> list[Any] | None:
    """The bundle's install modes: olm.csv.metadata's, else its CSV's (a CSV without them
    supports none); None when the blob carries neither (an image-only bundle)."""
    if "installModes" in metadata:
        return _list(metadata["installModes"])
    if csv is not None:
        return _list(_mapping(csv.get("spec")).get("installModes"))
    return None


def _csv_metadata(bundle: dc.Bundle) -> dict[str, Any]:
    found = bundle.properties_of(dc.PROP_CSV_METADATA)
    return _mapping(found[0].value) if found else {}


def _first_present(first: dict[str, Any], key: str, second: dict[str, Any], other: str) -> Any:
    """``first[key]`` when present, else ``second[other]`` (None: in neither)."""
    if key in first:
        return first[key]
    return second.get(other)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
