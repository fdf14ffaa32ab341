"""Channels from the bundles' own upgrade fields (``replaces``, ``skips``, ``olm.skipRange``)
when publishing from bundles: each channel's entries, the heads joined into one chain by
version where a CSV names no ``replaces``, and the releases such a chain would strand.
``publish`` never adds an edge no CSV declares but that one ``replaces``."""

from __future__ import annotations

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.rendering import RenderedBundle
from olmtool.errors import InputError
from olmtool.findings import Finding


def version_key(rendered: RenderedBundle) -> tuple[semver.Version, str]:
    try:
        return semver.Version.parse(rendered.bundle.version), rendered.bundle.name
    except ValueError:
        raise InputError(
            f"bundle {rendered.bundle.name}: version {rendered.bundle.version!r} is not semver",
            path=rendered.bundle.origin.file,
        ) from None


def channels_from_bundles(
    package: str, bundles: list[RenderedBundle], warnings: list[Finding] | None = None
) -> list[dc.Channel]:
    """opm's replaces mode: each bundle joins its annotated channels with its CSV edges.

    Where those edges leave a channel with several heads (CSVs without ``replaces``),
    the newest bundle is the head, as in opm's replaces mode (``SemverPackageManifest``
    makes the highest version each channel's head), and the other heads are chained to it
    by version where a CSV leaves that open (see :func:`chain_heads`), so that no bundle
    is lost; a warning in ``warnings`` names the choice. A head that cannot be chained
    without an edge no CSV declares stays a head: a ``publish-stranded`` warning says
    which CSV to fix, and validation then refuses the channel (several heads).
    """
    channels: dict[str, dc.Channel] = {}
    versions: dict[str, tuple[semver.Version, str]] = {}
    names = {b.bundle.name for b in bundles}
    for rendered in sorted(bundles, key=version_key):
        if not rendered.channels:
            raise InputError(
                f"bundle {rendered.bundle.name} names no channel in metadata/annotations.yaml",
                path=rendered.bundle.origin.file,
            )
        versions[rendered.bundle.name] = version_key(rendered)
        entry = dc.ChannelEntry(
            rendered.bundle.name, rendered.replaces, list(rendered.skips), rendered.skip_range
        )
        for name in rendered.channels:
            channel = channels.setdefault(name, dc.Channel(name=name, package=package))
            channel.entries.append(
                dc.ChannelEntry(entry.name, entry.replaces, list(entry.skips), entry.skip_range)
            )
    for channel in channels.values():
        if any(e.replaces and e.replaces not in names for e in channel.entries):
            continue  # a replaces naming no bundle: opm's replaces mode refuses, so do we
        if warnings is not None:
            warnings += head_findings(channel, versions)
        else:
            chain_heads(channel, versions)
    return [channels[name] for name in sorted(channels)]


STRANDED = "publish-stranded"


def head_findings(
    channel: dc.Channel, versions: dict[str, tuple[semver.Version, str]]
) -> list[Finding]:
    """:func:`chain_heads` on ``channel``, and what it did or could not do as warnings:
    ``publish-channel-head`` (the heads chained) and ``publish-stranded`` (one per head
    left stranded)."""
    note = chain_heads(channel, versions)
    scope = f'channel "{channel.name}"'
    found = [
        Finding(STRANDED, "warning", message, package=channel.package, scope=scope)
        for message in stranded_heads(channel, versions)
    ]
    if note:
        found.insert(
            0,
            Finding("publish-channel-head", "warning", note, package=channel.package, scope=scope),
        )
    return found


def _heads(channel: dc.Channel) -> list[dc.ChannelEntry]:
    """Entries no other entry replaces or skips (a skipRange is no edge here, as in opm)."""
    reached = {e.replaces for e in channel.entries} | {s for e in channel.entries for s in e.skips}
    return [e for e in channel.entries if e.name not in reached]


def _next_newer(
    channel: dc.Channel, entry: dc.ChannelEntry, versions: dict[str, tuple[semver.Version, str]]
) -> dc.ChannelEntry:
    ordered = sorted(channel.entries, key=lambda e: versions[e.name])
    return next(e for e in ordered if versions[e.name] > versions[entry.name])


def chain_heads(channel: dc.Channel, versions: dict[str, tuple[semver.Version, str]]) -> str:
    """Make the newest entry the channel's head where the CSVs leave that open; what was
    done, or "" if nothing.

    A head is an entry no other entry replaces or skips. opm's replaces mode makes the
    highest version the head and prunes what it cannot reach; here each other head
    becomes the ``replaces`` of the next newer entry when that entry's CSV declares no
    ``replaces``, so that every bundle stays installable. When that entry already
    replaces another bundle, nothing is added (publishing writes no ``skips`` no CSV
    declares): the head stays, stranded, for :func:`stranded_heads` to explain. Entries
    change in place."""

    found = sorted(_heads(channel), key=lambda e: versions[e.name])
    if len(found) < 2:
        return ""
    chosen = found[-1]
    pruned = _unreachable(channel, chosen)
    links = []
    for head in found[:-1]:
        newer = _next_newer(channel, head, versions)
        if not newer.replaces:
            newer.replaces = head.name
            links.append(f"{newer.name} replaces {head.name}")
    if not links:
        return ""
    names = ", ".join(e.name for e in found)
    return (
        f"the bundles' replaces/skips leave {len(found)} heads ({names}); {chosen.name}, the "
        f"newest, is the head, as in opm's replaces mode, which would also drop the "
        f"{len(pruned)} bundle(s) it cannot reach ({', '.join(pruned)}); they are kept, "
        f"chained by version where a CSV declares no replaces: {'; '.join(links)}"
    )


def stranded_heads(
    channel: dc.Channel, versions: dict[str, tuple[semver.Version, str]]
) -> list[str]:
    """Why each head but the newest is one (after :func:`chain_heads`): no CSV's
    ``replaces`` or ``skips`` names it, so OLM v0 offers its users no upgrade along the
    channel and opm refuses the channel (several heads); which CSV to fix."""
    found = sorted(_heads(channel), key=lambda e: versions[e.name])
    messages = []
    for head in found[:-1]:
        newer = _next_newer(channel, head, versions)
        covering = [
            e.name
            for e in channel.entries
            if e.skip_range
            and versions[e.name] > versions[head.name]
            and _range_contains(e.skip_range, versions[head.name][0])
        ]
        if covering:
            through = (
                f"an olm.skipRange of {', '.join(covering)} contains it, but opm counts only "
                "replaces and skips as edges, so the channel has several heads"
            )
        else:
            through = "no newer bundle's olm.skipRange contains it either"
        messages.append(
            f"{head.name} is stranded (unreachable): no CSV's replaces or skips names it, "
            f"and {newer.name}, the next newer bundle, already replaces {newer.replaces}; "
            f"{through}. Publishing adds no edge a CSV does not declare: list "
            f"{head.name} in spec.skips of {newer.name}'s CSV"
        )
    return messages


def _range_contains(text: str, version: semver.Version) -> bool:
    from olmtool.versions import parse_range

    try:
        return parse_range(text).contains(version)
    except ValueError:
        return False  # validation reports the range


def _unreachable(channel: dc.Channel, head: dc.ChannelEntry) -> list[str]:
    """Entries not reachable from ``head`` through replaces and skips."""
    by_name = {e.name: e for e in channel.entries}
    seen, todo = {head.name}, [head]
    while todo:
        entry = todo.pop()
        for name in [entry.replaces, *entry.skips]:
            if name in by_name and name not in seen:
                seen.add(name)
                todo.append(by_name[name])
    return [e.name for e in channel.entries if e.name not in seen]
