"""Catalog validation: every check ``opm validate`` makes, plus the graph checks it misses.

The catalog is resolved once into the model (:func:`olmtool.catalog.model.build_model`),
which reports what does not resolve (unknown packages, duplicates, entries naming no
bundle, ...) and meanwhile runs the checks of each bundle blob
(:mod:`olmtool.catalog.bundle_checks`); this module adds the checks that look at the
resolved packages and channels (heads, cycles, stranded bundles, skips, versions). Nothing
stops at the first problem. Each finding carries its check id (see ``CHECKS``), the
package and object it concerns, and the file and line of the blob.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.bundle_checks import inspect_bundle
from olmtool.catalog.checks import CHECKS, channel_scope, check_rows, finding, ordered, origin_of
from olmtool.catalog.crd_upgrade import (
    CRD_UPGRADE,
    STORED_VERSIONS,
    check_crd_upgrade_safety,
    check_stored_versions,
)
from olmtool.catalog.error_tree import error_tree, error_tree_lines, error_tree_text
from olmtool.catalog.load import load_catalog
from olmtool.catalog.model import (
    Channel,
    Entry,
    Package,
    ResolvedCatalog,
    build_model,
    distances_to_head,
)
from olmtool.catalog.olmv1 import OLM_V1, check_olm_v1, select_catalog_suites
from olmtool.catalog.reduce import reduce_catalog
from olmtool.errors import InputError
from olmtool.findings import Finding, Findings
from olmtool.versions import VersionIndex, parse_range

__all__ = [
    "CHECKS",
    "Report",
    "check_model",
    "check_rows",
    "checks_run",
    "error_tree",
    "error_tree_lines",
    "error_tree_text",
    "report",
    "select_catalog_suites",
    "validate_catalog",
    "validate_config",
]

_ICON_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")


@dataclass
class Report(Findings):
    """Findings of one validation; ``passed`` when none is an error."""

    def as_dict(self, *, strict: bool = False) -> dict[str, Any]:
        """opm's ``{passed, error:{message}}`` plus every finding."""
        data: dict[str, Any] = {"passed": self.passed(strict=strict)}
        if not data["passed"]:
            data["error"] = {"message": error_tree_text(self.findings)}
        # origin: "upstream" (opm's check) or "olmtool" (beyond opm)
        data["findings"] = [
            {**f.as_dict(), "package": f.package, "scope": f.scope, "origin": origin_of(f.check)}
            for f in self.findings
        ]
        data.update(self.waiver_dicts(origin_of))
        return data


def validate_catalog(root: str | Path, *, suites: Sequence[str] = ()) -> Report:
    """Load the catalog below ``root`` and validate it (plus the optional ``suites``).

    Without suites the catalog is reduced file by file (:mod:`olmtool.catalog.reduce`):
    its bundle objects are never all in memory, and a big catalog's files are read by
    worker processes. The suites read whole blobs at the end."""
    if suites:
        result = load_catalog(root)
        if not result.config.package_names() and not result.findings:
            raise InputError("holds no catalog blobs", path=root)
        return validate_config(result.config, load_findings=result.findings, suites=suites)
    reduced = reduce_catalog(Path(root))
    if not reduced.named and not reduced.load_findings:
        raise InputError("holds no catalog blobs", path=root)
    catalog = reduced.catalog
    return report([*reduced.load_findings, *catalog.findings, *check_model(catalog)])


def validate_config(
    config: dc.DeclarativeConfig,
    *,
    load_findings: Iterable[Finding] = (),
    suites: Sequence[str] = (),
) -> Report:
    """Validate a loaded catalog; ``suites`` adds optional suites (``olm-v1``)."""
    catalog = build_model(config, inspect_bundle=inspect_bundle)
    found = [*load_findings, *catalog.findings, *check_model(catalog)]
    if OLM_V1 in suites:
        found += check_olm_v1(config, catalog)
    if OLM_V1 in suites or CRD_UPGRADE in suites:  # OLM v1 runs the CRD preflight
        found += check_crd_upgrade_safety(config, catalog)
    return report(found)


