"""declcfg -> model: resolve names into links, once, and report what does not resolve.

Like operator-registry's ``declcfg_to_model.go``, except that nothing stops at the first
problem: every blob that cannot take its place (an unknown package, a duplicate, a
channel entry naming no bundle, ...) becomes a finding and the rest is still linked, so
that validation can go on and graphs can be drawn for broken catalogs too.

Blobs can be fed one at a time (:class:`ModelBuilder`, what the catalog server does while
it streams files) or as a whole config (:func:`build_model`); the outcome is the same
because nothing is decided before :meth:`ModelBuilder.finish` that depends on blobs of
another schema.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

from olmtool.catalog import declcfg as dc
from olmtool.catalog import properties as props
from olmtool.catalog.checks import bundle_scope, channel_scope, finding
from olmtool.catalog.model.edges import channel_heads
from olmtool.catalog.model.types import GVK, Bundle, Channel, Entry, Package, ResolvedCatalog
from olmtool.findings import Finding
from olmtool.k8snames import DNS1123_LABEL
from olmtool.versions import parse_version

# What a caller learns from a full bundle blob before only its lean record is kept:
# findings about it and its CSV's spec.replaces (see Bundle.csv_replaces).
BundleInspector = Callable[[dc.Bundle, Bundle], tuple[list[Finding], str | None]]


def build_model(
    config: dc.DeclarativeConfig, *, inspect_bundle: BundleInspector | None = None
) -> ResolvedCatalog:
    """The resolved model of ``config`` and the findings of resolving it.

    >>> catalog = build_model(load_catalog_strict("catalog/"))           # doctest: +SKIP
    >>> catalog.packages["etcd"].default_channel.head                    # doctest: +SKIP
    'etcdoperator.v0.9.4'
    """
    builder = ModelBuilder(inspect_bundle=inspect_bundle)
    builder.add_config(config)
    return builder.finish()


def lean_bundle(bundle: dc.Bundle) -> Bundle:
    """The record the model keeps of a bundle blob (names interned: entries share them)."""
    version = bundle.version
    try:
        parsed = parse_version(version) if version else None
    except ValueError:
        parsed = None
    return Bundle(
        name=sys.intern(bundle.name),
        package=sys.intern(bundle.package),
        image=bundle.image,
        version=version,
        release=bundle.release,
        parsed_version=parsed,
        origin=bundle.origin,
        provides=_gvks(bundle, dc.PROP_GVK),
        requires=_gvks(bundle, dc.PROP_GVK_REQUIRED),
        requires_packages=_package_requirements(bundle),
    )


_GVKS: dict[GVK, GVK] = {}  # one tuple per distinct GVK, shared by every bundle


def _gvks(bundle: dc.Bundle, type_: str) -> tuple[GVK, ...]:
    return tuple(_GVKS.setdefault(gvk, gvk) for gvk in props.gvks(bundle, type_))


def _package_requirements(bundle: dc.Bundle) -> tuple[tuple[str, str], ...]:
    """(packageName, versionRange) of each well-formed olm.package.required property."""
    found = []
    for prop in bundle.properties_of(dc.PROP_PACKAGE_REQUIRED):
        value = prop.value
        if props.problem(prop) is None and isinstance(value, dict):
            found.append((str(value["packageName"]), str(value["versionRange"])))
    return tuple(found)


class ModelBuilder:
    """Collects blobs, then :meth:`finish` links them into a :class:`ResolvedCatalog`.

    ``inspect_bundle`` sees every bundle blob that takes its place (not duplicates) while
    it is whole; its findings join the resolution's.
    """

    def __init__(self, *, inspect_bundle: BundleInspector | None = None) -> None:
        self.inspect_bundle = inspect_bundle
        self.catalog = ResolvedCatalog()
        self.findings = self.catalog.findings
        self._bundles: dict[tuple[str, str], Bundle] = {}
        self._bundle_packages: list[tuple[str, str, dc.Origin]] = []  # checked at finish
        self._channels: list[dc.Channel] = []
        self._deprecations: list[dc.Deprecation] = []

    def _add(
        self,
        check: str,
        message: str,
        origin: dc.Origin,
        package: str | None,
        scope: str | None = None,
    ) -> None:
        self.findings.append(finding(check, message, origin, package, scope))

    # --- feeding blobs --------------------------------------------------------------------

    def add_config(self, config: dc.DeclarativeConfig) -> None:
        """Every blob of ``config`` (they may come in any order: :meth:`finish` links)."""
        for package in config.packages:
            self.add_package(package)
        for bundle in config.bundles:
            self.add_bundle(bundle)
        for channel in config.channels:
            self.add_channel(channel)
        for deprecation in config.deprecations:
            self.add_deprecation(deprecation)

    def add_package(self, package: dc.Package) -> None:
        name = package.name
        if not name or not DNS1123_LABEL.match(name) or len(name) > 63:
            message = f"invalid package name {name!r}: must be a DNS-1123 label"
            self._add("package-name", message, package.origin, name)
        known = self.catalog.packages.get(name)
        if known is not None:
            message = f"duplicate package (first at {known.origin})"
            self._add("package-duplicate", message, package.origin, name)
            return
        self.catalog.packages[name] = Package(
            name, package.origin, sys.intern(package.default_channel), package.icon
        )

    def add_bundle(self, bundle: dc.Bundle) -> Bundle | None:
        """The bundle's lean record, or None for a duplicate (the first one stays)."""
        if not self._admit(bundle.package, bundle.name, bundle.origin):
            return None
        record = lean_bundle(bundle)
        if self.inspect_bundle is not None:
            found, record.csv_replaces = self.inspect_bundle(bundle, record)
            self.findings.extend(found)
        self._bundles[(bundle.package, bundle.name)] = record
        return record

    def add_record(self, record: Bundle, found: list[Finding]) -> Bundle | None:
        """:meth:`add_bundle` for a bundle already reduced to its lean record and
        inspected (``found``: the inspection's findings, dropped with a duplicate)."""
        if not self._admit(record.package, record.name, record.origin):
            return None
        record.name, record.package = sys.intern(record.name), sys.intern(record.package)
        self.findings.extend(found)
        self._bundles[(record.package, record.name)] = record
        return record

    def _admit(self, package: str, name: str, origin: dc.Origin) -> bool:
        """Whether a bundle blob takes its place (a duplicate does not)."""
        scope = bundle_scope(name)
        if not name:
            self._add("bundle-name", "bundle name must be set", origin, package)
        self._bundle_packages.append((package, scope, origin))
        first = self._bundles.get((package, name))
        if first is not None:
            message = f"duplicate bundle (first at {first.origin})"
            self._add("bundle-duplicate", message, origin, package, scope)
            return False
        return True

    def add_channel(self, channel: dc.Channel) -> None:
        self._channels.append(channel)

    def add_deprecation(self, deprecation: dc.Deprecation) -> None:
        self._deprecations.append(deprecation)

    # --- resolving ------------------------------------------------------------------------

    def finish(self) -> ResolvedCatalog:
        declared = {name for name, p in self.catalog.packages.items() if p.declared}
        self._place_bundles(declared)
        for channel in self._channels:
            self._place_channel(channel, declared)
        for package in list(self.catalog.declared_packages()):
            self._check_placement(package)
        for deprecation in self._deprecations:
            self._place_deprecation(deprecation, declared)
        return self.catalog

    def _package(self, name: str) -> Package:
        """The package ``name``; an undeclared one is made up so that its objects link."""
        package = self.catalog.packages.get(name)
        if package is None:
            package = self.catalog.packages[name] = Package(name)
        return package

    def _place_bundles(self, declared: set[str]) -> None:
        for (package, name), bundle in self._bundles.items():
            self._package(package).bundles[name] = bundle
        for package, scope, origin in self._bundle_packages:
            if not package or package not in declared:
                self._add("package-missing", f"unknown package {package!r}", origin, package, scope)

    def _place_channel(self, blob: dc.Channel, declared: set[str]) -> None:
        package_name, scope = blob.package, channel_scope(blob.name)
        if not blob.name:
            self._add("channel-name", "channel name must be set", blob.origin, package_name)
            return
        unknown = not package_name or package_name not in declared
        if unknown:
            message = f"unknown package {package_name!r}"
            self._add("package-missing", message, blob.origin, package_name, scope)
        package = self._package(package_name)
        first = package.channels.get(blob.name)
        if first is not None:
            if not unknown:
                message = f"duplicate channel (first at {first.origin})"
                self._add("channel-duplicate", message, blob.origin, package_name, scope)
            return
        channel = _link_channel(blob, package)
        package.channels[channel.name] = channel
        if not unknown:
            self._check_entries(channel, scope)

    def _check_entries(self, channel: Channel, scope: str) -> None:
        origin, package = channel.origin, channel.package
        if not channel.entries:
            message = "channel must contain at least one bundle"
            self._add("channel-empty", message, origin, package, scope)
            return
        for name, count in sorted(Counter(e.name for e in channel.entries).items()):
            if count > 1:
                self._add(
                    "channel-entry-duplicate", f"duplicate entry {name!r}", origin, package, scope
                )
        for entry in channel.entries:
            if entry.bundle is None:
                message = f"entry {entry.name!r} names no bundle of the package"
                self._add("channel-entry-bundle", message, origin, package, scope)

    def _check_placement(self, package: Package) -> None:
        """A declared package needs channels, its default among them, every bundle in one."""
        assert package.origin is not None
        origin, name = package.origin, package.name
        if not package.channels:
            self._add("package-no-channels", "package has no channels", origin, name)
        if not package.default_channel_name:
            self._add("default-channel", "default channel must be set", origin, name)
        elif package.default_channel is None:
            message = f'default channel "{package.default_channel_name}" not found in channels list'
            self._add("default-channel", message, origin, name)
        for bundle in package.bundles.values():
            if not bundle.channels:
                message = "bundle is not in any channel"
                self._add(
                    "bundle-not-in-channel", message, bundle.origin, name, bundle_scope(bundle.name)
                )

    def _place_deprecation(self, blob: dc.Deprecation, declared: set[str]) -> None:
        name, origin = blob.package, blob.origin
        if not name or name not in declared:
            message = f"olm.deprecations for unknown package {name!r}"
            self._add("package-missing", message, origin, name)
            _apply_deprecation(blob, self._package(name))  # still marked: graphs of broken catalogs
            return
        package = self.catalog.packages[name]
        if package.deprecations is not None:
            message = "more than one olm.deprecations blob for the package"
            self._add("deprecation-duplicate", message, origin, name)
            return
        package.deprecations = blob
        for index, entry in enumerate(blob.entries):
            problem = _reference_problem(entry.reference, package)
            if problem:
                self._add("deprecation-reference", f"entries[{index}]: {problem}", origin, name)
        _apply_deprecation(blob, package)


