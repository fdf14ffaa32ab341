"""``bundle release``: add the next release to olmtool.yaml, upgrade edges worked out.

>>> result = bundle_release("0.4.0", channels=["stable"], skip_range=">=0.1.0 <0.4.0")
>>> result.replaces
'etcd-operator.v0.3.0'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmtool.actions._project import project_section
from olmtool.actions.bundle_build import BundleBuildResult, bundle_build
from olmtool.bundle import BundleSettings, ResolvedRelease, add_release
from olmtool.config import parse_project
from olmtool.crd import (
    STORED_VERSIONS,
    compare_crds,
    crd_name,
    olm_v0_message,
    storage_versions,
)
from olmtool.errors import ArgumentError, InputError, display_path
from olmtool.fsutil import write_atomic
from olmtool.versions import Range, parse_range, parse_version, precedence_key
from olmtool.yamlread import load_all, read_text

AUTO, NONE = "auto", "none"


@dataclass
class BundleReleaseResult:
    file: Path
    version: str
    channels: list[str]  # the release's channels (its own, or the shared ones)
    replaces: str | None
    skips: list[str]
    skip_range: str | None
    converted: bool  # the one-release form was turned into bundle.releases first
    notes: list[str] = field(default_factory=list)
    build: BundleBuildResult | None = None

    @property
    def failed(self) -> bool:
        return bool(self.build and self.build.failed)

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "file": display_path(self.file),
            "version": self.version,
            "channels": self.channels,
            "replaces": self.replaces,
            "skips": self.skips,
            "skipRange": self.skip_range,
            "converted": self.converted,
            "notes": self.notes,
        }
        if self.build:
            data["build"] = self.build.as_dict()
        return data


def bundle_release(
    next_version: str,
    *,
    config: Path | None = None,
    channels: Sequence[str] = (),
    skip_range: str | None = None,
    replaces: str = AUTO,
    build: bool = False,
    progress: Callable[[str], None] | None = None,
) -> BundleReleaseResult:
    """Append release ``next_version`` to ``bundle.releases`` in olmtool.yaml (every other
    line kept as written; a one-release file is turned into the releases form first)
    and, with ``build``, build it. See :func:`release_entry` for the edges."""
    project, settings = project_section(config, "bundle")
    entry = release_entry(settings, next_version, channels, skip_range, replaces)
    edit = add_release(read_text(project.file), entry, path=project.file)
    added = _checked(project.file, edit.text, settings, entry)
    csv = added.settings.csv
    result = BundleReleaseResult(
        project.file,
        added.version,
        list(added.settings.channels),
        csv.replaces,
        list(csv.skips),
        csv.skip_range,
        edit.converted,
        [
            *edit.notes,
            *_image_notes(added, settings.resolved_releases()),
            *_crd_notes(project.root, added, settings.resolved_releases()),
        ],
    )
    write_atomic(project.file, edit.text)
    if build:
        result.build = bundle_build(config=project.file, version=added.version, progress=progress)
    return result


def release_entry(
    settings: BundleSettings,
    next_version: str,
    channels: Sequence[str],
    skip_range: str | None,
    replaces: str,
) -> dict[str, Any]:
    """The new ``releases`` entry. ``channels``: its own (default: the shared ones, else
    the newest release's).
    ``replaces``: ``auto`` names the head (newest release) of its channels, and
    ``skips`` the heads of its other channels where they differ and ``skip_range`` does
    not cover them; ``none``; or a CSV name (``foo.v0.3.0``) or a version. The version
    must be new and newer than every head."""
    version = _semantic(next_version)
    releases = settings.resolved_releases()
    if any(r.version == version for r in releases):
        raise ArgumentError(f"{version} is already a release", argument="next_version")
    own = list(dict.fromkeys(channels)) or (
        [] if settings.channels else releases[-1].settings.channels
    )
    chosen = own or list(settings.channels)
    heads = channel_heads(releases, chosen)
    _check_newer(version, heads)
    parsed_range = _range(skip_range)
    entry: dict[str, Any] = {"version": version}
    if own:
        entry["channels"] = own
    if replaces == AUTO:
        entry.update(_auto_edges(heads, parsed_range))
    elif replaces != NONE:
        entry["replaces"] = _csv_name(settings.package, replaces)
    if skip_range is not None:
        entry["skipRange"] = skip_range
    return entry


def channel_heads(
    releases: Sequence[ResolvedRelease], channels: Sequence[str]
) -> dict[str, ResolvedRelease]:
    """Each channel's newest release (``releases`` are oldest first); new channels have none."""
    heads = {}
    for channel in channels:
        members = [r for r in releases if channel in r.settings.channels]
        if members:
            heads[channel] = members[-1]
    return heads


def _check_newer(version: str, heads: dict[str, ResolvedRelease]) -> None:
    for channel, head in heads.items():
        if _key(version) <= _key(head.version):
            raise ArgumentError(
                f"{version} is not newer than {head.version}, the head of channel {channel}",
                argument="next_version",
            )


def _key(version: str) -> tuple[object, ...]:
    return precedence_key(parse_version(version))


def _semantic(version: str) -> str:
    version = version.removeprefix("v")
    try:
        parse_version(version)
    except ValueError as exc:
        raise ArgumentError(str(exc), argument="next_version") from None
    return version


def _range(skip_range: str | None) -> Range | None:
    if skip_range is None:
        return None
    try:
        return parse_range(skip_range)
    except ValueError as exc:
        raise ArgumentError(str(exc), argument="skip_range") from None


def _csv_name(package: str, replaces: str) -> str:
    """``0.3.0`` (or ``v0.3.0``) as ``<package>.v0.3.0``; a CSV name as it is."""
    version = replaces.removeprefix("v")
    try:
        parse_version(version)
    except ValueError:
        return replaces
    return f"{package}.v{version}"


def _auto_edges(heads: dict[str, ResolvedRelease], skip_range: Range | None) -> dict[str, Any]:
    """``replaces`` the newest head; ``skips`` the other heads the range does not cover."""
    ordered = sorted({h.version: h for h in heads.values()}.values(), key=lambda r: _key(r.version))
    if not ordered:
        return {}
    edges: dict[str, Any] = {"replaces": ordered[-1].settings.csv_name}
    skips = [
        head.settings.csv_name
        for head in ordered[:-1]
        if skip_range is None or not skip_range.contains(head.version)
    ]
    if skips:
        edges["skips"] = skips
    return edges


def _checked(
    file: Path, text: str, before: BundleSettings, entry: dict[str, Any]
) -> ResolvedRelease:
    """The new release from the edited ``text``, which must load and leave every other
    release as it was (else nothing is written)."""
    by_hand = f"add it by hand: {entry}"
    try:
        after = parse_project(text, file).settings.bundle
    except InputError as exc:
        raise InputError(f"the edited file would not load ({exc}); {by_hand}", path=file) from None
    assert after is not None  # the edit keeps the bundle section
    new = {r.version: r for r in after.resolved_releases()}
    for old in before.resolved_releases():
        kept = new.get(old.version)
        if kept is None or kept.settings.model_dump() != old.settings.model_dump():
            raise InputError(f"the edit would change release {old.version}; {by_hand}", path=file)
    return new[entry["version"]]


def _crd_notes(
    root: Path, added: ResolvedRelease, releases: Sequence[ResolvedRelease]
) -> list[str]:
    """What the new release's CRDs (its ``crds`` folder as it is now) break on each edge
    into it, against the built bundles it upgrades from: a version a cluster stores
    dropped (the storage versions of every built release up to the one upgraded from),
    and what OLM v1's preflight refuses."""
    settings = added.settings
    if not settings.crds:
        return []
    new = _crds_in((root / settings.crds).glob("*.y*ml"))
    csv = settings.csv
    notes = []
    stored: dict[str, set[str]] = {}
    for version, directory in _built(root / settings.output / settings.package, releases):
        old = _crds_in((directory / "manifests").glob("*.y*ml"))
        for name, crd in old.items():
            stored.setdefault(name, set()).update(storage_versions(crd))
        name = f"{settings.package}.v{version}"
        upgrades = (
            name == csv.replaces
            or name in csv.skips
            or (csv.skip_range is not None and _contains(csv.skip_range, version))
        )
        if not upgrades:
            continue
        for shared in sorted(set(old) & set(new)):
            kept = sorted(stored.get(shared, set()))
            for change in compare_crds(old[shared], new[shared], stored_versions=kept):
                why = (
                    f"OLM v0 and v1 refuse it: {olm_v0_message(change)}"
                    if change.check == STORED_VERSIONS
                    else f"OLM v1 refuses it: {change.describe()}"
                )
                notes.append(f"[{change.check}] upgrade from {name}: {why}")
    return notes


def _built(directory: Path, releases: Sequence[ResolvedRelease]) -> list[tuple[str, Path]]:
    """(version, bundle directory) of every built release of the package, oldest first:
    the releases olmtool.yaml lists and older ones built before it listed releases."""
    versions = {r.version for r in releases}
    if directory.is_dir():
        versions |= {p.name for p in directory.iterdir() if (p / "manifests").is_dir()}
    found = []
    for version in versions:
        try:
            found.append((_key(version), version))
        except ValueError:
            continue  # not a release directory
    return [(version, directory / version) for _, version in sorted(found)]


def _crds_in(files: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """The CustomResourceDefinitions of YAML files, by name (unreadable files skipped:
    building the bundle reports them)."""
    found: dict[str, dict[str, Any]] = {}
    for file in sorted(files):
        try:
            documents = load_all(read_text(file), path=file)
        except InputError:
            continue
        for document in documents:
            if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                name = crd_name(document)
                if name:
                    found.setdefault(name, document)
    return found


def _contains(text: str, version: str) -> bool:
    try:
        return parse_range(text).contains(version)
    except ValueError:
        return False


def _image_notes(added: ResolvedRelease, releases: Sequence[ResolvedRelease]) -> list[str]:
    """Images the new release shares with the previous newest, though tagged with its
    version: the shared key probably wants ``{version}``."""
    previous = releases[-1].version
    settings = added.settings
    images = {"deployment.image": settings.deployment.image}
    images.update({f"csv.relatedImages {r.name}": r.image for r in settings.csv.related_images})
    return [
        f"{where} is {image} in {added.version} too: write its tag as {{version}} if it follows the release"
        for where, image in images.items()
        if image.endswith(f":{previous}")
    ]