def checks_run(suites: Sequence[str]) -> set[str]:
    """The check ids a validation with ``suites`` runs (a waiver of another one is not
    reported as matching nothing: its check did not run)."""
    crd_suite = OLM_V1 in suites or CRD_UPGRADE in suites
    return {
        check
        for check in CHECKS
        if not (check.startswith("olm-v1/") and OLM_V1 not in suites)
        and not (check.startswith("crd-upgrade/") and check != STORED_VERSIONS and not crd_suite)
    }


def report(findings: Iterable[Finding]) -> Report:
    """A report of ``findings`` in report order (package, object, check), each once."""
    return Report(ordered(list(findings)))


def check_model(catalog: ResolvedCatalog, *, extra: bool = True) -> list[Finding]:
    """The checks of resolved packages and channels (resolution's own findings aside);
    ``extra`` False leaves out the checks opm does not make (what serving needs).

    Packages no olm.package declares, and channels resolution refused (duplicates, no
    name, no entries), are not checked: resolution reported them already.
    """
    found: list[Finding] = []
    for package in catalog.declared_packages():
        _PackageChecks(package, found, extra=extra).run()
    if extra:
        found += check_stored_versions(catalog)
    return found


def is_extra(check: str) -> bool:
    """Whether ``check`` is olmtool's own (opm lets what it catches through)."""
    return CHECKS[check][1].startswith("extra:")


class _PackageChecks:
    def __init__(self, package: Package, found: list[Finding], *, extra: bool = True) -> None:
        self.package = package
        self.found = found
        self.extra = extra

    def add(self, check: str, message: str, origin: dc.Origin, scope: str | None = None) -> None:
        if self.extra or not is_extra(check):
            self.found.append(finding(check, message, origin, self.package.name, scope))

    def run(self) -> None:
        package = self.package
        if package.icon is not None:
            self.check_icon(package.icon)
        if package.default_channel is not None:
            self.check_default_channel_head(package.default_channel)
        self.check_versions()
        if package.deprecations is not None:
            self.check_deprecation_messages(package.deprecations)
        for channel in package.channels.values():
            if channel.entries:
                _ChannelChecks(self, channel).run()

    @functools.cached_property
    def version_index(self) -> VersionIndex:
        """The package's bundle versions, indexed once for every skipRange check."""
        return VersionIndex(self.package.versions().values())

    @property
    def origin(self) -> dc.Origin:
        assert self.package.origin is not None  # only declared packages are checked
        return self.package.origin

    def check_icon(self, icon: dc.Icon) -> None:
        try:
            base64.b64decode(icon.base64data, validate=True)
        except (binascii.Error, ValueError):
            self.add("icon", "icon base64data is not valid base64", self.origin)
            return
        if icon.mediatype not in _ICON_TYPES:
            message = f"icon mediatype {icon.mediatype!r} is not one of {', '.join(_ICON_TYPES)}"
            self.add("icon", message, self.origin)

    def check_default_channel_head(self, default_channel: Channel) -> None:
        channels = self.package.channels
        head_versions = {name: self.head_version(c) for name, c in channels.items()}
        default = head_versions[default_channel.name]
        if default is None:
            return
        newer = sorted(c for c, v in head_versions.items() if v is not None and v > default)
        if newer:
            self.add(
                "default-channel-stale",
                f"the default channel's head ({default}) is older than the head of {', '.join(newer)}",
                self.origin,
            )

    def head_version(self, channel: Channel) -> semver.Version | None:
        heads = channel.heads
        if len(heads) != 1:
            return None
        bundle = self.package.bundles.get(heads[0])
        return bundle.parsed_version if bundle else None

    def check_versions(self) -> None:
        seen: dict[tuple[semver.Version, str], str] = {}
        for name in sorted(self.package.bundles):
            bundle = self.package.bundles[name]
            if bundle.parsed_version is None:
                continue
            key = (bundle.parsed_version.replace(build=None), bundle.release)
            if key in seen:
                self.add(
                    "version-duplicate",
                    f"bundle version {bundle.version} is also the version of {seen[key]}",
                    bundle.origin,
                    f'bundle "{name}"',
                )
            else:
                seen[key] = name

    def check_deprecation_messages(self, deprecation: dc.Deprecation) -> None:
        for index, entry in enumerate(deprecation.entries):
            if not entry.message:
                message = f"entries[{index}]: message must be set"
                self.add("deprecation-message", message, deprecation.origin)


