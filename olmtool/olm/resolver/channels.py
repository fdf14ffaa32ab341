"""Channel order and catalog look-ups, as OLM v0's resolver sees a catalog.

OLM v0 (operator-lifecycle-manager ``pkg/controller/registry/resolver/resolver.go``,
``sortChannel``) orders a channel from its head down the ``replaces`` chain and leaves
out every bundle another entry ``skips``: those are never installed by an upgrade or a
fresh install without startingCSV. Bundles off the chain (reached only by a skipRange)
are left out too; a channel with no head, a cycle, or more than one chain is an error
that prevents resolution. Preferences follow that order: the first entry wins.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import semver

from olmtool.catalog.model import Bundle, Channel, Entry, Package
from olmtool.olm.resolver.types import CatalogSource
from olmtool.versions import Range, parse_range


class ChannelOrderError(Exception):
    """A channel OLM cannot order; the message is OLM's (an ErrorPreventedResolution)."""


@dataclass(frozen=True)
class Candidate:
    """One channel entry of one catalog, with its bundle: what OLM's cache calls an entry."""

    source: CatalogSource
    package: Package
    channel: Channel
    entry: Entry
    bundle: Bundle

    @property
    def default_channel(self) -> bool:
        return self.channel.name == self.package.default_channel_name

    @property
    def identifier(self) -> str:
        """OLM's solver id ``<catalog>/<namespace>/<channel>/<csv>`` (``bundleId``)."""
        return f"{self.source.name}/{self.source.namespace}/{self.channel.name}/{self.entry.name}"


def sort_channel(candidates: list[Candidate]) -> list[Candidate]:
    """``candidates`` (one package and channel) head first along ``replaces``, skipped left out.

    Raises :class:`ChannelOrderError` with OLM's message (``sortChannel``, quoted there
    with Go's ``%q``) when the entries have no head, a cycle or several chains.
    """
    if not candidates:
        return []
    package, channel = candidates[0].package.name, candidates[0].channel.name
    by_name = {c.entry.name: c for c in candidates}
    replaced_by: set[str] = set()
    replaces: dict[str, str] = {}
    skipped: set[str] = set()
    for c in candidates:
        if c.entry.replaces in by_name:
            replaced_by.add(c.entry.replaces)
            replaces[c.entry.name] = c.entry.replaces
        for skip in c.entry.skips:
            if skip in by_name:
                replaced_by.add(skip)
                skipped.add(skip)
    heads = [c for c in candidates if c.entry.name not in replaced_by]
    if not heads:
        raise ChannelOrderError(
            "no channel heads (entries not replaced by another entry) found in channel "
            f'"{channel}" of package "{package}"'
        )
    chains = [_chain(head.entry.name, replaces, skipped, channel, package) for head in heads]
    if len(chains) > 1:
        named = ", ".join(_chain_name(chain) for chain in chains)
        raise ChannelOrderError(
            "a unique replacement chain within a channel is required to determine the relative "
            f"order between channel entries, but {len(chains)} replacement chains were found in "
            f'channel "{channel}" of package "{package}": {named}'
        )
    return [by_name[name] for name in chains[0]]


def _chain(
    head: str, replaces: dict[str, str], skipped: set[str], channel: str, package: str
) -> list[str]:
    chain: list[str] = []
    visited: set[str] = set()
    current = head
    while True:
        visited.add(current)
        if current not in skipped:
            chain.append(current)
        following = replaces.get(current)
        if following is None:
            return chain
        if following in visited:
            raise ChannelOrderError(
                f'a cycle exists in the chain of replacement beginning with "{head}" in channel '
                f'"{channel}" of package "{package}"'
            )
        current = following


def _chain_name(chain: list[str]) -> str:
    if not chain:
        return "[]"
    return chain[0] if len(chain) == 1 else f"{chain[0]}...{chain[-1]}"


# --- catalog look-ups -------------------------------------------------------------------------


def catalog_candidates(source: CatalogSource) -> Iterator[Candidate]:
    """Every (channel entry, bundle) pair of a catalog, in catalog order."""
    for package in source.catalog.packages.values():
        for channel in package.channels.values():
            for entry in channel.entries:
                if entry.bundle is not None:
                    yield Candidate(source, package, channel, entry, entry.bundle)


def by_channel(candidates: Iterable[Candidate]) -> list[list[Candidate]]:
    """Group by (package, channel), keeping first-seen order inside each group."""
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in candidates:
        groups.setdefault((c.package.name, c.channel.name), []).append(c)
    return list(groups.values())


def subscription_order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """A Subscription's entries: default channel first, then by channel name, each sorted.

    (``getSubscriptionInstallables``: "entries in the default channel appear first, then
    lexicographically order by channel name".)
    """
    groups = by_channel(candidates)
    groups.sort(key=lambda g: (not g[0].default_channel, g[0].channel.name))
    return [c for group in groups for c in sort_channel(group)]


def dependency_order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """One catalog's bundles for a dependency (``sortBundles``): default channels first,
    then by package and channel name, each channel sorted."""
    groups = by_channel(candidates)
    groups.sort(key=lambda g: (not g[0].default_channel, g[0].package.name, g[0].channel.name))
    return [c for group in groups for c in sort_channel(group)]


# --- the upgrade predicate --------------------------------------------------------------------


def upgrades_from(entry: Entry, installed: str, version: semver.Version | None) -> bool:
    """OLM's candidate predicate for an installed CSV: ``skipRange`` contains its version,
    or the entry ``replaces`` or ``skips`` it (``SkipRangeIncludesPredicate`` or
    ``ReplacesPredicate``, which also reads skips). The installed bundle itself is never
    its own upgrade, even when its skipRange contains its own version."""
    if entry.name == installed:
        return False
    if entry.replaces == installed or installed in entry.skips:
        return True
    return version is not None and skip_range_contains(entry.skip_range, version)


def skip_range_contains(text: str, version: semver.Version) -> bool:
    """Whether a skipRange contains ``version``; an empty or unparsable range contains none."""
    if not text:
        return False
    parsed = _parsed_range(text)
    return parsed is not None and parsed.contains(version)


@functools.lru_cache(maxsize=4096)
def _parsed_range(text: str) -> Range | None:
    """Each skipRange parsed once (a channel walk asks about the same ranges again and
    again); ranges are immutable, so sharing them is safe."""
    try:
        return parse_range(text)
    except ValueError:
        return None


def next_in_channel(
    ordered: list[Candidate], installed: str, version: semver.Version | None
) -> list[Candidate]:
    """The upgrade candidates of an installed CSV among ``ordered`` entries, best first."""
    return [c for c in ordered if upgrades_from(c.entry, installed, version)]
