"""Static upgrade-path analysis of one channel: what OLM v0 does from every bundle.

For each bundle of the channel, :func:`upgrade_plan` repeats the resolver's upgrade step
(:func:`~olmtool.olm.resolver.channels.next_in_channel` over OLM's channel order) until
the head, a bundle with no candidate, or a bundle already visited, and reports the
mistakes that make upgrades go wrong:

- ``stranded``: a bundle other than the head with no upgrade candidate (an installed
  copy stays there for good);
- ``head-unreachable``: a bundle whose upgrades stop before the head;
- ``cycle``: upgrades that come back to a bundle already installed;
- ``skiprange-downgrade``: a skipRange containing a newer version of the channel, which
  makes OLM "upgrade" that newer bundle to this older one;
- ``skiprange-self``: a skipRange containing the bundle's own version (OLM would offer
  the bundle as its own upgrade; the resolver ignores that);
- ``skiprange-unused`` (warning): a skipRange containing no older version of the channel;
- ``channel-order``: OLM cannot order the channel at all (no head, a replaces cycle, more
  than one replaces chain), so no Subscription on it resolves;
- ``crd-stored-versions``: a hop whose bundle's CRD drops a version the cluster stores by
  then (the storage versions of every bundle installed since the start): OLM v0 fails
  that InstallPlan ("risk of data loss").

Unlike :func:`olmtool.catalog.graph.upgrade_paths` (shortest path over every edge), this
follows OLM v0 exactly: bundles another entry ``skips`` are never upgraded to.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import semver

from olmtool.catalog import DeclarativeConfig, inspect_bundle, load_catalog_strict
from olmtool.catalog.model import Channel, Package, ResolvedCatalog, build_model
from olmtool.crd import CrdChange, olm_v0_message
from olmtool.errors import ArgumentError
from olmtool.jsonfields import json_fields
from olmtool.olm.resolver.channels import (
    Candidate,
    ChannelOrderError,
    catalog_candidates,
    next_in_channel,
    skip_range_contains,
    sort_channel,
)
from olmtool.olm.resolver.types import CatalogSource
from olmtool.versions import VersionIndex, parse_range, parse_version

PathStatus = Literal["at-head", "reaches-head", "stranded", "cycle", "unresolvable"]
Severity = Literal["error", "warning"]


@dataclass
class BundlePath:
    """The hops OLM v0 takes from ``bundle`` (the bundles installed in turn, not itself)."""

    bundle: str
    version: str
    status: PathStatus
    hops: list[str] = field(default_factory=list)

    @property
    def ends_at(self) -> str:
        return self.hops[-1] if self.hops else self.bundle

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ends_at": self.ends_at}


@dataclass
class PlanProblem:
    kind: str
    severity: Severity
    bundle: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class UpgradePlan:
    """Per bundle of a channel (newest first), its path to ``head``, and the problems."""

    package: str
    channel: str
    head: str
    paths: list[BundlePath]
    problems: list[PlanProblem]

    @property
    def passed(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def path_of(self, bundle: str) -> BundlePath:
        return next(p for p in self.paths if p.bundle == bundle)

    def as_dict(self) -> dict[str, Any]:
        paths = [p.as_dict() for p in self.paths]
        problems = [p.as_dict() for p in self.problems]
        return json_fields(self, paths=paths, problems=problems, passed=self.passed)


CatalogInput = str | Path | DeclarativeConfig | ResolvedCatalog


def upgrade_plan(catalog: CatalogInput, package: str, channel: str | None = None) -> UpgradePlan:
    """The upgrade plan of ``package``'s ``channel`` (default channel when None).

    ``catalog`` is a catalog directory, a loaded config or a built model. ArgumentError
    (``package`` / ``channel``) when either is not in the catalog.
    """
    owner = _package(_model(catalog), package)
    chosen = _channel(owner, channel)
    source = CatalogSource("plan", "", ResolvedCatalog(packages={owner.name: owner}))
    entries = [c for c in catalog_candidates(source) if c.channel is chosen]
    versions = {c.entry.name: _version(c.bundle.version) for c in entries}
    problems = _skip_range_problems(entries, versions)
    try:
        ordered = sort_channel(entries)
    except ChannelOrderError as error:
        problems.insert(0, PlanProblem("channel-order", "error", "", str(error)))
        paths = [
            BundlePath(c.entry.name, c.bundle.version, "unresolvable")
            for c in _newest_first(entries, versions)
        ]
        return UpgradePlan(owner.name, chosen.name, "", paths, problems)
    head = ordered[0].entry.name if ordered else ""
    paths = [_walk(c, ordered, head, versions) for c in _newest_first(entries, versions)]
    problems = _path_problems(paths, head) + problems + _crd_problems(paths, owner)
    return UpgradePlan(owner.name, chosen.name, head, paths, problems)


def _crd_problems(paths: list[BundlePath], package: Package) -> list[PlanProblem]:
    """Each path's hops OLM v0 refuses: a CRD that drops a version the cluster stores by
    then (every storage version since the start bundle was installed)."""
    problems = []
    for path in paths:
        start = package.bundles.get(path.bundle)
        if start is None or not path.hops:
            continue
        stored = {crd.name: set(crd.storage) for crd in start.crds}
        previous = path.bundle
        for hop in path.hops:
            bundle = package.bundles.get(hop)
            if bundle is None:
                break
            for crd in bundle.crds:
                removed = sorted(stored.get(crd.name, set()) - set(crd.versions))
                if removed:
                    change = CrdChange(
                        crd.name, "", "", "storedVersionRemoval", f"[{' '.join(removed)}]"
                    )
                    message = f"hop {previous} -> {hop} fails: OLM v0 refuses it: {olm_v0_message(change)}"
                    problems.append(
                        PlanProblem("crd-stored-versions", "error", path.bundle, message)
                    )
                stored.setdefault(crd.name, set()).update(crd.storage)
            previous = hop
    return problems


def _model(catalog: CatalogInput) -> ResolvedCatalog:
    """The model, with each bundle's CRDs read from its objects (for the stored-version
    check of every hop)."""
    if isinstance(catalog, ResolvedCatalog):
        return catalog
    config = catalog if isinstance(catalog, DeclarativeConfig) else load_catalog_strict(catalog)
    return build_model(config, inspect_bundle=inspect_bundle)


def _package(model: ResolvedCatalog, name: str) -> Package:
    found = model.packages.get(name)
    if found is None or not found.channels:
        raise ArgumentError(f'"{name}" is not a package of the catalog', argument="package")
    return found


def _channel(package: Package, name: str | None) -> Channel:
    wanted = package.default_channel_name if name is None else name
    found = package.channels.get(wanted)
    if found is None:
        raise ArgumentError(
            f'"{wanted}" is not a channel of package "{package.name}"', argument="channel"
        )
    return found


def _version(text: str) -> semver.Version | None:
    with contextlib.suppress(ValueError):
        return parse_version(text)
    return None


def _newest_first(
    entries: list[Candidate], versions: dict[str, semver.Version | None]
) -> list[Candidate]:
    def key(c: Candidate) -> tuple[bool, semver.Version, str]:
        version = versions.get(c.entry.name)
        return (version is not None, version or semver.Version(0), c.entry.name)

    unique = {c.entry.name: c for c in reversed(entries)}
    return sorted(unique.values(), key=key, reverse=True)


def _walk(
    start: Candidate,
    ordered: list[Candidate],
    head: str,
    versions: dict[str, semver.Version | None],
) -> BundlePath:
    """Repeated resolution from ``start``: one hop per resolution, the first candidate wins."""
    name = start.entry.name
    if name == head:
        return BundlePath(name, start.bundle.version, "at-head")
    hops: list[str] = []
    seen = {name}
    current = name
    while True:
        candidates = next_in_channel(ordered, current, versions.get(current))
        if not candidates:
            return BundlePath(name, start.bundle.version, "stranded", hops)
        current = candidates[0].entry.name
        if current in seen:
            hops.append(current)
            return BundlePath(name, start.bundle.version, "cycle", hops)
        hops.append(current)
        seen.add(current)
        if current == head:
            return BundlePath(name, start.bundle.version, "reaches-head", hops)


def _path_problems(paths: list[BundlePath], head: str) -> list[PlanProblem]:
    problems = []
    for path in paths:
        if path.status == "cycle":
            loop = " -> ".join([path.bundle, *path.hops])
            problems.append(
                PlanProblem(
                    "cycle", "error", path.bundle, f"upgrades from {path.bundle} loop: {loop}"
                )
            )
        elif path.status == "stranded" and not path.hops:
            problems.append(
                PlanProblem(
                    "stranded",
                    "error",
                    path.bundle,
                    f"{path.bundle} is stranded: no entry replaces it, skips it or has a "
                    f"skipRange containing its version, so it never upgrades to {head}",
                )
            )
        elif path.status == "stranded":
            problems.append(
                PlanProblem(
                    "head-unreachable",
                    "error",
                    path.bundle,
                    f"upgrades from {path.bundle} stop at {path.ends_at}, not the head {head}",
                )
            )
    return problems


def _skip_range_problems(
    entries: list[Candidate], versions: dict[str, semver.Version | None]
) -> list[PlanProblem]:
    problems: list[PlanProblem] = []
    known = [(n, v) for n, v in versions.items() if v is not None]
    index = VersionIndex(v for _, v in known)  # each range matched by bisection, not per version
    for c in entries:
        own = versions.get(c.entry.name)
        if not c.entry.skip_range or own is None:
            continue
        try:
            positions = index.matching(parse_range(c.entry.skip_range))
        except ValueError:
            positions = []
        inside = [known[p] for p in positions if known[p][0] != c.entry.name]
        newer = sorted(n for n, v in inside if v > own)
        older = [n for n, v in inside if v < own]
        where = f'skipRange "{c.entry.skip_range}" of {c.entry.name}'
        if newer:
            problems.append(
                PlanProblem(
                    "skiprange-downgrade",
                    "error",
                    c.entry.name,
                    f"{where} contains newer {', '.join(newer)}: OLM v0 offers {c.entry.name} "
                    f"as their upgrade, a downgrade",
                )
            )
        if skip_range_contains(c.entry.skip_range, own):
            problems.append(
                PlanProblem(
                    "skiprange-self",
                    "warning",
                    c.entry.name,
                    f"{where} contains its own version {own}",
                )
            )
        if not older:
            problems.append(
                PlanProblem(
                    "skiprange-unused",
                    "warning",
                    c.entry.name,
                    f"{where} contains no older version of the channel",
                )
            )
    return problems
