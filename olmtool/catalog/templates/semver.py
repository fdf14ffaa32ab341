"""``olm.semver``: bundles listed under candidate / fast / stable, and the channels generated
from their versions byte for byte like operator-registry's ``alpha/template/semver/semver.go``
(see :func:`semver_channels`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.choices import OpmCompat
from olmtool.catalog.templates.documents import (
    Document,
    get_bool,
    get_list,
    get_str,
    strict_fields,
)
from olmtool.catalog.templates.entries import SCHEMA_SEMVER, BundleRef, BundleRenderer, placed
from olmtool.errors import InputError
from olmtool.versions import parse_version

#: Channel archetypes of the semver template, least stable first (upstream's priorities).
ARCHETYPES = ("candidate", "fast", "stable")
Archetype = Literal["candidate", "fast", "stable"]
StreamKind = Literal["minor", "major"]
_ARCHETYPE_RANK = {name: rank for rank, name in enumerate(ARCHETYPES)}
# upstream's streamTypePriorities: minor 2, major 1 (and "" 0, which never reaches a channel)
_KIND_RANK = {"major": 1, "minor": 2}


@dataclass
class SemverTemplate:
    """``olm.semver`` after upstream's defaulting: at least one channel kind is generated.

    ``default_channel_type_preference`` is always resolved: an unset preference follows the
    generated kind (minor when both are generated), as upstream's readFile does.
    """

    file: str
    generate_major_channels: bool = False
    generate_minor_channels: bool = True
    default_channel_type_preference: StreamKind = "minor"
    candidate: list[BundleRef] = field(default_factory=list)
    fast: list[BundleRef] = field(default_factory=list)
    stable: list[BundleRef] = field(default_factory=list)
    line: int | None = None
    opm_compat: OpmCompat = OpmCompat.latest
    avoid_skip_patch: bool = False
    ignored: list[tuple[str, int | None]] = field(default_factory=list)

    def bundles_of(self, archetype: str) -> list[BundleRef]:
        return {"candidate": self.candidate, "fast": self.fast, "stable": self.stable}[archetype]


def parse_semver(doc: Document, opm_compat: OpmCompat = OpmCompat.latest) -> SemverTemplate:
    if opm_compat is OpmCompat.v1_26:
        return _parse_semver_v1_26(doc)
    allowed = (
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "defaultChannelTypePreference",
        *ARCHETYPES,
    )
    fields = strict_fields(doc, doc.data, (), allowed, SCHEMA_SEMVER)
    major = get_bool(doc, fields, "generateMajorChannels", ())
    minor = get_bool(doc, fields, "generateMinorChannels", ())
    if not major and not minor:  # upstream: no generate option selected -> minor channels
        minor = True
    pref_key = fields.get("defaultchanneltypepreference", ("defaultChannelTypePreference", None))[0]
    written = get_str(doc, fields, "defaultChannelTypePreference", (), SCHEMA_SEMVER)
    preference: StreamKind
    if written == "":  # unset: follow the generated kind, minor first (upstream readFile)
        preference = "minor" if minor else "major"
    elif written == "minor" or written == "major":
        preference = written
        if not (minor if written == "minor" else major):
            setting = "generateMinorChannels" if written == "minor" else "generateMajorChannels"
            raise doc.error(
                f'defaultChannelTypePreference "{written}" needs {written}-version channels '
                f"({setting}: true)",
                pref_key,
            )
    else:
        raise doc.error(
            f'unknown defaultChannelTypePreference "{written}" (valid: "minor", "major")',
            pref_key,
        )
    template = SemverTemplate(
        file=doc.file,
        generate_major_channels=major,
        generate_minor_channels=minor,
        default_channel_type_preference=preference,
        line=doc.line,
    )
    return _with_bundles(template, doc, fields)


def _parse_semver_v1_26(doc: Document) -> SemverTemplate:
    """opm v1.26's readFile: a plain (not strict) unmarshal over minor-channel defaults."""
    allowed = (
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "avoidSkipPatch",
        *ARCHETYPES,
    )
    unknown: list[str] = []
    fields = strict_fields(doc, doc.data, (), allowed, SCHEMA_SEMVER, ignored=unknown)
    minor = get_bool(doc, fields, "generateMinorChannels", ())
    template = SemverTemplate(
        file=doc.file,
        generate_major_channels=get_bool(doc, fields, "generateMajorChannels", ()),
        generate_minor_channels=minor if "generateminorchannels" in fields else True,
        line=doc.line,
        opm_compat=OpmCompat.v1_26,
        avoid_skip_patch=get_bool(doc, fields, "avoidSkipPatch", ()),
    )
    template.ignored += [(f"{SCHEMA_SEMVER}: {key}", doc.line_of(key)) for key in unknown]
    return _with_bundles(template, doc, fields)


