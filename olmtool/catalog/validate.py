"""Catalog validation: every check ``opm validate`` makes, plus the graph checks it misses.

Checks are grouped by what they look at (packages, channels, bundles, deprecations) and
never stop at the first problem. Each finding carries its check id (see ``CHECKS``), the
package and object it concerns, and the file and line of the blob.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog import properties as props
from olmtool.catalog.findings import Finding, Severity
from olmtool.catalog.load import load_catalog
from olmtool.catalog.model import channel_heads, distances_to_head, upgrade_edges
from olmtool.errors import InputError
from olmtool.findings import Findings
from olmtool.images import parse_reference
from olmtool.versions import parse_range

# check id -> (severity, what it catches). "extra" marks checks opm does not make.
CHECKS: dict[str, tuple[Severity, str]] = {
    "parse": ("error", "a file is not valid JSON or YAML"),
    "duplicate-key": ("error", "schema/package/name given twice in different case"),
    "schema-missing": ("error", "a blob has no schema"),
    "decode": ("error", "a field has the wrong type"),
    "package-name": ("error", "package name empty or not a DNS-1123 label"),
    "package-duplicate": ("error", "two olm.package blobs with one name"),
    "package-missing": ("error", "a channel, bundle or deprecation names an unknown package"),
    "default-channel": ("error", "default channel unset or not a channel of the package"),
    "package-no-channels": ("error", "a package without channels"),
    "channel-name": ("error", "a channel without a name"),
    "channel-duplicate": ("error", "two channels of one package with one name"),
    "channel-entry-duplicate": ("error", "a channel lists a bundle twice"),
    "channel-empty": ("error", "a channel without entries"),
    "channel-entry-bundle": ("error", "a channel entry names no olm.bundle"),
    "channel-head": ("error", "a channel has no head or several"),
    "channel-cycle": ("error", "the replaces chain from the head loops"),
    "channel-stranded": ("error", "a bundle neither on the replaces chain nor skipped"),
    "skips-empty": ("error", "an empty string in skips"),
    "skip-range": ("error", "skipRange is not a semver range"),
    "bundle-name": ("error", "a bundle without a name"),
    "bundle-duplicate": ("error", "two bundles of one package with one name"),
    "bundle-not-in-channel": ("error", "a bundle in no channel"),
    "property-decode": ("error", "a known property with a malformed value"),
    "package-property": ("error", "not exactly one olm.package property, or the wrong package"),
    "csv-metadata-multiple": ("error", "more than one olm.csv.metadata property"),
    "image-reference": ("error", "image or related image is not a valid pull spec"),
    "image-missing": ("error", "no image and no olm.bundle.object properties"),
    "version": ("error", "the olm.package version is not semver"),
    "version-duplicate": ("error", "two bundles of a package with one version"),
    "release-name": ("error", "a bundle with a release not named <pkg>-v<version>-<release>"),
    "deprecation-duplicate": ("error", "more than one olm.deprecations blob per package"),
    "deprecation-reference": ("error", "a deprecation names an unknown bundle or channel"),
    "deprecation-message": ("error", "a deprecation entry without a message"),
    # extra: what opm lets through
    "unreachable-head": ("error", "extra: a bundle with no upgrade path to its channel head"),
    "gvk": ("error", "extra: an olm.gvk that is not a valid group/version/kind"),
    "skips-unknown": ("warning", "extra: skips names no bundle of the package"),
    "skip-range-unmatched": ("warning", "extra: skipRange matches no bundle of the package"),
    "replaces-mismatch": ("warning", "extra: the CSV's spec.replaces disagrees with the channel"),
    "default-channel-stale": (
        "warning",
        "extra: another channel's head is newer than the default's",
    ),
    "related-image-empty": ("warning", "extra: a related image without an image"),
    "icon": ("warning", "extra: the package icon is not base64 image data"),
}

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_KUBE_VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_ICON_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")


@dataclass
class Report(Findings):
    """Findings of one validation; ``passed`` when none is an error."""

    def as_dict(self, *, strict: bool = False) -> dict[str, Any]:
        """opm's ``{passed, error:{message}}`` plus every finding."""
        data: dict[str, Any] = {"passed": self.passed(strict=strict)}
        if not data["passed"]:
            data["error"] = {"message": error_tree_text(self.findings)}
        data["findings"] = [f.as_dict() for f in self.findings]
        return data


