"""Saving a built image: an OCI layout on disk, then (if asked) a push to its registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import display_path
from olmtool.images.distribution import push
from olmtool.images.image import Image, write_oci_layout
from olmtool.images.reference import expand_image, parse_reference


@dataclass(frozen=True)
class ImageTarget:
    """Where a command should put the image it builds: ``reference`` names it (and its
    tag), ``layout`` is the OCI layout directory (None: the command's default), ``push``
    uploads it to the reference's registry too."""

    reference: str
    layout: Path | None = None
    push: bool = False

    def expanded(self, *, package: str, version: str) -> ImageTarget:
        """This target with ``{package}`` and ``{version}`` filled in (reference and
        layout), by :func:`~olmtool.images.reference.expand_image`'s rule."""
        layout = self.layout
        if layout is not None:
            layout = Path(expand_image(str(layout), package=package, version=version))
        reference = expand_image(self.reference, package=package, version=version)
        return ImageTarget(reference, layout, self.push)


@dataclass(frozen=True)
class SavedImage:
    """An image written as an OCI layout, and pushed when ``pushed``."""

    reference: str
    digest: str
    layout: Path
    pushed: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "image": self.reference,
            "digest": self.digest,
            "layout": display_path(self.layout),
            "pushed": self.pushed,
        }


def save_image(
    image: Image,
    target: ImageTarget,
    *,
    default_layout: Path,
    default_tag: str,
    progress: Callable[[str], None] | None = None,
) -> SavedImage:
    """Write ``image`` as an OCI layout tagged like the reference (else ``default_tag``),
    then push it when the target asks to."""
    ref = parse_reference(target.reference)
    layout = target.layout or default_layout
    write_oci_layout(image, layout, ref.tag or default_tag)
    if target.push:
        if progress:
            progress(f"pushing {target.reference}")
        push(image, ref, progress=_bytes_pushed(target.reference, progress))
    return SavedImage(target.reference, image.digest, layout, target.push)


def _bytes_pushed(
    reference: str, progress: Callable[[str], None] | None
) -> Callable[[int, int], None] | None:
    """Byte counts as a progress line (blobs the registry has count as done at once)."""
    if progress is None:
        return None
    report = progress
    return lambda done, total: report(
        f"pushing {reference}: {done / 1e6:.1f} of {total / 1e6:.1f} MB"
    )
