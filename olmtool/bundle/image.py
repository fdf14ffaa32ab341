"""Bundle images: a FROM-scratch OCI image of a bundle, labelled with its annotations.

OLM recognises a bundle image by its image-config labels, so every annotation from
``metadata/annotations.yaml`` becomes a label; the layer holds ``/manifests``,
``/metadata`` and (when present) ``/tests/scorecard``.
"""

from __future__ import annotations

from olmtool.bundle import format as fmt
from olmtool.bundle.build import BuiltBundle
from olmtool.images import Image, build_image

IMAGE_DIRS = (fmt.MANIFESTS_DIR, fmt.METADATA_DIR, "tests/scorecard")


def bundle_image(bundle: BuiltBundle) -> Image:
    """The bundle image for a rendered bundle (deterministic: same bundle, same digest)."""
    files = {
        name: text.encode("utf-8")
        for name, text in bundle.files.items()
        if name.startswith(tuple(f"{d}/" for d in IMAGE_DIRS))
    }
    return build_image(files, bundle.labels)
