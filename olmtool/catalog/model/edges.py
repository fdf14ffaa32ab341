"""Channel graphs: heads and upgrade edges (replaces, skips, skipRange).

Pure functions over anything shaped like a channel (:class:`olmtool.catalog.declcfg.Channel`
or the model's resolved :class:`~olmtool.catalog.model.types.Channel`): its ``entries``
have ``name``, ``replaces``, ``skips`` and ``skip_range``.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import semver

from olmtool.catalog import declcfg as dc
from olmtool.versions import VersionIndex, parse_range, parse_version


class EntryLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def replaces(self) -> str: ...
    @property
    def skips(self) -> Iterable[str]: ...
    @property
    def skip_range(self) -> str: ...


class ChannelLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def package(self) -> str: ...
    @property
    def entries(self) -> Iterable[EntryLike]: ...


def channel_heads(channel: ChannelLike) -> list[str]:
    """Entries no other entry replaces or skips (skipRange ignored, as in opm), in order."""
    incoming: set[str] = set()
    for entry in channel.entries:
        if entry.replaces:
            incoming.add(entry.replaces)
        incoming.update(entry.skips)
    return [e.name for e in channel.entries if e.name not in incoming]


def channel_head(channel: ChannelLike) -> str:
    """The one head of a channel; ValueError when there are none or several."""
    heads = sorted(set(channel_heads(channel)))
    if len(heads) != 1:
        found = ", ".join(heads) or "none"
        raise ValueError(f'channel "{channel.name}" needs exactly one head, found {found}')
    return heads[0]


# --- upgrade edges ---------------------------------------------------------------------------

EdgeKind = Literal["replace", "skip", "skipRange"]


@dataclass(frozen=True, slots=True)
class Edge:
    """One upgrade edge of a channel, from the older bundle to the entry that upgrades it.

    ``range`` is the skipRange text for ``skipRange`` edges and "" otherwise.
    """

    from_: str
    to: str
    kind: EdgeKind
    range: str = ""


def bundle_versions(
    bundles: Mapping[str, dc.Bundle] | Iterable[dc.Bundle],
) -> dict[str, semver.Version]:
    """Bundle name -> semver version, leaving out bundles whose version does not parse."""
    values = bundles.values() if isinstance(bundles, Mapping) else bundles
    versions: dict[str, semver.Version] = {}
    for bundle in values:
        if bundle.name in versions:
            continue
        with contextlib.suppress(ValueError):
            versions[bundle.name] = parse_version(bundle.version)
    return versions


def upgrade_edges(
    channel: ChannelLike, bundles: Mapping[str, dc.Bundle] | Iterable[dc.Bundle]
) -> list[Edge]:
    """Every upgrade edge of ``channel``, in entry order; per entry: replace, skips, skipRange.

    ``bundles`` are the package's bundles (a name -> bundle mapping or any iterable; bundles
    of other packages are ignored), needed for versions. replaces and skips edges are kept
    even when they name no entry of the channel (opm allows the tail to replace a bundle
    that does not exist); a skipRange yields one edge per *other* entry of the channel
    whose bundle version it contains, and none when it does not parse.
    """
    if not isinstance(bundles, Mapping):
        bundles = [b for b in bundles if b.package == channel.package]
    return entry_edges(channel.entries, bundle_versions(bundles))


def entry_edges(entries: Iterable[EntryLike], versions: Mapping[str, semver.Version]) -> list[Edge]:
    """:func:`upgrade_edges` of a channel's ``entries``, given the versions of its bundles.

    Near linear: the entries' versions are indexed once (:class:`VersionIndex`) and each
    distinct skipRange is parsed and matched once, by bisection, however many entries
    share it; the cost is the entries plus the edges found, not entries x entries.
    """
    entries = list(entries)
    names = [e.name for e in entries]
    unique = len(set(names)) == len(names)
    index = VersionIndex(versions.get(name) for name in names)
    # skipRange text -> positions of the entries it contains (None: it does not parse)
    matched: dict[str, list[int] | None] = {}
    edges: list[Edge] = []
    seen: set[tuple[str, str, str]] = set()

    def add(edge: Edge) -> None:
        key = (edge.from_, edge.to, edge.kind)
        if key not in seen and edge.from_ != edge.to:
            seen.add(key)
            edges.append(edge)

    for entry in entries:
        if entry.replaces:
            add(Edge(entry.replaces, entry.name, "replace"))
        for skipped in entry.skips:
            if skipped:
                add(Edge(skipped, entry.name, "skip"))
        text = entry.skip_range
        if not text:
            continue
        if text not in matched:
            try:
                matched[text] = index.matching(parse_range(text))
            except ValueError:
                matched[text] = None
        positions = matched[text] or ()
        if unique:  # no two skipRange edges can be the same: only a self edge to leave out
            to = entry.name
            edges.extend(Edge(names[p], to, "skipRange", text) for p in positions if names[p] != to)
        else:
            for position in positions:
                add(Edge(names[position], entry.name, "skipRange", text))
    return edges


def successors(edges: Iterable[Edge], name: str) -> list[Edge]:
    """The edges leaving ``name``: the entries a bundle ``name`` may upgrade to."""
    return [e for e in edges if e.from_ == name]


def distances_to_head(edges: Iterable[Edge], head: str) -> dict[str, int]:
    """Fewest upgrade edges from each bundle to ``head`` (head: 0); absent when unreachable."""
    older: dict[str, list[str]] = {}
    for edge in edges:
        older.setdefault(edge.to, []).append(edge.from_)
    distances = {head: 0}
    queue = deque([head])
    while queue:
        name = queue.popleft()
        for previous in older.get(name, []):
            if previous not in distances:
                distances[previous] = distances[name] + 1
                queue.append(previous)
    return distances