def validate_catalog(root: str | Path) -> Report:
    """Load the catalog below ``root`` and validate it."""
    result = load_catalog(root)
    if not result.config.package_names() and not result.findings:
        raise InputError("holds no catalog blobs", path=root)
    return validate_config(result.config, load_findings=result.findings)


def validate_config(
    config: dc.DeclarativeConfig, *, load_findings: Iterable[Finding] = ()
) -> Report:
    checker = _Checker(config)
    checker.findings.extend(load_findings)
    checker.run()
    order = {check: index for index, check in enumerate(CHECKS)}
    checker.findings.sort(
        key=lambda f: (
            f.package or "",
            f.scope or "",
            order.get(f.check, 99),
            f.file or "",
            f.line or 0,
            f.message,
        )
    )
    return Report(_unique(checker.findings))


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[Finding] = set()
    return [f for f in findings if not (f in seen or seen.add(f))]


class _Checker:
    def __init__(self, config: dc.DeclarativeConfig):
        self.config = config
        self.findings: list[Finding] = []
        self.packages: dict[str, dc.Package] = {}
        self.bundles: dict[str, dict[str, dc.Bundle]] = defaultdict(dict)
        self.channels: dict[str, dict[str, dc.Channel]] = defaultdict(dict)
        # parsed once: large catalogs ask for the same versions and CSVs many times
        self._versions: dict[int, semver.Version | None] = {}
        self._csv_replaces: dict[int, str | None] = {}

    def version(self, bundle: dc.Bundle) -> semver.Version | None:
        key = id(bundle)
        if key not in self._versions:
            self._versions[key] = _semver(bundle.version)
        return self._versions[key]

    def csv_replaces(self, bundle: dc.Bundle) -> str | None:
        """The CSV's spec.replaces ("" if unset), or None without a CSV object; only the
        string is kept: holding decoded CSVs would multiply memory on big catalogs."""
        key = id(bundle)
        if key not in self._csv_replaces:
            csv = props.csv_object(bundle)
            self._csv_replaces[key] = (
                None if csv is None else str((csv.get("spec") or {}).get("replaces") or "")
            )
        return self._csv_replaces[key]

    def add(
        self,
        check: str,
        message: str,
        origin: dc.Origin,
        package: str | None,
        scope: str | None = None,
    ) -> None:
        severity = CHECKS[check][0]
        self.findings.append(
            Finding(
                check, severity, message, origin.file or None, origin.line, package or None, scope
            )
        )

    def run(self) -> None:
        for package in self.config.packages:
            self.check_package(package)
        for bundle in self.config.bundles:
            self.check_bundle(bundle)
        for channel in self.config.channels:
            self.check_channel(channel)
        for package in self.packages.values():
            self.check_package_graph(package)
        self.check_deprecations()

    # --- packages ---------------------------------------------------------------------

    def check_package(self, package: dc.Package) -> None:
        name = package.name
        if not name or not _DNS1123_LABEL.match(name) or len(name) > 63:
            self.add(
                "package-name",
                f"invalid package name {name!r}: must be a DNS-1123 label",
                package.origin,
                name,
            )
        if name in self.packages:
            first = self.packages[name].origin
            self.add(
                "package-duplicate", f"duplicate package (first at {first})", package.origin, name
            )
            return
        self.packages[name] = package
        if package.icon is not None:
            self.check_icon(package)

    def check_icon(self, package: dc.Package) -> None:
        icon = package.icon
        assert icon is not None
        try:
            base64.b64decode(icon.base64data, validate=True)
        except (binascii.Error, ValueError):
            self.add("icon", "icon base64data is not valid base64", package.origin, package.name)
            return
        if icon.mediatype not in _ICON_TYPES:
            self.add(
                "icon",
                f"icon mediatype {icon.mediatype!r} is not one of {', '.join(_ICON_TYPES)}",
                package.origin,
                package.name,
            )

    def check_package_graph(self, package: dc.Package) -> None:
        name = package.name
        channels = self.channels.get(name, {})
        if not channels:
            self.add("package-no-channels", "package has no channels", package.origin, name)
        if not package.default_channel:
            self.add("default-channel", "default channel must be set", package.origin, name)
        elif package.default_channel not in channels:
            self.add(
                "default-channel",
                f'default channel "{package.default_channel}" not found in channels list',
                package.origin,
                name,
            )
        else:
            self.check_default_channel_head(package, channels)
        in_channel = {e.name for c in channels.values() for e in c.entries}
        for bundle in self.bundles.get(name, {}).values():
            if bundle.name not in in_channel:
                self.add(
                    "bundle-not-in-channel",
                    "bundle is not in any channel",
                    bundle.origin,
                    name,
                    _bundle(bundle.name),
                )
        self.check_versions(name)

    def check_default_channel_head(
        self, package: dc.Package, channels: dict[str, dc.Channel]
    ) -> None:
        head_versions = {c: self.head_version(channel) for c, channel in channels.items()}
        default = head_versions.get(package.default_channel)
        if default is None:
            return
        newer = sorted(c for c, v in head_versions.items() if v is not None and v > default)
        if newer:
            self.add(
                "default-channel-stale",
                f"the default channel's head ({default}) is older than the head of {', '.join(newer)}",
                package.origin,
                package.name,
            )

    def head_version(self, channel: dc.Channel) -> semver.Version | None:
        heads = channel_heads(channel)
        if len(heads) != 1:
            return None
        bundle = self.bundles.get(channel.package, {}).get(heads[0])
        return self.version(bundle) if bundle else None

    def check_versions(self, package: str) -> None:
        seen: dict[tuple[semver.Version, str], dc.Bundle] = {}
        for bundle in sorted(self.bundles.get(package, {}).values(), key=lambda b: b.name):
            version = self.version(bundle)
            if version is None:
                continue
            key = (version.replace(build=None), bundle.release)
            if key in seen:
                other = seen[key].name
                self.add(
                    "version-duplicate",
                    f"bundle version {bundle.version} is also the version of {other}",
                    bundle.origin,
                    package,
                    _bundle(bundle.name),
                )
            else:
                seen[key] = bundle

    # --- bundles ------------------------------------------------------------------------

    def check_bundle(self, bundle: dc.Bundle) -> None:
        scope = _bundle(bundle.name)
        package = bundle.package
        if not bundle.name:
            self.add("bundle-name", "bundle name must be set", bundle.origin, package)
        if not package or package not in self.packages:
            self.add(
                "package-missing", f"unknown package {package!r}", bundle.origin, package, scope
            )
        if bundle.name in self.bundles[package]:
            first = self.bundles[package][bundle.name].origin
            self.add(
                "bundle-duplicate",
                f"duplicate bundle (first at {first})",
                bundle.origin,
                package,
                scope,
            )
            return
        self.bundles[package][bundle.name] = bundle
        csv_replaces = None
        for prop in bundle.properties:
            if prop.type == dc.PROP_BUNDLE_OBJECT:  # decoded once here: CSVs are large
                manifest, why = props.decode_bundle_object(prop.value)
                found = f"{prop.type}: {why}" if why else None
                if manifest is not None and manifest.get("kind") == "ClusterServiceVersion":
                    csv_replaces = str((manifest.get("spec") or {}).get("replaces") or "")
            else:
                found = props.problem(prop)
            if found:
                self.add(
                    "property-decode", f"parse property: {found}", bundle.origin, package, scope
                )
        self._csv_replaces[id(bundle)] = csv_replaces
        self.check_package_property(bundle, scope)
        self.check_images(bundle, scope)
        self.check_gvks(bundle, scope)
        if len(bundle.properties_of(dc.PROP_CSV_METADATA)) > 1:
            self.add(
                "csv-metadata-multiple",
                "more than one olm.csv.metadata property",
                bundle.origin,
                package,
                scope,
            )

    def check_package_property(self, bundle: dc.Bundle, scope: str) -> None:
        packages = bundle.properties_of(dc.PROP_PACKAGE)
        if len(packages) != 1:
            self.add(
                "package-property",
                f"must be exactly one property of type {dc.PROP_PACKAGE!r}, found {len(packages)}",
                bundle.origin,
                bundle.package,
                scope,
            )
            return
        value = packages[0].value
        if not isinstance(value, dict) or props.problem(packages[0]):
            return  # property-decode reported it
        if value.get("packageName") != bundle.package:
            self.add(
                "package-property",
                f"package {value.get('packageName')!r} does not match olm.package property's packageName",
                bundle.origin,
                bundle.package,
                scope,
            )
        if self.version(bundle) is None:
            self.add(
                "version",
                f"invalid version {bundle.version!r}: not a semantic version",
                bundle.origin,
                bundle.package,
                scope,
            )
        release = bundle.release
        if release:
            expected = f"{bundle.package}-v{bundle.version}-{release}"
            if bundle.name != expected:
                self.add(
                    "release-name",
                    f"a bundle with release {release!r} must be named {expected!r}",
                    bundle.origin,
                    bundle.package,
                    scope,
                )

    def check_images(self, bundle: dc.Bundle, scope: str) -> None:
        for where, image in [
            ("image", bundle.image),
            *(("relatedImages", r.image) for r in bundle.related_images),
        ]:
            if image and (problem := _reference_problem(image)):
                self.add(
                    "image-reference",
                    f"{where} {image!r}: {problem}",
                    bundle.origin,
                    bundle.package,
                    scope,
                )
        for related in bundle.related_images:
            if not related.image:
                self.add(
                    "related-image-empty",
                    f"related image {related.name!r} has no image",
                    bundle.origin,
                    bundle.package,
                    scope,
                )
        if not bundle.image and not bundle.properties_of(dc.PROP_BUNDLE_OBJECT):
            self.add(
                "image-missing",
                "bundle image must be set (or olm.bundle.object properties given)",
                bundle.origin,
                bundle.package,
                scope,
            )

    def check_gvks(self, bundle: dc.Bundle, scope: str) -> None:
        for type_ in (dc.PROP_GVK, dc.PROP_GVK_REQUIRED):
            for group, version, kind in props.gvks(bundle, type_):
                why = _gvk_problem(group, version, kind)
                if why:
                    self.add(
                        "gvk",
                        f"{type_} {group}/{version}/{kind}: {why}",
                        bundle.origin,
                        bundle.package,
                        scope,
                    )

    # --- channels -------------------------------------------------------------------------

    def check_channel(self, channel: dc.Channel) -> None:
        package, scope = channel.package, _channel(channel.name)
        if not channel.name:
            self.add("channel-name", "channel name must be set", channel.origin, package)
            return
        if not package or package not in self.packages:
            self.add(
                "package-missing", f"unknown package {package!r}", channel.origin, package, scope
            )
            return
        if channel.name in self.channels[package]:
            first = self.channels[package][channel.name].origin
            self.add(
                "channel-duplicate",
                f"duplicate channel (first at {first})",
                channel.origin,
                package,
                scope,
            )
            return
        self.channels[package][channel.name] = channel
        if not channel.entries:
            self.add(
                "channel-empty",
                "channel must contain at least one bundle",
                channel.origin,
                package,
                scope,
            )
            return
        self.check_entries(channel, scope)
        self.check_graph(channel, scope)

    def check_entries(self, channel: dc.Channel, scope: str) -> None:
        package = channel.package
        bundles = self.bundles.get(package, {})
        for name, count in sorted(Counter(e.name for e in channel.entries).items()):
            if count > 1:
                self.add(
                    "channel-entry-duplicate",
                    f"duplicate entry {name!r}",
                    channel.origin,
                    package,
                    scope,
                )
        for entry in channel.entries:
            if entry.name not in bundles:
                self.add(
                    "channel-entry-bundle",
                    f"entry {entry.name!r} names no bundle of the package",
                    channel.origin,
                    package,
                    scope,
                )
            if any(not skip for skip in entry.skips):
                self.add(
                    "skips-empty",
                    f"entry {entry.name!r}: skips holds an empty string",
                    channel.origin,
                    package,
                    scope,
                )
            for skip in entry.skips:
                if skip and skip not in bundles:
                    self.add(
                        "skips-unknown",
                        f"entry {entry.name!r} skips {skip!r}, which is no bundle of the package",
                        channel.origin,
                        package,
                        scope,
                    )
            if entry.skip_range:
                self.check_skip_range(channel, entry, scope)
            self.check_csv_replaces(channel, entry, scope)

    def check_skip_range(self, channel: dc.Channel, entry: dc.ChannelEntry, scope: str) -> None:
        try:
            skip_range = parse_range(entry.skip_range)
        except ValueError as exc:
            self.add(
                "skip-range",
                f"entry {entry.name!r}: invalid skipRange: {exc}",
                channel.origin,
                channel.package,
                scope,
            )
            return
        versions = [self.version(b) for b in self.bundles.get(channel.package, {}).values()]
        if not any(v is not None and skip_range.contains(v) for v in versions):
            self.add(
                "skip-range-unmatched",
                f"entry {entry.name!r}: skipRange {entry.skip_range!r} matches no bundle of the package",
                channel.origin,
                channel.package,
                scope,
            )

    def check_csv_replaces(self, channel: dc.Channel, entry: dc.ChannelEntry, scope: str) -> None:
        bundle = self.bundles.get(channel.package, {}).get(entry.name)
        declared = self.csv_replaces(bundle) if bundle else None
        if declared is None:
            return
        if declared != entry.replaces:
            self.add(
                "replaces-mismatch",
                f"entry {entry.name!r} replaces {entry.replaces or 'nothing'} but its CSV's spec.replaces is {declared or 'empty'}",
                channel.origin,
                channel.package,
                scope,
            )

    def check_graph(self, channel: dc.Channel, scope: str) -> None:
        package = channel.package
        heads = sorted(set(channel_heads(channel)))
        if len(heads) != 1:
            found = ", ".join(heads) if heads else "none"
            self.add(
                "channel-head",
                f"multiple channel heads found in graph: {found}"
                if heads
                else "no channel head found in graph",
                channel.origin,
                package,
                scope,
            )
            return
        by_name = {e.name: e for e in channel.entries}
        chain, cycle = _replaces_chain(by_name, heads[0])
        if cycle:
            self.add(
                "channel-cycle",
                f"detected cycle in replaces chain of upgrade graph: {' -> '.join(cycle)}",
                channel.origin,
                package,
                scope,
            )
            return
        skipped = {skip for e in channel.entries for skip in e.skips}
        stranded = sorted(name for name in by_name if name not in chain and name not in skipped)
        if stranded:
            self.add(
                "channel-stranded",
                f"channel contains one or more stranded bundles: {', '.join(stranded)}",
                channel.origin,
                package,
                scope,
            )
        reachable = self.reaches_head(channel, heads[0])
        unreachable = sorted(n for n in by_name if n not in reachable and n not in stranded)
        if unreachable:
            self.add(
                "unreachable-head",
                f"no upgrade path from {', '.join(unreachable)} to the channel head {heads[0]}",
                channel.origin,
                package,
                scope,
            )

    def reaches_head(self, channel: dc.Channel, head: str) -> set[str]:
        """Entries with a path of replaces/skips/skipRange edges to ``head``."""
        edges = upgrade_edges(channel, self.bundles.get(channel.package, {}))
        return set(distances_to_head(edges, head))

    # --- deprecations ------------------------------------------------------------------------

    def check_deprecations(self) -> None:
        seen: set[str] = set()
        for deprecation in self.config.deprecations:
            package, origin = deprecation.package, deprecation.origin
            if not package or package not in self.packages:
                self.add(
                    "package-missing",
                    f"olm.deprecations for unknown package {package!r}",
                    origin,
                    package,
                )
                continue
            if package in seen:
                self.add(
                    "deprecation-duplicate",
                    "more than one olm.deprecations blob for the package",
                    origin,
                    package,
                )
                continue
            seen.add(package)
            for index, entry in enumerate(deprecation.entries):
                self.check_deprecation_entry(deprecation, index, entry)

    def check_deprecation_entry(
        self, deprecation: dc.Deprecation, index: int, entry: dc.DeprecationEntry
    ) -> None:
        package, origin, reference = deprecation.package, deprecation.origin, entry.reference
        where = f"entries[{index}]"
        if not entry.message:
            self.add("deprecation-message", f"{where}: message must be set", origin, package)
        if reference.schema == dc.SCHEMA_PACKAGE:
            if reference.name:
                self.add(
                    "deprecation-reference",
                    f"{where}: an olm.package reference must not have a name (got {reference.name!r})",
                    origin,
                    package,
                )
        elif reference.schema == dc.SCHEMA_CHANNEL:
            if reference.name not in self.channels.get(package, {}):
                self.add(
                    "deprecation-reference",
                    f"{where}: unknown channel {reference.name!r}",
                    origin,
                    package,
                )
        elif reference.schema == dc.SCHEMA_BUNDLE:
            if reference.name not in self.bundles.get(package, {}):
                self.add(
                    "deprecation-reference",
                    f"{where}: unknown bundle {reference.name!r}",
                    origin,
                    package,
                )
        else:
            self.add(
                "deprecation-reference",
                f"{where}: reference schema {reference.schema!r} is not olm.package, olm.channel or olm.bundle",
                origin,
                package,
            )


