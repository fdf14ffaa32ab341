"""``bundle build``: write ``bundle/<package>/<version>/`` from olmtool.yaml, and its image.

>>> result = bundle_build(check=True)
>>> result.difference.stale
False
>>> [r.version for r in bundle_build(all_releases=True).releases]
['0.3.0', '0.4.0']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool.actions._project import project_section
from olmtool.bundle import (
    BuiltBundle,
    ResolvedRelease,
    build_bundle,
    bundle_image,
    check_rebuild,
    origin_of,
    write_bundle,
)
from olmtool.errors import ArgumentError, InputError, display_path
from olmtool.fsutil import TreeDiff
from olmtool.images import ImageTarget, SavedImage, save_image

LAYOUTS = Path("build/oci")


@dataclass
class ReleaseBuild:
    """One release's bundle: what was rendered, how the directory differed, and whether
    it was written (``refused`` says why not)."""

    bundle: BuiltBundle
    difference: TreeDiff
    frozen: bool = False
    refused: str = ""
    image: SavedImage | None = None

    @property
    def version(self) -> str:
        return self.bundle.directory.name

    def status(self, check: bool) -> str:
        """``refused``, ``unchanged``, else ``stale`` (with ``check``) or ``written``."""
        if self.refused:
            return "refused"
        if not self.difference.stale:
            return "unchanged"
        return "stale" if check else "written"

    def as_dict(self, check: bool) -> dict[str, object]:
        data: dict[str, object] = {
            "version": self.version,
            "bundle": display_path(self.bundle.directory),
            "status": self.status(check),
            "frozen": self.frozen,
            "refused": self.refused or None,
            "stale": self.difference.stale,
            "added": self.difference.added,
            "modified": self.difference.modified,
            "removed": self.difference.removed,
            "replaced": self.bundle.replaced,
            "kept": self.bundle.kept,
            # build refusals validate.ignore accepted (an example its CRD rejects, ...)
            "waived": [w.as_dict(origin=origin_of(w.finding.check)) for w in self.bundle.waived],
        }
        if self.image:
            data.update(self.image.as_dict())
        return data


@dataclass
class BundleBuildResult:
    releases: list[ReleaseBuild]
    check: bool

    @property
    def bundle(self) -> BuiltBundle:
        """The (newest) release's bundle; all of them are in ``releases``."""
        return self.releases[-1].bundle

    @property
    def difference(self) -> TreeDiff:
        return self.releases[-1].difference

    @property
    def image(self) -> SavedImage | None:
        return self.releases[-1].image

    @property
    def failed(self) -> bool:
        """A release refused, or (with ``check``) a bundle on disk is stale."""
        return any(r.refused or (self.check and r.difference.stale) for r in self.releases)

    def as_dict(self) -> dict[str, object]:
        """``releases`` lists each release; with one, its keys are at the top too (the
        shape of the one-release ``bundle build``)."""
        releases = [r.as_dict(self.check) for r in self.releases]
        data: dict[str, object] = {
            "check": self.check,
            "stale": any(r.difference.stale for r in self.releases),
            "failed": self.failed,
            "releases": releases,
        }
        if len(releases) == 1:
            data = {**releases[0], **data}
        return data


def bundle_build(
    *,
    config: Path | None = None,
    check: bool = False,
    image: ImageTarget | None = None,
    version: str | None = None,
    all_releases: bool = False,
    progress: Callable[[str], None] | None = None,
) -> BundleBuildResult:
    """Render the bundle of one release (``version``, default the newest) or of every
    release (``all_releases``) and write each atomically (or, with ``check``, only
    compare). Everything is rendered before anything is written; a release that must not
    be rewritten (frozen, or older with changed shared CRDs: see
    :mod:`olmtool.bundle.rebuild`) is left as it is and fails the result. With
    ``image``, also save each written release's bundle image (``{version}`` expands in
    the reference and layout; default layout ``build/oci/<package>-<version>``). What
    would stop a build under a check id that ``validate.ignore`` waives is built and
    listed as waived."""
    project, settings = project_section(config, "bundle")
    chosen = select_releases(settings.resolved_releases(), version, all_releases)
    targets = [_image_target(r, image, several=len(chosen) > 1) if image else None for r in chosen]
    crd_dir = project.settings.crd.output if project.settings.crd else None
    rendered = []
    for release in chosen:
        if progress:
            progress(f"rendering {release.version}")
        rendered.append(
            build_bundle(
                release.settings,
                project.root,
                crd_dir=crd_dir,
                config=project.file,
                waivers=project.waivers,
            )
        )
    builds = [
        _write(release, bundle, target, check=check, progress=progress)
        for release, bundle, target in zip(chosen, rendered, targets, strict=True)
    ]
    return BundleBuildResult(builds, check)


def _write(
    release: ResolvedRelease,
    bundle: BuiltBundle,
    target: ImageTarget | None,
    *,
    check: bool,
    progress: Callable[[str], None] | None,
) -> ReleaseBuild:
    """Write one rendered release (unless refused or ``check``), and save its image."""
    verdict = check_rebuild(release, bundle)
    build = ReleaseBuild(bundle, verdict.difference, release.frozen, verdict.refused)
    if not check and not build.refused:
        write_bundle(bundle)  # swaps in a stale bundle, removes a killed run's leftovers
    if target and not build.refused:
        build.image = save_image(
            bundle_image(bundle),
            target,
            default_layout=LAYOUTS / f"{release.settings.package}-{release.version}",
            default_tag=release.version,
            progress=progress,
        )
    return build


def select_releases(
    releases: Sequence[ResolvedRelease], version: str | None, all_releases: bool
) -> list[ResolvedRelease]:
    """Every release, the one named ``version``, or the newest (releases oldest first)."""
    if all_releases and version:
        raise ArgumentError(f"{version}: pick one release or all, not both", argument="version")
    if all_releases:
        return list(releases)
    if version is None:
        return [releases[-1]]
    found = [r for r in releases if r.version == version.removeprefix("v")]
    if not found:
        known = ", ".join(r.version for r in releases)
        raise ArgumentError(f"{version}: no such release (releases: {known})", argument="version")
    return found


def _image_target(release: ResolvedRelease, image: ImageTarget, *, several: bool) -> ImageTarget:
    """``image`` for one release: ``{version}`` and ``{package}`` expanded in its reference
    and layout (which must name ``{version}`` when several releases are built)."""
    layout = str(image.layout) if image.layout is not None else None
    for argument, text in (("image", image.reference), ("layout", layout)):
        if several and text is not None and "{version}" not in text:
            raise ArgumentError(
                "needs {version} to build several releases (one image each)", argument=argument
            )
    try:
        return image.expanded(package=release.settings.package, version=release.version)
    except InputError as exc:
        raise ArgumentError(exc.message, argument="image") from None