def _with_bundles(
    template: SemverTemplate, doc: Document, fields: dict[str, tuple[str, Any]]
) -> SemverTemplate:
    """``template`` with the bundles listed under each archetype (at least one)."""
    for archetype in ARCHETYPES:
        template.bundles_of(archetype).extend(_semver_bundles(doc, fields, archetype))
    if not any(template.bundles_of(a) for a in ARCHETYPES):
        raise doc.error(
            f"{SCHEMA_SEMVER} template lists no bundles (under candidate, fast or stable)"
        )
    return template


def _semver_bundles(
    doc: Document, fields: dict[str, tuple[str, Any]], archetype: str
) -> Iterator[BundleRef]:
    key, value = fields.get(archetype, (archetype, None))
    if value is None:
        return
    channel = strict_fields(doc, value, (key,), ("bundles",), key)
    bundles_key, bundles = get_list(doc, channel, "bundles", (key,), key)
    for index, item in enumerate(bundles):
        path = (key, bundles_key, index)
        where = f"{key}.{bundles_key}[{index}]"
        entry = strict_fields(doc, item, path, ("image",), where)
        image = get_str(doc, entry, "image", path, where)
        if not image:
            raise doc.error(f'{where} needs an "image"', *path)
        yield BundleRef(image, doc.line_of(*path))


def version_key(version: semver.Version) -> tuple[Any, ...]:
    """Precedence as blang/semver compares (build metadata ignored; numeric identifiers
    below alphanumeric ones; a shorter prerelease below a longer one it prefixes)."""
    if not version.prerelease:
        return (version.major, version.minor, version.patch, (1,))
    identifiers = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in version.prerelease.split(".")
    )
    return (version.major, version.minor, version.patch, (0, identifiers))


def _package_version(bundle: dc.Bundle, ref: BundleRef, file: str) -> tuple[str, semver.Version]:
    """The bundle's olm.package property: package name and semantic version."""
    properties = bundle.properties_of(dc.PROP_PACKAGE)
    where = f'bundle "{bundle.name}" (from {ref.image})'
    if len(properties) != 1 or not isinstance(properties[0].value, dict):
        raise InputError(
            f"{where} has {len(properties)} olm.package properties, expected exactly 1",
            path=file,
            line=ref.line,
        )
    value = properties[0].value
    package, version = value.get("packageName"), value.get("version")
    if not isinstance(package, str) or not package:
        raise InputError(f"{where} has no package name", path=file, line=ref.line)
    try:
        return package, parse_version(version if isinstance(version, str) else "")
    except ValueError:
        raise InputError(
            f"{where} has version {version!r}, which is not a semantic version; "
            "the semver template orders bundles by version",
            path=file,
            line=ref.line,
        ) from None


def render_semver(template: SemverTemplate, renderer: BundleRenderer) -> dc.DeclarativeConfig:
    rendered = _render_once(template, renderer)
    package, versions = _versions(template, rendered)
    origin = dc.Origin(template.file, template.line)
    generate = {
        "major": template.generate_major_channels,
        "minor": template.generate_minor_channels,
        "origin": origin,
    }
    if template.opm_compat is OpmCompat.v1_26:
        from olmtool.catalog.templates.semver_opm126 import semver_channels_v1_26

        skip_patch = template.avoid_skip_patch
        channels, default_channel = semver_channels_v1_26(
            package, versions, avoid_skip_patch=skip_patch, **generate
        )
    else:
        preference = template.default_channel_type_preference
        channels, default_channel = semver_channels(
            package, versions, preference=preference, **generate
        )
    return dc.DeclarativeConfig(
        packages=[dc.Package(name=package, default_channel=default_channel, origin=origin)],
        channels=channels,
        bundles=list(rendered.values()),
    )