def _replaces_chain(by_name: dict[str, dc.ChannelEntry], head: str) -> tuple[set[str], list[str]]:
    """Names on the replaces walk from ``head`` and, if it loops, the loop."""
    path: list[str] = []
    name: str | None = head
    while name and name in by_name:
        if name in path:
            return set(path), [*path[path.index(name) :], name]
        path.append(name)
        name = by_name[name].replaces
    return set(path), []


def _semver(text: str) -> semver.Version | None:
    try:
        return semver.Version.parse(text) if text else None
    except (ValueError, TypeError):
        return None


def _reference_problem(image: str) -> str | None:
    try:
        parse_reference(image)
    except InputError as exc:
        return exc.message
    return None


def _gvk_problem(group: str, version: str, kind: str) -> str | None:
    if group and not _DNS1123_SUBDOMAIN.match(group):
        return f"group {group!r} is not a DNS subdomain"
    if not _KUBE_VERSION.match(version):
        return f"version {version!r} is not a Kubernetes API version (v1, v1beta2, ...)"
    if not _KIND.match(kind):
        return f"kind {kind!r} is not UpperCamelCase"
    return None


def _bundle(name: str) -> str:
    return f'bundle "{name}"'


def _channel(name: str) -> str:
    return f'channel "{name}"'


