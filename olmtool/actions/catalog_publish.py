"""``catalog publish``: write ``catalog/<package>/`` from olmtool.yaml, and the catalog image.

>>> result = catalog_publish(check=True)
>>> result.publish.stale
False
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olmtool.actions._project import project_section
from olmtool.catalog import PublishResult, catalog_image, origin_of, publish
from olmtool.errors import display_path
from olmtool.images import ImageTarget, SavedImage, save_image

DEFAULT_LAYOUT = Path("build/oci/catalog")


@dataclass
class CatalogPublishResult:
    publish: PublishResult
    check: bool
    image: SavedImage | None = None
    # what the image was built on: None for olmtool's serving image, "scratch", or a REF
    base: str | None = None
    image_size: int = 0  # compressed layers and config, what a registry stores
    image_layers: int = 0

    @property
    def failed(self) -> bool:
        """Only a ``check`` fails, when the catalog on disk is stale."""
        return self.check and self.publish.stale

    def as_dict(self) -> dict[str, object]:
        result = self.publish
        data: dict[str, object] = {
            "catalog": display_path(result.root),
            "check": self.check,
            "stale": result.stale,
            "packages": {
                name: {"added": d.added, "modified": d.modified, "removed": d.removed}
                for name, d in result.packages.items()
            },
            "dockerfile": display_path(result.dockerfile) if result.dockerfile else None,
            "warnings": [w.as_dict() for w in result.warnings],
            "waived": [w.as_dict(origin=origin_of(w.finding.check)) for w in result.waived],
        }
        if self.image:
            data.update(self.image.as_dict())
            data["base"] = self.base
            data["size"] = self.image_size
            data["layers"] = self.image_layers
        return data


def catalog_publish(
    *,
    config: Path | None = None,
    check: bool = False,
    image: ImageTarget | None = None,
    allow_empty_image: bool = False,
    output_dir: Path | None = None,
    base: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> CatalogPublishResult:
    """Render, validate and write every package of the project's ``catalog:`` section
    (or, with ``check``, only compare); with ``image``, also save the catalog image.
    Validation findings ``validate.ignore`` waives do not stop publishing; bundles
    without image (directories of a package without ``image:``) only with
    ``allow_empty_image``. ``output_dir`` (relative to the working directory) replaces
    the configured catalog root, for writing, ``check`` and the image; its Dockerfile
    is ``<output_dir>.Dockerfile`` beside it.

    The image serves the catalog as an opm-based one does (entrypoint ``catalog serve``
    of the olmtool inside, port 50051, ``/usr/bin/grpc_health_probe``) on olmtool's Python
    base; ``base`` stacks the catalog on an opm image REF instead (opm's ENTRYPOINT and
    CMD), or with ``scratch`` builds the catalog alone."""
    project, settings = project_section(config, "catalog")
    if progress:
        progress("rendering bundles")
    published = publish(
        settings,
        project.root,
        check=check,
        waivers=project.waivers,
        allow_empty_image=allow_empty_image,
        output=output_dir,
    )
    result = CatalogPublishResult(published, check, base=base)
    if image:
        if progress:
            progress("building the catalog image")
        built = catalog_image(result.publish.root, base, progress=progress)
        manifest = built.manifest_json
        result.image_layers = len(manifest["layers"])
        result.image_size = int(manifest["config"]["size"]) + sum(
            int(layer["size"]) for layer in manifest["layers"]
        )
        result.image = save_image(
            built,
            image,
            default_layout=DEFAULT_LAYOUT,
            default_tag="latest",
            progress=progress,
        )
    return result
