"""Where a bundle comes from: a directory, an OCI image layout, or an image in a registry,
by the one rule of :mod:`olmtool.images.sources`. Images and layouts are unpacked into a
temporary directory that :func:`open_bundle` and :func:`unpacked_image` always remove,
whatever happens inside the ``with`` block::

    with open_bundle("quay.io/example/etcd-bundle:0.3.0") as bundle:
        report = validate_bundle(bundle)
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from olmtool.bundle.model import Bundle, load_bundle, load_bundle_tree
from olmtool.errors import InputError
from olmtool.images import (
    Image,
    Source,
    SourceKind,
    classify_source,
    existing_directory,
    read_oci_layout,
)


def resolve_source(text: str | Path, *, base: Path | None = None) -> Source:
    """Classify a bundle's source text (InputError when it is none of the kinds)."""
    return classify_source(text, base=base, what="bundle")


def bundle_directory(text: str | Path, *, base: Path | None = None) -> Path:
    """The existing directory ``text`` names, by the same rule: InputError "no such
    bundle directory" (with what its nearest existing folder holds) otherwise."""
    return existing_directory(text, base=base, what="bundle")


def fetch_image(source: Source) -> Image:
    """The image ``source`` names: pulled from its registry or read from its layout."""
    if source.kind is SourceKind.directory:
        raise InputError("is a directory, not an image", path=source.text)
    if source.kind is SourceKind.layout:
        assert source.path is not None
        return read_oci_layout(source.path, source.tag)
    from olmtool.images import pull  # httpx: only for images

    return pull(source.text)


@contextmanager
def unpacked_image(
    source: Source, *, pulled: Image | None = None
) -> Iterator[tuple[Path, dict[str, str]]]:
    """Pull (or read from its layout) the image ``source`` names and unpack it into a
    temporary directory; yields that directory and the image's labels. ``pulled`` is
    the image when the caller has pulled it already."""
    image = pulled if pulled is not None else fetch_image(source)
    with tempfile.TemporaryDirectory(prefix="olmtool-image-") as workdir:
        root = Path(workdir)
        image.extract(root)
        yield root, image.labels


def image_bundle(image: Image, *, label: str) -> Bundle:
    """The bundle an image holds, read in memory (unpacked to a temporary directory only
    when it has symlinks, for the loader's symlink rules); its labels in
    ``image_labels``. Files are named ``label:/path`` in findings."""
    tree = image.plain_tree()
    if tree is not None:
        bundle = load_bundle_tree(tree.files, tree.directories, label=label)
    else:
        with tempfile.TemporaryDirectory(prefix="olmtool-image-") as workdir:
            image.extract(Path(workdir))
            bundle = load_bundle(Path(workdir), label=label)
    bundle.image_labels = image.labels
    return bundle


@contextmanager
def open_bundle(text: str | Path | Source, *, base: Path | None = None) -> Iterator[Bundle]:
    """The bundle ``text`` names, read like a bundle directory (an image's labels in
    ``image_labels``)."""
    source = text if isinstance(text, Source) else resolve_source(text, base=base)
    if source.kind is SourceKind.directory:
        assert source.path is not None
        yield load_bundle(source.path)
        return
    yield image_bundle(fetch_image(source), label=source.text)