def _link_channel(blob: dc.Channel, package: Package) -> Channel:
    """The channel with its entries pointing at their bundles and the bundles back at it."""
    channel = Channel(sys.intern(blob.name), package.name, blob.origin)
    for item in blob.entries:
        bundle = package.bundles.get(item.name)
        channel.entries.append(
            Entry(
                bundle.name if bundle is not None else sys.intern(item.name),
                sys.intern(item.replaces),
                tuple(sys.intern(s) for s in item.skips),
                item.skip_range,
                bundle,
            )
        )
        if bundle is not None and channel not in bundle.channels:
            bundle.channels.append(channel)
    channel.heads = channel_heads(channel)
    return channel


def _reference_problem(reference: dc.DeprecationReference, package: Package) -> str | None:
    if reference.schema == dc.SCHEMA_PACKAGE:
        if reference.name:
            return f"an olm.package reference must not have a name (got {reference.name!r})"
    elif reference.schema == dc.SCHEMA_CHANNEL:
        if reference.name not in package.channels:
            return f"unknown channel {reference.name!r}"
    elif reference.schema == dc.SCHEMA_BUNDLE:
        if reference.name not in package.bundles:
            return f"unknown bundle {reference.name!r}"
    else:
        return (
            f"reference schema {reference.schema!r} is not olm.package, olm.channel or olm.bundle"
        )
    return None


def _apply_deprecation(blob: dc.Deprecation, package: Package) -> None:
    """Deprecation messages onto what they name (a later entry for one object wins)."""
    for entry in blob.entries:
        schema, name = entry.reference.schema, entry.reference.name
        if schema == dc.SCHEMA_PACKAGE:
            package.deprecation = entry.message
        elif schema == dc.SCHEMA_CHANNEL and name in package.channels:
            package.channels[name].deprecation = entry.message
        elif schema == dc.SCHEMA_BUNDLE and name in package.bundles:
            package.bundles[name].deprecation = entry.message
