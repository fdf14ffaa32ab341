"""``opm alpha render-graph`` as opm v1.26.0 writes it (``--opm-compat 1.26``).

operator-registry v1.26.0's ``declcfg.WriteMermaidChannels``, byte for byte: the graph
between two ``<!-- PLEASE NOTE:  skipRange edges are not currently displayed -->`` lines,
no classes, and every edge drawn from the newer bundle to the one it ``replaces`` or
``skips`` (newer opm draws old -> new, adds skipRange edges and deprecation classes: that
is :func:`olmtool.catalog.graph.mermaid`). Entries keep their order in the channel; a
``--minimum-edge`` bundle keeps only the entries whose edges reach at least its version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import semver

from olmtool.catalog import declcfg as dc
from olmtool.errors import InputError
from olmtool.versions import blang_parse

NOTE = "<!-- PLEASE NOTE:  skipRange edges are not currently displayed -->\n"
_ZERO = semver.Version(0)


@dataclass
class _Entry:
    name: str
    replaces: str = ""
    skips: list[str] = field(default_factory=list)


def mermaid_v1_26(
    config: dc.DeclarativeConfig, *, package: str | None = None, minimum_edge: str | None = None
) -> str:
    """The channels of ``config`` (of ``package`` only, when named) as opm v1.26 draws them.

    Like opm v1.26, every bundle must have one olm.package property with a semantic
    version, and ``minimum_edge`` must name a bundle; otherwise an InputError with opm's
    message.
    """
    from olmtool.catalog.graph import go_quote

    versions = _bundle_versions(config)
    minimum = minimum_edge or ""
    if minimum and minimum not in versions:
        raise InputError(f"unknown minimum edge name: {go_quote(minimum)}")
    if package is not None and package not in config.package_names():
        raise InputError(f'no package "{package}" in the catalog')
    floor = versions.get(minimum, _ZERO)
    bodies: dict[str, list[str]] = {}
    # Go's sort.Slice by name; channels of one package never share a name in a catalog
    # opm loads, so its instability cannot show.
    for channel in sorted(config.channels, key=lambda c: c.name):
        if package is not None and channel.package != package:
            continue
        entries = _filtered(channel, versions, minimum)
        if entries is None:
            continue
        channel_id = f"{channel.package}-{channel.name}"
        lines = bodies.setdefault(channel.package, [])
        lines.append(f"    %% channel {go_quote(channel.name)}\n")
        lines.append(f"    subgraph {channel_id}[{go_quote(channel.name)}]\n")
        for entry in entries:
            if versions.get(entry.name, _ZERO) < floor:
                continue
            node = f"{channel_id}-{entry.name}[{go_quote(entry.name)}]"
            lines.append(f"      {node}\n")
            if entry.replaces:
                target = f"{channel_id}-{entry.replaces}[{go_quote(entry.replaces)}]"
                lines.append(f"      {node}-- replaces --> {target}\n")
            for skip in entry.skips:
                lines.append(f"      {node}-- skips --> {channel_id}-{skip}[{go_quote(skip)}]\n")
        lines.append("    end\n")
    out = [NOTE, "graph LR\n"]
    for name in sorted(bodies):
        out.append(f"  %% package {go_quote(name)}\n  subgraph {go_quote(name)}\n")
        out.extend(bodies[name])
        out.append("  end\n")
    out.append(NOTE)
    return "".join(out)


def _bundle_versions(config: dc.DeclarativeConfig) -> dict[str, semver.Version]:
    """Bundle name -> version, the first bundle of a name winning (getBundleVersions)."""
    versions: dict[str, semver.Version] = {}
    for bundle in config.bundles:
        if bundle.name in versions:
            continue
        packages = bundle.properties_of(dc.PROP_PACKAGE)
        if len(packages) != 1:
            raise InputError(
                f'bundle "{bundle.name}" has multiple "olm.package" properties, expected exactly 1'
            )
        value = packages[0].value if isinstance(packages[0].value, dict) else {}
        version = value.get("version")
        version = version if isinstance(version, str) else ""
        try:
            versions[bundle.name] = blang_parse(version)
        except ValueError as exc:
            raise InputError(
                f'bundle "{bundle.name}" has invalid version "{version}": {exc}'
            ) from None
    return versions


def _filtered(
    channel: dc.Channel, versions: dict[str, semver.Version], minimum: str
) -> list[_Entry] | None:
    """filterChannel: without a minimum edge the channel as it is; with one, that bundle
    without edges plus every entry keeping a replaces or skip at or above its version.
    None when nothing is left (the channel is not drawn)."""
    if not minimum:
        return [_Entry(e.name, e.replaces, list(e.skips)) for e in channel.entries]
    floor = versions[minimum]
    kept = []
    for entry in channel.entries:
        if entry.name == minimum:
            kept.append(_Entry(entry.name))
            continue
        replaces = (
            entry.replaces
            if entry.replaces and versions.get(entry.replaces, _ZERO) >= floor
            else ""
        )
        skips = [s for s in entry.skips if versions.get(s, _ZERO) >= floor]
        if replaces or skips:
            kept.append(_Entry(entry.name, replaces, skips))
    return kept or None
