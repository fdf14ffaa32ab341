"""The semver template's channels as opm v1.26.0 generates them (``--opm-compat 1.26``).

operator-registry v1.26.0 (``alpha/veneer/semver``, ``opm alpha render-veneer semver``)
links each generated channel on its own; newer opm (:func:`.semver.semver_channels`) links
across the whole archetype and major version instead, so its minor channels point at the
previous minor channel's bundles. In v1.26, per channel, entries in ascending version:

* by default the highest version of each minor version (Y-stream) ``replaces`` the
  highest of the Y-stream before it and ``skips`` the rest of its own Y-stream (sorted by
  name); the lowest Y-stream's highest skips its Y-stream and replaces nothing; the
  other entries get no edges;
* with ``avoidSkipPatch: true`` every entry replaces the one before it.

The default channel is v1.26's "high-water" channel: walking archetypes (candidate, fast,
stable), bundles in ascending version, the major channel before the minor one of each
bundle, a channel takes over when its archetype is more stable *or* its bundle's version
is higher than the current one's (starting from candidate at 0.0.0, so a catalog whose
bundles are all 0.0.0 or below gets no default channel).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.templates.semver import version_key

ARCHETYPES = ("candidate", "fast", "stable")
_PRIORITY = {name: rank for rank, name in enumerate(ARCHETYPES)}


def semver_channels_v1_26(
    package: str,
    versions: Mapping[str, Mapping[str, semver.Version]],
    *,
    major: bool,
    minor: bool,
    avoid_skip_patch: bool = False,
    origin: dc.Origin | None = None,
) -> tuple[list[dc.Channel], str]:
    """opm v1.26's generateChannels + linkChannels: the channels (sorted by name) and the
    package's default channel ("" when none wins, as in v1.26)."""
    channels: dict[str, dc.Channel] = {}
    channel_versions: dict[str, dict[str, semver.Version]] = {}
    high = (0, version_key(semver.Version(0)), "")
    for archetype in ARCHETYPES:
        bundles = versions.get(archetype) or {}
        for name in sorted(bundles, key=lambda n: version_key(bundles[n])):
            version = bundles[name]
            kinds = []
            if major:
                kinds.append(f"{archetype}-v{version.major}")
            if minor:
                kinds.append(f"{archetype}-v{version.major}.{version.minor}")
            for channel_name in kinds:
                if channel_name not in channels:
                    channels[channel_name] = dc.Channel(
                        channel_name, package, origin=origin or dc.Origin()
                    )
                    channel_versions[channel_name] = {}
                channels[channel_name].entries.append(dc.ChannelEntry(name))
                channel_versions[channel_name][name] = version
                key = version_key(version)
                if _PRIORITY[archetype] > high[0] or key > high[1]:
                    high = (_PRIORITY[archetype], key, channel_name)
    for channel_name, channel in channels.items():
        _link(channel, channel_versions[channel_name], avoid_skip_patch)
    return [channels[name] for name in sorted(channels)], high[2]


def _link(channel: dc.Channel, versions: dict[str, semver.Version], avoid: bool) -> None:
    entries = channel.entries
    if avoid:
        for previous, entry in pairwise(entries):
            entry.replaces = previous.name
        return
    if not entries:
        return
    head = len(entries) - 1
    head_minor = _minor(versions[entries[head].name])
    skips: set[str] = set()
    for index in range(len(entries) - 2, -1, -1):
        name = entries[index].name
        if _minor(versions[name]) == head_minor:
            skips.add(name)
            continue
        entries[head].replaces = name
        entries[head].skips = sorted(skips)
        skips, head, head_minor = set(), index, _minor(versions[name])
    entries[head].skips = sorted(skips)


def _minor(version: semver.Version) -> tuple[int, int]:
    return (version.major, version.minor)
