"""The validated view of a catalog: channel graphs, heads, upgrade edges.

Pure functions over :mod:`olmtool.catalog.declcfg` objects; validation
(:mod:`olmtool.catalog.validate`) and the registry server build on them.
"""

from __future__ import annotations

from olmtool.catalog import declcfg as dc


def channel_heads(channel: dc.Channel) -> list[str]:
    """Entries no other entry replaces or skips (skipRange ignored, as in opm), in order."""
    incoming: set[str] = set()
    for entry in channel.entries:
        if entry.replaces:
            incoming.add(entry.replaces)
        incoming.update(entry.skips)
    return [e.name for e in channel.entries if e.name not in incoming]


def channel_head(channel: dc.Channel) -> str:
    """The one head of a channel; ValueError when there are none or several."""
    heads = sorted(set(channel_heads(channel)))
    if len(heads) != 1:
        found = ", ".join(heads) or "none"
        raise ValueError(f'channel "{channel.name}" needs exactly one head, found {found}')
    return heads[0]