class _ChannelChecks:
    """Checks of one channel's entries and upgrade graph; findings name the channel."""

    def __init__(self, package: _PackageChecks, channel: Channel) -> None:
        self.package = package
        self.channel = channel
        self.scope = channel_scope(channel.name)

    def add(self, check: str, message: str) -> None:
        self.package.add(check, message, self.channel.origin, self.scope)

    def run(self) -> None:
        for entry in self.channel.entries:
            self.check_entry(entry)
        self.check_graph()

    def check_entry(self, entry: Entry) -> None:
        bundles = self.package.package.bundles
        if any(not skip for skip in entry.skips):
            self.add("skips-empty", f"entry {entry.name!r}: skips holds an empty string")
        for skip in entry.skips:
            if skip and skip not in bundles:
                self.add(
                    "skips-unknown",
                    f"entry {entry.name!r} skips {skip!r}, which is no bundle of the package",
                )
        if entry.skip_range:
            self.check_skip_range(entry)
        declared = entry.bundle.csv_replaces if entry.bundle is not None else None
        if declared is not None and declared != entry.replaces:
            self.add(
                "replaces-mismatch",
                f"entry {entry.name!r} replaces {entry.replaces or 'nothing'} but its CSV's spec.replaces is {declared or 'empty'}",
            )

    def check_skip_range(self, entry: Entry) -> None:
        try:
            skip_range = parse_range(entry.skip_range)
        except ValueError as exc:
            self.add("skip-range", f"entry {entry.name!r}: invalid skipRange: {exc}")
            return
        if not self.package.version_index.any_match(skip_range):
            self.add(
                "skip-range-unmatched",
                f"entry {entry.name!r}: skipRange {entry.skip_range!r} matches no bundle of the package",
            )

    def check_graph(self) -> None:
        channel = self.channel
        heads = sorted(set(channel.heads))
        if len(heads) != 1:
            self.add(
                "channel-head",
                f"multiple channel heads found in graph: {', '.join(heads)}"
                if heads
                else "no channel head found in graph",
            )
            return
        by_name = {e.name: e for e in channel.entries}
        chain, cycle = _replaces_chain(by_name, heads[0])
        if cycle:
            message = f"detected cycle in replaces chain of upgrade graph: {' -> '.join(cycle)}"
            self.add("channel-cycle", message)
            return
        skipped = {skip for e in channel.entries for skip in e.skips}
        stranded = sorted(name for name in by_name if name not in chain and name not in skipped)
        if stranded:
            message = f"channel contains one or more stranded bundles: {', '.join(stranded)}"
            self.add("channel-stranded", message)
        if not self.package.extra:
            return
        reachable = set(distances_to_head(channel.edges, heads[0]))
        unreachable = sorted(n for n in by_name if n not in reachable and n not in stranded)
        if unreachable:
            self.add(
                "unreachable-head",
                f"no upgrade path from {', '.join(unreachable)} to the channel head {heads[0]}",
            )


def _replaces_chain(by_name: dict[str, Entry], head: str) -> tuple[set[str], list[str]]:
    """Names on the replaces walk from ``head`` and, if it loops, the loop."""
    path: dict[str, int] = {}  # name -> its place on the walk (a set that keeps order)
    name: str | None = head
    while name and name in by_name:
        if name in path:
            walk = list(path)
            return set(walk), [*walk[path[name] :], name]
        path[name] = len(path)
        name = by_name[name].replaces
    return set(path), []
