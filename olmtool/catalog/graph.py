"""Upgrade graphs for people: Mermaid text, a per-package view, and the paths OLM would take.

- :func:`mermaid` writes what ``opm alpha render-graph`` writes (operator-registry
  ``alpha/declcfg/write.go``, ``MermaidWriter.WriteChannels`` with its default "v0
  semantics"): ``graph LR``, one subgraph per package and per channel, edges from the older
  bundle to the newer one labelled ``replace``, ``skip`` or ``"skipRange(<range>)"``, and
  the classes ``deprecated``, ``skipped`` and ``deprecatedskipped``. Unlike opm, output
  does not depend on map iteration order, link indices follow the order links are written,
  and deprecations of one package's channels or bundles do not leak into another's.
- :func:`package_views` is the data behind ``olmtool catalog graph --format tree``.
- :func:`upgrade_paths` tells, for every bundle of every channel, the hops OLM v0 takes to
  the channel head (one resolution at a time, the candidate nearest the head wins) and the
  single hop OLM v1 takes (the highest-versioned successor).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.model import (
    Channel,
    Edge,
    Package,
    ResolvedCatalog,
    build_model,
    channel_heads,
    distances_to_head,
)
from olmtool.errors import InputError
from olmtool.versions import parse_version

# The decoration text of opm alpha render-graph, verbatim.
CLASS_DEFS = (
    "  classDef deprecated fill:#E8960F\n"
    "  classDef skipped stroke:#FF0000,stroke-width:4px\n"
    "  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px\n"
)
DEPRECATED_PACKAGE_STYLE = "fill:#989695"
DEPRECATED_CHANNEL_STYLE = "fill:#DCD0FF"
SKIPPED_LINK_STYLE = "stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;"

# Mermaid edges per entry are written in opm's order: skips, skipRange, then replaces.
_EDGE_ORDER = {"skip": 0, "skipRange": 1, "replace": 2}


# --- shared helpers ---------------------------------------------------------------------------


def _newest_first(names: list[str], versions: dict[str, semver.Version]) -> list[str]:
    """Highest version first; names without a version last; equal versions by name."""
    ordered = sorted(names)
    return sorted(
        ordered,
        key=lambda n: (n in versions, versions.get(n, semver.Version(0))),
        reverse=True,
    )


def _channels(
    catalog: ResolvedCatalog, config: dc.DeclarativeConfig, package: str | None
) -> list[Channel]:
    """The channels to show, sorted by (package, name); InputError for an unknown package.

    Any package a blob names counts (graphs are drawn for catalogs that do not validate).
    """
    if package is not None and package not in config.package_names():
        raise InputError(f'no package "{package}" in the catalog')
    channels = [c for c in catalog.channels() if package is None or c.package == package]
    return sorted(channels, key=lambda c: (c.package, c.name))


def _package_of(catalog: ResolvedCatalog, name: str) -> Package:
    return catalog.packages.get(name) or Package(name)


def go_quote(text: str) -> str:
    """``text`` as Go's ``%q`` writes it (strconv.Quote)."""
    escapes = {
        '"': '\\"',
        "\\": "\\\\",
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
    }
    out = []
    for char in text:
        code = ord(char)
        if char in escapes:
            out.append(escapes[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif char.isprintable():
            out.append(char)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


# --- Mermaid ----------------------------------------------------------------------------------


def mermaid(
    config: dc.DeclarativeConfig,
    *,
    package: str | None = None,
    minimum_version: str | None = None,
) -> str:
    """The channels of ``config`` as a Mermaid flowchart, like ``opm alpha render-graph``.

    ``package`` keeps one package. ``minimum_version`` (a semantic version, or a bundle
    name like opm's ``--minimum-edge``, which also limits the graph to that bundle's
    package) drops entries below that version and the edges that start there; a channel
    left without entries is not drawn.
    """
    catalog = build_model(config)
    channels = _channels(catalog, config, package)
    floor, floor_package = _floor(config, minimum_version, package)
    if floor_package is not None:
        channels = [c for c in channels if c.package == floor_package]

    bodies: dict[str, list[str]] = {}
    deprecated_channel_ids: list[str] = []
    decorated: dict[str, list[str]] = {"deprecated": [], "deprecatedskipped": [], "skipped": []}
    skipped_links: list[int] = []
    link_id = 0

    for channel in channels:
        owner = catalog.packages[channel.package]
        versions = owner.versions()
        names = [e.name for e in channel.entries]
        if floor is not None:
            names = [n for n in names if n in versions and versions[n] >= floor]
        if not names:
            continue
        kept = set(names)
        edges_to: dict[str, list[Edge]] = {}
        for edge in channel.edges:
            if edge.to not in kept:
                continue
            if floor is not None and not (edge.from_ in versions and versions[edge.from_] >= floor):
                continue
            edges_to.setdefault(edge.to, []).append(edge)

        channel_id = f"{channel.package}-{channel.name}"
        lines = bodies.setdefault(channel.package, [])
        lines.append(f"    %% channel {go_quote(channel.name)}")
        lines.append(f"    subgraph {channel_id}[{go_quote(channel.name)}]")
        if channel.deprecation is not None:
            deprecated_channel_ids.append(channel_id)

        skipped: set[str] = set()
        for name in _newest_first(names, versions):
            entry_id = f"{channel_id}-{name}"
            lines.append(f"      {entry_id}[{go_quote(name)}]")
            bundle = owner.bundles.get(name)
            is_deprecated = bundle is not None and bundle.deprecation is not None
            if is_deprecated and name in skipped:
                decorated["deprecatedskipped"].append(entry_id)
            elif is_deprecated:
                decorated["deprecated"].append(entry_id)
            elif name in skipped:
                decorated["skipped"].append(entry_id)

            for edge in sorted(edges_to.get(name, []), key=lambda e: _EDGE_ORDER[e.kind]):
                label = f'"skipRange({edge.range})"' if edge.kind == "skipRange" else edge.kind
                lines.append(
                    f"      {channel_id}-{edge.from_}[{go_quote(edge.from_)}]-- {label} --> "
                    f"{entry_id}[{go_quote(name)}]"
                )
                # opm's v0 semantics: a bundle skipped by a newer entry is never upgraded
                # to, so links into it (and repeated skips of it) are drawn as dead ends.
                if edge.kind == "skip":
                    if edge.from_ in skipped:
                        skipped_links.append(link_id)
                    else:
                        skipped.add(edge.from_)
                elif name in skipped:
                    skipped_links.append(link_id)
                link_id += 1
        lines.append("    end")

    out = ["graph LR\n", CLASS_DEFS]
    for name in sorted(bodies):
        out.append(f"  %% package {go_quote(name)}\n")
        out.append(f"  subgraph {go_quote(name)}\n")
        out.extend(line + "\n" for line in bodies[name])
        out.append("  end\n")
    for name in sorted(bodies):
        if catalog.packages[name].deprecation is not None:
            out.append(f"style {name} {DEPRECATED_PACKAGE_STYLE}\n")
    for channel_id in deprecated_channel_ids:
        out.append(f"style {channel_id} {DEPRECATED_CHANNEL_STYLE}\n")
    for key in sorted(decorated):
        if decorated[key]:
            out.append(f"class {','.join(sorted(decorated[key]))} {key}\n")
    if skipped_links:
        out.append(f"linkStyle {','.join(map(str, skipped_links))} {SKIPPED_LINK_STYLE}\n")
    return "".join(out)


def _floor(
    config: dc.DeclarativeConfig, minimum: str | None, package: str | None
) -> tuple[semver.Version | None, str | None]:
    """The version floor and, when given as a bundle name, the package it limits to."""
    if minimum is None or minimum == "":
        return None, None
    try:
        return parse_version(minimum), None
    except ValueError:
        pass
    for bundle in config.bundles:
        if bundle.name == minimum and (package is None or bundle.package == package):
            try:
                return parse_version(bundle.version), bundle.package
            except ValueError:
                raise InputError(
                    f'minimum bundle "{minimum}" has no semantic version ({bundle.version!r})'
                ) from None
    raise InputError(f'minimum version "{minimum}" is neither a semantic version nor a bundle')


# --- the tree view ----------------------------------------------------------------------------


@dataclass
class EntryView(dc.ChannelEntry):
    """A channel entry (its upgrade fields) with what the tree shows beside it."""

    version: str = ""
    head: bool = False
    deprecated: str = ""  # the deprecation message, "" when not deprecated


@dataclass
class ChannelView:
    name: str
    default: bool
    heads: list[str]
    entries: list[EntryView]  # newest first
    deprecated: str = ""


@dataclass
class PackageView:
    name: str
    default_channel: str
    channels: list[ChannelView]
    deprecated: str = ""


def package_views(config: dc.DeclarativeConfig, *, package: str | None = None) -> list[PackageView]:
    """Packages (sorted) -> channels (sorted) -> entries (newest first), with markers."""
    catalog = build_model(config)
    channels = _channels(catalog, config, package)
    names = [package] if package is not None else config.package_names()
    views = []
    for name in names:
        owner = _package_of(catalog, name)
        channel_views = [
            _channel_view(channel, owner) for channel in channels if channel.package == name
        ]
        views.append(
            PackageView(
                name=name,
                default_channel=owner.default_channel_name,
                channels=channel_views,
                deprecated=owner.deprecation or "",
            )
        )
    return views


def _channel_view(channel: Channel, owner: Package) -> ChannelView:
    heads = sorted(set(channel.heads))
    by_entry = {e.name: e for e in channel.entries}
    entries = []
    for name in _newest_first(list(by_entry), owner.versions()):
        entry, bundle = by_entry[name], owner.bundles.get(name)
        entries.append(
            EntryView(
                name=name,
                version=bundle.version if bundle is not None else "",
                replaces=entry.replaces,
                skips=list(entry.skips),
                skip_range=entry.skip_range,
                head=name in heads,
                deprecated=(bundle.deprecation or "") if bundle is not None else "",
            )
        )
    return ChannelView(
        name=channel.name,
        default=channel.name == owner.default_channel_name,
        heads=heads,
        entries=entries,
        deprecated=channel.deprecation or "",
    )


# --- upgrade paths ----------------------------------------------------------------------------

V0Status = Literal["at-head", "reaches-head", "stuck", "cycle"]


@dataclass
class UpgradePath:
    """What OLM does with one installed bundle of one channel.

    ``v0_path`` lists the bundles OLM v0 installs in turn (not the installed one); it ends
    at ``head`` when ``v0_status`` is ``reaches-head``. ``stuck``: no candidate before the
    head (the last bundle of the path, or the installed one, is where it stops); ``cycle``:
    the walk came back to a bundle it had installed. ``v1_next`` is the bundle OLM v1
    upgrades to in one step ("" when there is none).
    """

    package: str
    channel: str
    bundle: str
    version: str
    head: str
    v0_status: V0Status
    v0_path: list[str]
    v0_hops: int
    v1_next: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def path_head(channel: dc.Channel | Channel, versions: dict[str, semver.Version]) -> str:
    """The head paths aim at: the channel's one head; with several, the newest; else ""."""
    heads = _newest_first(sorted(set(channel_heads(channel))), versions)
    return heads[0] if heads else ""


def upgrade_paths(config: dc.DeclarativeConfig, *, package: str | None = None) -> list[UpgradePath]:
    """Every bundle of every channel (packages and channels sorted, entries newest first).

    OLM v0, one resolution at a time: the candidates are the channel entries that replace
    the installed bundle, skip it, or whose skipRange contains its version; the one with
    the fewest edges left to the head wins, then the higher version, then the name.
    OLM v1: among the same successors, the highest version (then the name).
    """
    catalog = build_model(config)
    paths: list[UpgradePath] = []
    for channel in _channels(catalog, config, package):
        paths += channel_upgrade_paths(channel, catalog.packages[channel.package])
    return paths


def channel_upgrade_paths(channel: Channel, owner: Package) -> list[UpgradePath]:
    """:func:`upgrade_paths` of one channel of a model already built (``owner`` is the
    channel's package), entries newest first."""
    return _channel_paths(channel, owner)


def _channel_paths(channel: Channel, owner: Package) -> list[UpgradePath]:
    versions = owner.versions()
    bundles = owner.bundles
    edges = channel.edges
    next_of: dict[str, list[str]] = {}
    for edge in edges:
        targets = next_of.setdefault(edge.from_, [])
        if edge.to not in targets:
            targets.append(edge.to)
    head = path_head(channel, versions)
    distance = distances_to_head(edges, head) if head else {}

    def v0_rank(name: str) -> tuple[float, int, Any, str]:
        return (
            distance.get(name, float("inf")),
            0 if name in versions else 1,
            _negated(versions.get(name)),
            name,
        )

    def v1_rank(name: str) -> tuple[int, Any, str]:
        return (0 if name in versions else 1, _negated(versions.get(name)), name)

    paths = []
    for name in _newest_first(list(dict.fromkeys(e.name for e in channel.entries)), versions):
        v0_status, v0_path = _walk_v0(name, head, next_of, v0_rank)
        candidates = next_of.get(name, [])
        paths.append(
            UpgradePath(
                package=channel.package,
                channel=channel.name,
                bundle=name,
                version=bundles[name].version if name in bundles else "",
                head=head,
                v0_status=v0_status,
                v0_path=v0_path,
                v0_hops=len(v0_path),
                v1_next=min(candidates, key=v1_rank) if candidates else "",
            )
        )
    return paths


def _walk_v0(
    start: str, head: str, next_of: dict[str, list[str]], rank: Any
) -> tuple[V0Status, list[str]]:
    if start == head:
        return "at-head", []
    path: list[str] = []
    seen = {start}
    current = start
    while True:
        candidates = next_of.get(current, [])
        if not candidates:
            return "stuck", path
        current = min(candidates, key=rank)
        if current in seen:
            return "cycle", path
        path.append(current)
        seen.add(current)
        if current == head:
            return "reaches-head", path


class _Negated:
    """Wraps a version so that sorting ascending puts higher versions first."""

    __slots__ = ("version",)

    def __init__(self, version: semver.Version) -> None:
        self.version = version

    def __lt__(self, other: _Negated) -> bool:
        return self.version > other.version

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Negated) and self.version == other.version

    __hash__ = None  # type: ignore[assignment]


def _negated(version: semver.Version | None) -> Any:
    return _Negated(version if version is not None else semver.Version(0))