def _render_once(template: SemverTemplate, renderer: BundleRenderer) -> dict[str, dc.Bundle]:
    """Every distinct reference rendered once, in template order (candidate, fast, stable)."""
    file = template.file
    rendered: dict[str, dc.Bundle] = {}
    source_of: dict[str, BundleRef] = {}  # bundle name -> the reference that produced it
    for archetype in ARCHETYPES:
        for ref in template.bundles_of(archetype):
            if ref.image in rendered:
                continue
            bundle = placed(renderer(ref.image), file, ref.line)
            other = source_of.get(bundle.name)
            if other is not None:
                raise InputError(
                    f'{ref.image} and {other.image} both render to bundle "{bundle.name}"',
                    path=file,
                    line=ref.line,
                )
            rendered[ref.image] = bundle
            source_of[bundle.name] = ref
    return rendered


def _versions(
    template: SemverTemplate, rendered: dict[str, dc.Bundle]
) -> tuple[str, dict[str, dict[str, semver.Version]]]:
    """The package (named by the first bundle, as upstream) and, per archetype, bundle
    name -> version; a bundle of another package or an ambiguous version is an error."""
    package = ""
    versions: dict[str, dict[str, semver.Version]] = {}
    for archetype in ARCHETYPES:
        names: dict[str, semver.Version] = {}
        stripped: dict[str, str] = {}  # version without build metadata -> bundle name
        for ref in template.bundles_of(archetype):
            bundle = rendered[ref.image]
            bundle_package, version = _package_version(bundle, ref, template.file)
            package = package or bundle_package
            if bundle_package != package:
                problem: str | None = (
                    f'bundle "{bundle.name}" (from {ref.image}) belongs to package '
                    f'"{bundle_package}", but the template\'s first bundle belongs to "{package}"'
                )
            else:
                problem = _conflict(bundle, ref, version, names, stripped, archetype)
            if problem:
                raise InputError(problem, path=template.file, line=ref.line)
            stripped[str(version.replace(build=None))] = bundle.name
            names[bundle.name] = version
        versions[archetype] = names
    return package, versions


def _conflict(
    bundle: dc.Bundle,
    ref: BundleRef,
    version: semver.Version,
    names: dict[str, semver.Version],
    stripped: dict[str, str],
    archetype: str,
) -> str | None:
    """Why the bundle cannot join the archetype's bundles so far, if it cannot."""
    if bundle.name in names:
        return f'bundle "{bundle.name}" ({ref.image}) is listed twice under {archetype}'
    clash = stripped.get(str(version.replace(build=None)))
    if clash is None:
        return None
    if version.build or names[clash].build:
        problem = "differ only in build metadata, which cannot be ordered"
    else:
        problem = "have the same version"
    return (
        f'bundles "{clash}" ({names[clash]}) and "{bundle.name}" ({version}) under '
        f"{archetype} {problem}"
    )


@dataclass
class _Slot:
    """One channel entry with what the edge walk sorts and compares (upstream entryTuple)."""

    archetype: str
    kind: str
    version: semver.Version
    entry: dc.ChannelEntry

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (_ARCHETYPE_RANK[self.archetype], _KIND_RANK[self.kind], version_key(self.version))


