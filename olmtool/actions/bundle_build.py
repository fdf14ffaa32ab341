"""``bundle build``: write ``bundle/<package>/<version>/`` from olmtool.yaml, and its image.

>>> result = bundle_build(check=True)
>>> result.difference.stale
False
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olmtool.actions._project import project_section
from olmtool.bundle import BuiltBundle, build_bundle, bundle_image, origin_of, write_bundle
from olmtool.errors import display_path
from olmtool.fsutil import TreeDiff
from olmtool.images import ImageTarget, SavedImage, save_image

LAYOUTS = Path("build/oci")


@dataclass
class BundleBuildResult:
    bundle: BuiltBundle
    difference: TreeDiff
    check: bool
    image: SavedImage | None = None

    @property
    def failed(self) -> bool:
        """Only a ``check`` fails, when the bundle on disk is stale."""
        return self.check and self.difference.stale

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "bundle": display_path(self.bundle.directory),
            "check": self.check,
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


def bundle_build(
    *,
    config: Path | None = None,
    check: bool = False,
    image: ImageTarget | None = None,
    progress: Callable[[str], None] | None = None,
) -> BundleBuildResult:
    """Render the bundle the project's ``bundle:`` section describes and write it
    atomically (or, with ``check``, only compare); with ``image``, also save the bundle
    image (default layout ``build/oci/<package>-<version>``). What would stop the build
    under a check id that ``validate.ignore`` waives is built and listed as waived."""
    project, settings = project_section(config, "bundle")
    crd_dir = project.settings.crd.output if project.settings.crd else None
    bundle = build_bundle(
        settings, project.root, crd_dir=crd_dir, config=project.file, waivers=project.waivers
    )
    result = BundleBuildResult(bundle, write_bundle(bundle, check=check), check)
    if image:
        result.image = save_image(
            bundle_image(bundle),
            image,
            default_layout=LAYOUTS / f"{settings.package}-{settings.version}",
            default_tag=settings.version,
            progress=progress,
        )
    return result
