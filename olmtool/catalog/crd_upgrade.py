"""CRD upgrade safety on every upgrade edge of a catalog (:mod:`olmtool.crd.upgrade`).

Every edge of every channel (replaces, skips, skipRange) is an upgrade some cluster may
run: the bundle upgraded to must not break the CRDs of the bundle upgraded from.

- ``crd-upgrade/stored-versions`` (always): the new bundle's CRD drops a version a
  cluster stores, which OLM v0 (and v1) refuse ("risk of data loss"). A cluster stores
  every storage version it ever had: what the bundle upgraded from stores, and what any
  bundle that upgrades to it stored before (a version dropped two releases after it
  stopped being the storage version still fails on clusters that came that way). Read
  from the lean records (:attr:`Bundle.crds`), so it streams with validate.
- the ``crd-upgrade`` suite (``--select crd-upgrade``, implied by ``olm-v1``): every other
  change OLM v1's preflight refuses, one check per rule family; needs the whole CRDs.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from olmtool.catalog import declcfg as dc
from olmtool.catalog import properties as props
from olmtool.catalog.checks import bundle_scope, finding
from olmtool.catalog.model import CrdInfo, Package, ResolvedCatalog
from olmtool.crd import (
    STORED_VERSIONS,
    CrdChange,
    compare_crds,
    crd_name,
    olm_v0_message,
    storage_versions,
    version_names,
)
from olmtool.findings import Finding

CRD_UPGRADE = "crd-upgrade"


@dataclass(frozen=True)
class UpgradeEdge:
    """One upgrade, old bundle -> new bundle, as the first channel naming it says."""

    old: str
    new: str
    kind: str  # replace, skip, skipRange
    channel: str

    def describe(self) -> str:
        how = {"replace": "replaces", "skip": "skips", "skipRange": "skipRange"}[self.kind]
        return f"{self.old} ({how} in channel {self.channel})"


SHOWN_EDGES = 3


def upgrades_from(edges: list[UpgradeEdge]) -> str:
    """``upgrade from a (replaces in channel stable)``, or ``upgrades from a, b, c and 4
    more``: one finding per change, whatever the number of edges it breaks."""
    edges = sorted(edges, key=lambda e: e.old)
    shown = ", ".join(e.describe() for e in edges[:SHOWN_EDGES])
    more = f" and {len(edges) - SHOWN_EDGES} more" if len(edges) > SHOWN_EDGES else ""
    return f"upgrade{'s' if len(edges) > 1 else ''} from {shown}{more}"


def package_edges(package: Package) -> list[UpgradeEdge]:
    """Each (old, new) pair of the package's channels once, between bundles it has."""
    seen: set[tuple[str, str]] = set()
    edges = []
    for channel in package.channels.values():
        for edge in channel.edges:
            pair = (edge.from_, edge.to)
            if pair in seen or edge.from_ not in package.bundles or edge.to not in package.bundles:
                continue
            seen.add(pair)
            edges.append(UpgradeEdge(edge.from_, edge.to, edge.kind, channel.name))
    return edges


def stored_along_paths(
    package: Package, edges: Iterable[UpgradeEdge]
) -> dict[str, dict[str, frozenset[str]]]:
    """Bundle -> CRD -> every version a cluster that installed the bundle, by any path of
    the graph, may have stored: its own storage versions and its predecessors'.
    Predecessors are visited first, so each bundle is computed once."""
    predecessors: dict[str, set[str]] = {}
    for edge in edges:
        predecessors.setdefault(edge.new, set()).add(edge.old)
    interned: dict[frozenset[str], frozenset[str]] = {}
    stored: dict[str, dict[str, frozenset[str]]] = {
        name: {c.name: _intern(interned, frozenset(c.storage)) for c in bundle.crds}
        for name, bundle in package.bundles.items()
    }

    def gather(name: str) -> bool:
        """Add the predecessors' stored versions to ``name``'s; whether any was new."""
        mine, changed = stored[name], False
        for old in predecessors.get(name, ()):
            for crd, versions in stored[old].items():
                have = mine.get(crd)
                if have is None or not versions <= have:
                    mine[crd] = _intern(interned, versions if have is None else have | versions)
                    changed = True
        return changed

    order, looping = _topological(predecessors, package.bundles)
    for name in order:
        gather(name)
    while looping and any([gather(name) for name in looping]):  # cycles: to the fixpoint
        pass
    return stored