# --- rendering the error tree like opm ---------------------------------------------------


def error_tree(findings: list[Finding]) -> dict[str, Any]:
    """{package: {scope: [finding]}} with "" for catalog-level and package-level entries."""
    tree: dict[str, dict[str, list[Finding]]] = {}
    for finding in findings:
        tree.setdefault(finding.package or "", {}).setdefault(finding.scope or "", []).append(
            finding
        )
    return tree


def _leaf(finding: Finding) -> str:
    where = f" ({finding.location})" if finding.location else ""
    marker = "" if finding.severity == "error" else "warning: "
    return f"{marker}{finding.message} [{finding.check}]{where}"


def error_tree_lines(findings: list[Finding]) -> list[str]:
    """opm's "invalid index" tree: package, then channel/bundle, then the messages."""
    lines = ["invalid index:"]

    def branch(items: list[tuple[str, Any]], prefix: str) -> None:
        for index, (label, children) in enumerate(items):
            last = index == len(items) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{label}")
            if children:
                branch(children, prefix + ("    " if last else "│   "))

    top: list[tuple[str, Any]] = []
    for package, scopes in error_tree(findings).items():
        children: list[tuple[str, Any]] = []
        for scope, items in scopes.items():
            leaves = [(_leaf(f), None) for f in items]
            if scope:
                children.append((f"invalid {scope}:", leaves))
            else:
                children.extend(leaves)
        if package:
            top.append((f'invalid package "{package}":', children))
        else:
            top.extend(children)
    branch(top, "")
    return lines


def error_tree_text(findings: list[Finding]) -> str:
    return "\n".join(error_tree_lines(findings))
