"""Bundle images: a FROM-scratch OCI image of a bundle, labelled with its annotations.

OLM recognises a bundle image by its image-config labels, so every annotation from
``metadata/annotations.yaml`` becomes a label; the layer holds ``/manifests``,
``/metadata`` and (when present) ``/tests/scorecard``.
"""

from __future__ import annotations

from pathlib import Path

from olmtool.bundle import format as fmt
from olmtool.bundle.build import BuiltBundle
from olmtool.bundle.model import Bundle, load_bundle
from olmtool.errors import InputError
from olmtool.images import Image, build_image

IMAGE_DIRS = (fmt.MANIFESTS_DIR, fmt.METADATA_DIR, "tests/scorecard")
# What a directory must not have to be taken for a bundle (everything else is left to
# ``bundle validate``): the loader's findings that leave no bundle, or a partial one.
NOT_A_BUNDLE = frozenset(
    {
        "loader/unreadable-file",
        "loader/csv-parse",
        "loader/no-csv",
        "loader/multiple-csvs",
        "format/manifests-missing",
        "format/metadata-missing",
        "format/annotations-missing",
        "format/annotations-parse",
    }
)


def bundle_image(bundle: BuiltBundle) -> Image:
    """The bundle image for a rendered bundle (deterministic: same bundle, same digest)."""
    files = {name: text.encode("utf-8") for name, text in bundle.files.items()}
    return _image(files, bundle.labels)


def directory_image(root: Path) -> tuple[Image, Bundle]:
    """The bundle image of a bundle directory on disk, built by olmtool or not, and the
    bundle as loaded. It must load as a bundle (annotations with the package, one
    readable CSV); its files go in byte for byte, whatever else ``bundle validate``
    would say about them."""
    bundle = load_bundle(root)
    for problem in bundle.problems:
        if problem.check in NOT_A_BUNDLE and problem.severity == "error":
            raise InputError(
                f"not a bundle: {problem.message} [{problem.check}]",
                path=problem.file,
                line=problem.line,
            )
    annotations = bundle.annotations or {}
    if not annotations.get(fmt.PACKAGE):
        raise InputError(
            f"not a bundle: metadata/annotations.yaml names no {fmt.PACKAGE}",
            path=root / fmt.ANNOTATIONS_FILE,
        )
    return _image(bundle.files, annotations), bundle


def _image(files: dict[str, bytes], labels: dict[str, str]) -> Image:
    kept = {
        name: data
        for name, data in files.items()
        if name.startswith(tuple(f"{d}/" for d in IMAGE_DIRS))
    }
    return build_image(kept, labels)