def _topological(
    predecessors: Mapping[str, set[str]], names: Iterable[str]
) -> tuple[list[str], list[str]]:
    """The names in an order that puts each after its predecessors (Kahn's algorithm),
    and those it cannot place: on or behind a cycle (a broken catalog)."""
    waiting = {name: len(predecessors.get(name, ())) for name in names}
    successors: dict[str, list[str]] = {}
    for new, olds in predecessors.items():
        for old in olds:
            successors.setdefault(old, []).append(new)
    ready = [name for name, count in waiting.items() if count == 0]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for new in successors.get(name, ()):
            waiting[new] -= 1
            if waiting[new] == 0:
                ready.append(new)
    return order, [name for name, count in waiting.items() if count > 0]


def _intern(table: dict[frozenset[str], frozenset[str]], value: frozenset[str]) -> frozenset[str]:
    return table.setdefault(value, value)


def check_stored_versions(catalog: ResolvedCatalog) -> list[Finding]:
    """``crd-upgrade/stored-versions`` for every edge of every declared package, one
    finding per (bundle, CRD, versions dropped)."""
    found: list[Finding] = []
    for package in catalog.declared_packages():
        if not any(bundle.crds for bundle in package.bundles.values()):
            continue
        edges = package_edges(package)
        stored = stored_along_paths(package, edges)
        broken: dict[tuple[str, str, tuple[str, ...]], list[UpgradeEdge]] = {}
        for edge in edges:
            for crd in package.bundles[edge.new].crds:
                removed = stored[edge.old].get(crd.name, frozenset()) - set(crd.versions)
                if removed:
                    key = (edge.new, crd.name, tuple(sorted(removed)))
                    broken.setdefault(key, []).append(edge)
        for (new, crd, removed), broken_edges in broken.items():
            found.append(_stored_finding(package, new, crd, list(removed), broken_edges))
    return found


def _stored_finding(
    package: Package, new: str, crd: str, removed: list[str], edges: list[UpgradeEdge]
) -> Finding:
    own = {
        version
        for edge in edges
        for info in package.bundles[edge.old].crds
        if info.name == crd
        for version in info.storage
    }
    change = CrdChange(crd, "", "", "storedVersionRemoval", f"[{' '.join(removed)}]")
    earlier = [v for v in removed if v not in own]
    note = f" ({', '.join(earlier)} stored by an earlier release on the way)" if earlier else ""
    message = f"{upgrades_from(edges)}: OLM v0 and v1 refuse it: {olm_v0_message(change)}{note}"
    bundle = package.bundles[new]
    return finding(STORED_VERSIONS, message, bundle.origin, package.name, bundle_scope(new))


# --- the crd-upgrade suite: OLM v1's preflight ----------------------------------------------


def check_crd_upgrade_safety(
    config: dc.DeclarativeConfig, catalog: ResolvedCatalog
) -> list[Finding]:
    """Every change on an upgrade edge OLM v1's CRD Upgrade Safety preflight refuses
    (the stored-version rule aside: :func:`check_stored_versions` reports it)."""
    blobs = {(b.package, b.name): b for b in config.bundles}
    decoded: dict[str, dict[str, Any] | None] = {}
    crds = _CrdCache(lambda key: bundle_crds(blobs[key], decoded) if key in blobs else {})
    found: list[Finding] = []
    for package in catalog.declared_packages():
        if not any(bundle.crds for bundle in package.bundles.values()):
            continue
        refused: dict[tuple[str, CrdChange], list[UpgradeEdge]] = {}
        for edge in package_edges(package):
            old, new = crds.get((package.name, edge.old)), crds.get((package.name, edge.new))
            for name in sorted(set(old) & set(new)):
                for change in crds.compare(old[name], new[name]):
                    if change.rule != "storedVersionRemoval":
                        refused.setdefault((edge.new, change), []).append(edge)
        for (new_name, change), edges in refused.items():
            bundle = package.bundles[new_name]
            message = f"{upgrades_from(edges)}: OLM v1 refuses it: {change.describe()}"
            check = change.check
            scope = bundle_scope(bundle.name)
            found.append(finding(check, message, bundle.origin, package.name, scope))
    return found


