"""The resolved catalog: packages -> channels -> entries -> bundles, linked both ways.

Built once by :func:`olmtool.catalog.model.build_model` (or a
:class:`~olmtool.catalog.model.ModelBuilder` fed blob by blob). Bundles are lean records:
what checks, graphs and the registry API route on, never the ``olm.bundle.object``
payloads, so that a model of a 20,000-bundle catalog stays small.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.model.edges import Edge, entry_edges
from olmtool.findings import Finding

GVK = tuple[str, str, str]  # (group, version, kind), as the registry API orders them


@dataclass(frozen=True, slots=True)
class CrdInfo:
    """What upgrade edges need of a bundle's CRD: its name, versions and the versions a
    cluster stores once it installed it (storage version or status.storedVersions)."""

    name: str
    versions: tuple[str, ...]
    storage: tuple[str, ...]


@dataclass(eq=False, slots=True)
class Bundle:
    """One olm.bundle, first of its (package, name); ``channels`` lists those naming it."""

    name: str
    package: str
    image: str
    version: str  # the olm.package property's version as written, "" without exactly one
    release: str
    parsed_version: semver.Version | None  # parsed once; None when it is not semver
    origin: dc.Origin
    provides: tuple[GVK, ...] = ()  # well-formed olm.gvk properties
    requires: tuple[GVK, ...] = ()  # well-formed olm.gvk.required properties
    # well-formed olm.package.required properties: (packageName, versionRange)
    requires_packages: tuple[tuple[str, str], ...] = ()
    # The CSV's spec.replaces ("" if unset), None without a CSV object (or not inspected);
    # set by the bundle inspection, which decodes the objects anyway.
    csv_replaces: str | None = None
    crds: tuple[CrdInfo, ...] = ()  # its olm.bundle.object CRDs (set by the inspection)
    channels: list[Channel] = field(default_factory=list)
    deprecation: str | None = None  # the olm.deprecations message; None: not deprecated


@dataclass(eq=False, slots=True)
class Entry:
    """A channel entry; ``bundle`` is the package's bundle of that name, if there is one."""

    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""
    bundle: Bundle | None = None


@dataclass(eq=False)
class Channel:
    """One olm.channel, first of its (package, name), with its entries in file order."""

    name: str
    package: str
    origin: dc.Origin
    entries: list[Entry] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)  # no replaces/skips into them, in order
    deprecation: str | None = None
    _edges: list[Edge] | None = field(default=None, repr=False)

    @property
    def head(self) -> str | None:
        """The one head, or None when there are none or several."""
        heads = set(self.heads)
        return self.heads[0] if len(heads) == 1 else None

    @property
    def edges(self) -> list[Edge]:
        """Upgrade edges (replaces, skips, skipRange), computed on first use."""
        if self._edges is None:
            versions = {
                e.name: e.bundle.parsed_version
                for e in self.entries
                if e.bundle is not None and e.bundle.parsed_version is not None
            }
            self._edges = entry_edges(self.entries, versions)
        return self._edges


@dataclass(eq=False)
class Package:
    """A package with its channels and bundles (each in file order).

    ``origin`` is None for a package that channels, bundles or deprecations name but no
    olm.package blob declares (the model keeps their objects; resolution reports them).
    """

    name: str
    origin: dc.Origin | None = None
    default_channel_name: str = ""
    icon: dc.Icon | None = None
    channels: dict[str, Channel] = field(default_factory=dict)
    bundles: dict[str, Bundle] = field(default_factory=dict)
    deprecation: str | None = None
    deprecations: dc.Deprecation | None = None  # the package's olm.deprecations blob

    @property
    def declared(self) -> bool:
        return self.origin is not None

    @property
    def default_channel(self) -> Channel | None:
        return self.channels.get(self.default_channel_name)

    def versions(self) -> dict[str, semver.Version]:
        """Bundle name -> version, for the bundles whose version parses."""
        return {
            name: bundle.parsed_version
            for name, bundle in self.bundles.items()
            if bundle.parsed_version is not None
        }


@dataclass
class ResolvedCatalog:
    """The model and what resolving it found (unknown packages, duplicates, dangling
    entries, ...); a catalog whose findings hold no error resolves completely."""

    packages: dict[str, Package] = field(default_factory=dict)  # declared first, in order
    findings: list[Finding] = field(default_factory=list)

    def declared_packages(self) -> Iterator[Package]:
        return (p for p in self.packages.values() if p.declared)

    def channels(self) -> Iterator[Channel]:
        for package in self.packages.values():
            yield from package.channels.values()
