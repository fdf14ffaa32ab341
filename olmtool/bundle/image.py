"""Bundle images: a FROM-scratch OCI image of a bundle, labelled with its annotations.

OLM recognises a bundle image by its image-config labels, so every annotation from
``metadata/annotations.yaml`` becomes a label; the layer holds ``/manifests``,
``/metadata`` and (when present) ``/tests/scorecard``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from olmtool.bundle import format as fmt
from olmtool.bundle.build import BuiltBundle
from olmtool.bundle.model import Bundle, load_bundle
from olmtool.images import Image, build_image, pull

IMAGE_DIRS = (fmt.MANIFESTS_DIR, fmt.METADATA_DIR, "tests/scorecard")


def bundle_image(bundle: BuiltBundle) -> Image:
    """The bundle image for a rendered bundle (deterministic: same bundle, same digest)."""
    files = {
        name: text.encode("utf-8")
        for name, text in bundle.files.items()
        if name.startswith(tuple(f"{d}/" for d in IMAGE_DIRS))
    }
    return build_image(files, bundle.labels)


def load_bundle_image(reference: str, workdir: Path | None = None) -> Bundle:
    """Pull a bundle image and read it like a bundle directory, labels included."""
    image = pull(reference)
    root = Path(tempfile.mkdtemp(prefix="olmtool-bundle-", dir=workdir))
    image.extract(root)
    bundle = load_bundle(root, label=reference)
    bundle.image_labels = image.labels
    return bundle