class _CrdCache:
    """Each bundle's CRDs decoded once; each distinct (old, new) pair compared once."""

    def __init__(self, load: Callable[[tuple[str, str]], dict[str, dict[str, Any]]]) -> None:
        self.load = load
        self.decoded: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.compared: dict[tuple[int, int], list[CrdChange]] = {}

    def get(self, key: tuple[str, str]) -> dict[str, dict[str, Any]]:
        if key not in self.decoded:
            self.decoded[key] = self.load(key)
        return self.decoded[key]

    def compare(self, old: dict[str, Any], new: dict[str, Any]) -> list[CrdChange]:
        key = (id(old), id(new))
        if key not in self.compared:
            self.compared[key] = [] if old == new else compare_crds(old, new)
        return self.compared[key]


def bundle_crds(
    bundle: dc.Bundle, decoded: dict[str, dict[str, Any] | None] | None = None
) -> dict[str, dict[str, Any]]:
    """The bundle's CustomResourceDefinitions (from olm.bundle.object), by name.
    ``decoded`` caches manifests by their base64 text: releases that keep a CRD as it
    was carry the same text, decoded (and compared) once."""
    cache: dict[str, dict[str, Any] | None] = {} if decoded is None else decoded
    found: dict[str, dict[str, Any]] = {}
    for prop in bundle.properties_of(dc.PROP_BUNDLE_OBJECT):
        data = prop.value.get("data") if isinstance(prop.value, Mapping) else None
        if isinstance(data, str) and data in cache:
            manifest = cache[data]
        elif not _may_be_crd(prop.value):
            continue
        else:
            manifest, _ = props.decode_bundle_object(prop.value)
            manifest = manifest if manifest is not None and is_crd(manifest) else None
            if isinstance(data, str):
                cache[data] = manifest
        if manifest is not None and (name := crd_name(manifest)):
            found.setdefault(name, manifest)
    return found


_JSON_HEAD = b'{"apiVersion":"'
_CRD_GROUP = b"apiextensions.k8s.io/"


def _may_be_crd(value: Any) -> bool:
    """False when the first bytes already say another apiVersion: opm writes objects as
    Go's json.Marshal (keys sorted, apiVersion first), so most CSVs and other objects
    are passed over without decoding them whole."""
    data = value.get("data") if isinstance(value, Mapping) else None
    if not isinstance(data, str) or "\n" in data[:64]:
        return True
    try:
        head = base64.b64decode(data[:64])
    except (binascii.Error, ValueError):
        return True
    if not head.startswith(_JSON_HEAD):
        return True
    return head[len(_JSON_HEAD) :].startswith(_CRD_GROUP)


def is_crd(manifest: Mapping[str, Any]) -> bool:
    return manifest.get("kind") == "CustomResourceDefinition" and str(
        manifest.get("apiVersion", "")
    ).startswith("apiextensions.k8s.io/")


def crd_info(manifest: Mapping[str, Any]) -> CrdInfo | None:
    """What the stored-version rule needs of a CRD manifest (None: not a named CRD)."""
    if not is_crd(manifest) or not crd_name(manifest):
        return None
    return CrdInfo(
        crd_name(manifest), tuple(version_names(manifest)), tuple(storage_versions(manifest))
    )
