"""``bundle image``: the bundle image of an existing bundle directory, saved and pushed.

>>> result = bundle_dir_image("bundle/etcd-operator/0.1.0",
...     ImageTarget("127.0.0.1:5000/etcd-operator-bundle:{version}", push=True))
>>> result.image.pushed
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olmtool.bundle import directory_image
from olmtool.bundle import format as fmt
from olmtool.errors import ArgumentError, InputError, display_path
from olmtool.images import ImageTarget, SavedImage, save_image

LAYOUTS = Path("build/oci")


@dataclass
class BundleImageResult:
    directory: Path
    package: str
    version: str  # the CSV's spec.version, "" when it has none
    image: SavedImage

    def as_dict(self) -> dict[str, object]:
        return {
            "bundle": display_path(self.directory),
            "package": self.package,
            "version": self.version or None,
            **self.image.as_dict(),
        }


def bundle_dir_image(
    directory: str | Path,
    image: ImageTarget,
    *,
    progress: Callable[[str], None] | None = None,
) -> BundleImageResult:
    """Save the bundle in ``directory`` (any bundle directory: an older release, another
    tool's) as a bundle image: an OCI layout (default ``build/oci/<package>-<version>``),
    pushed when ``image.push``. ``{version}`` and ``{package}`` expand in the reference
    and layout, from the CSV's ``spec.version`` and the package annotation."""
    root = Path(directory)
    built, bundle = directory_image(root)
    package = (bundle.annotations or {}).get(fmt.PACKAGE, "")
    csv = bundle.csv
    version = str(csv.get("spec.version") or "") if csv else ""
    target = _expanded(image, package, version)
    name = f"{package}-{version}" if version else package
    saved = save_image(
        built,
        target,
        default_layout=LAYOUTS / name,
        default_tag=version or "latest",
        progress=progress,
    )
    return BundleImageResult(root, package, version, saved)


def _expanded(image: ImageTarget, package: str, version: str) -> ImageTarget:
    if not version and "{version}" in f"{image.reference} {image.layout or ''}":
        raise ArgumentError(
            "uses {version}, but the bundle's CSV has no spec.version", argument="image"
        )
    try:
        return image.expanded(package=package, version=version)
    except InputError as exc:
        raise ArgumentError(exc.message, argument="image") from None