def semver_channels(
    package: str,
    versions: Mapping[str, Mapping[str, semver.Version]],
    *,
    major: bool,
    minor: bool,
    preference: str,
    origin: dc.Origin | None = None,
) -> tuple[list[dc.Channel], str]:
    """The semver template's channels (sorted by name) and the package's default channel.

    ``versions`` maps an archetype (candidate, fast, stable) to bundle name -> version.
    This is upstream's generateChannels + linkChannels:

    * Each bundle joins ``<arch>-v<X>`` (``major``) and/or ``<arch>-v<X>.<Y>`` (``minor``);
      entries are appended in ascending version order.
    * Edges: every entry becomes an (archetype, kind, version) tuple; the tuples are sorted
      (candidate < fast < stable, major < minor, then version) and walked in consecutive
      pairs. When archetype, kind, X or Y changes, the previous tuple (the max-Z of its
      Y-stream) gets ``replaces`` = the max-Z of the Y-stream before it, and ``skips`` =
      every version accumulated so far in the same archetype/kind/X except that replaces
      target (sorted). The accumulator resets when archetype, kind or X changes, not when
      Y does, so no edge ever crosses a major version; non-max-Z entries get no edges.
      In minor channels those edges point at bundles of the previous minor channel, as
      upstream's do.
    * Default channel ("high-water" channel), deterministically: among all generated
      channels, the greatest by (archetype rank, version of the channel's first — lowest —
      bundle, kind == ``preference``, minor over major). This is upstream's rule, which
      compares channels when they are created, i.e. at their lowest version; so with both
      kinds generated, ``stable-v3.2`` (first bundle 3.2.0) beats ``stable-v3`` (first
      bundle 3.1.0) even when ``preference`` is major. Unlike upstream (which starts from
      a phantom candidate channel at 0.0.0 and so can end with no default at all when every
      bundle is a 0.0.0 prerelease), some generated channel is always chosen.
    """
    unknown = set(versions) - set(ARCHETYPES)
    if unknown:
        raise ValueError(f"unknown channel archetypes: {', '.join(sorted(unknown))}")
    channels: dict[str, dc.Channel] = {}
    slots: list[_Slot] = []
    best: tuple[tuple[Any, ...], str] | None = None
    for archetype in ARCHETYPES:
        bundles = versions.get(archetype) or {}
        for name in sorted(bundles, key=lambda n: (version_key(bundles[n]), n)):
            version = bundles[name]
            kinds: list[tuple[str, str]] = []
            if major:
                kinds.append(("major", f"{archetype}-v{version.major}"))
            if minor:
                kinds.append(("minor", f"{archetype}-v{version.major}.{version.minor}"))
            for kind, channel_name in kinds:
                channel = channels.get(channel_name)
                if channel is None:
                    channel = dc.Channel(channel_name, package, origin=origin or dc.Origin())
                    channels[channel_name] = channel
                    rank = (
                        _ARCHETYPE_RANK[archetype],
                        version_key(version),
                        kind == preference,
                        _KIND_RANK[kind],
                    )
                    if best is None or rank > best[0]:
                        best = (rank, channel_name)
                entry = dc.ChannelEntry(name)
                channel.entries.append(entry)
                slots.append(_Slot(archetype, kind, version, entry))
    _link(slots)
    return [channels[name] for name in sorted(channels)], best[1] if best else ""


def _link(slots: list[_Slot]) -> None:
    """Upstream's linkChannels: set replaces/skips on each Y-stream's max-Z entry."""
    slots.sort(key=lambda s: s.sort_key)
    replaces = ""
    skips: set[str] = set()

    def new_stream(prev: _Slot, cur: _Slot) -> bool:
        return (
            prev.archetype != cur.archetype
            or prev.kind != cur.kind
            or prev.version.major != cur.version.major
        )

    def finish(slot: _Slot) -> None:
        slot.entry.replaces = replaces
        rest = sorted(skips - {replaces})
        if rest:
            slot.entry.skips = rest

    for prev, cur in pairwise(slots):
        y_change = (prev.version.major, prev.version.minor) != (
            cur.version.major,
            cur.version.minor,
        )
        if new_stream(prev, cur) or y_change:
            finish(prev)
        if new_stream(prev, cur):
            replaces, skips = "", set()
        else:
            if y_change:
                replaces = prev.entry.name
            skips.add(prev.entry.name)
    if len(slots) > 1 and not new_stream(slots[-2], slots[-1]):
        finish(slots[-1])
