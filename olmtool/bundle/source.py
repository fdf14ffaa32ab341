"""Where a bundle comes from: a directory, an OCI image layout, or an image in a registry.

One rule tells them apart, everywhere olmtool takes a bundle (validate, render, publish,
add, templates). A source text is, in this order:

1. an OCI image layout: ``oci:<directory>[:<tag>]`` (skopeo's notation), or an existing
   directory that holds an ``oci-layout`` file;
2. a directory: any other existing path (relative to ``base``, default the working
   directory);
3. a missing directory: a text written as a path (:func:`looks_like_path`: it starts with
   ``/``, ``./``, ``../`` or ``~``, or its first ``/``-separated part exists here, as in
   ``bundle/etcd-operator/0.9.0``) is "no such bundle directory", never an image, so a
   typo is reported as one (with what the nearest existing folder holds);
4. an image reference: anything else whose first ``/``-separated part names a registry
   host (holds a ``.`` or a ``:``, or is ``localhost``), which is how docker tells a
   registry from a Docker Hub path: ``quay.io/org/bundle:1.0``, ``localhost:5000/b:1``.
   Docker Hub images are written out in full (``docker.io/org/bundle:1.0``).

Anything else is an :class:`~olmtool.errors.InputError`; :func:`bundle_directory` applies
the same rule where only a directory will do (``bundle image``). Images and layouts are unpacked
into a temporary directory that :func:`open_bundle` and :func:`unpacked_image` always
remove, whatever happens inside the ``with`` block::

    with open_bundle("quay.io/example/etcd-bundle:0.3.0") as bundle:
        report = validate_bundle(bundle)
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from olmtool.bundle.model import Bundle, load_bundle
from olmtool.errors import InputError, display_path
from olmtool.images import parse_reference, read_oci_layout

LAYOUT_PREFIX = "oci:"


class SourceKind(StrEnum):
    directory = "directory"
    layout = "oci-layout"
    image = "image"


@dataclass(frozen=True)
class Source:
    """A classified source text: ``path`` for directories and layouts, ``tag`` for a
    layout's chosen image."""

    text: str
    kind: SourceKind
    path: Path | None = None
    tag: str | None = None


def names_registry(text: str) -> bool:
    """Whether ``text`` starts with a registry host, docker's test for an image reference."""
    first, slash, _ = text.partition("/")
    return bool(slash) and ("." in first or ":" in first or first == "localhost")


# how a text written as a local path starts (``~`` as the shell would expand it)
PATH_PREFIXES = ("/", "./", "../", "~")


def looks_like_path(text: str, *, base: Path | None = None) -> bool:
    """Whether ``text`` is written as a local path: it starts with ``/``, ``./``, ``../``
    or ``~`` (or is ``.``/``..``), or its first ``/``-separated part exists (relative to
    ``base``). Such a text is never taken for an image reference."""
    if text in (".", "..") or text.startswith(PATH_PREFIXES):
        return True
    first, slash, _ = text.partition("/")
    return bool(slash) and _under(base, first).exists()


def resolve_source(text: str | Path, *, base: Path | None = None) -> Source:
    """Classify ``text`` by the module's rule; InputError when it is none of them."""
    text = str(text)
    if text.startswith(LAYOUT_PREFIX):
        directory, _, tag = text.removeprefix(LAYOUT_PREFIX).partition(":")
        return Source(text, SourceKind.layout, _under(base, directory), tag or None)
    path = _under(base, text)
    if path.exists():
        kind = SourceKind.layout if (path / "oci-layout").is_file() else SourceKind.directory
        return Source(text, kind, path)
    if looks_like_path(text, base=base):
        raise missing_directory(text, base=base)
    if names_registry(text):
        parse_reference(text)  # a clear error for a malformed reference
        return Source(text, SourceKind.image)
    raise InputError("no such bundle directory, OCI layout or image reference", path=text)


def bundle_directory(text: str | Path, *, base: Path | None = None) -> Path:
    """The existing directory ``text`` names, by the same rule: InputError "no such
    bundle directory" (with what its nearest existing folder holds) otherwise."""
    path = _under(base, str(text))
    if not path.is_dir():
        raise missing_directory(str(text), base=base)
    return path


def missing_directory(text: str, *, base: Path | None = None) -> InputError:
    """The error for a missing directory, with what the nearest existing folder the text
    names holds: a mistyped version or package shows the right ones next to it."""
    parts = Path(text).parts
    for depth in range(len(parts) - 1, 0, -1):
        if parts[depth - 1] in ("/", ".", "..", "~"):
            break  # the working directory, home or / say nothing about a typo
        folder = _under(base, str(Path(*parts[:depth])))
        if folder.is_dir():
            return InputError(f"no such bundle directory{_holds(folder)}", path=text)
    return InputError("no such bundle directory", path=text)


def _holds(folder: Path, shown: int = 12) -> str:
    try:
        names = sorted(
            e.name for e in folder.iterdir() if e.is_dir() and not e.name.startswith(".")
        )
    except OSError:
        return ""
    if not names:
        return ""
    more = ", ..." if len(names) > shown else ""
    return f" ({display_path(folder)} holds {', '.join(names[:shown])}{more})"


def _under(base: Path | None, text: str) -> Path:
    path = Path(text).expanduser() if text.startswith("~") else Path(text)
    return base / path if base is not None else path


@contextmanager
def unpacked_image(source: Source) -> Iterator[tuple[Path, dict[str, str]]]:
    """Pull (or read from its layout) the image ``source`` names and unpack it into a
    temporary directory; yields that directory and the image's labels."""
    if source.kind is SourceKind.directory:
        raise InputError("is a directory, not an image", path=source.text)
    if source.kind is SourceKind.layout:
        assert source.path is not None
        image = read_oci_layout(source.path, source.tag)
    else:
        from olmtool.images import pull  # httpx: only for images

        image = pull(source.text)
    with tempfile.TemporaryDirectory(prefix="olmtool-image-") as workdir:
        root = Path(workdir)
        image.extract(root)
        yield root, image.labels


@contextmanager
def open_bundle(text: str | Path | Source, *, base: Path | None = None) -> Iterator[Bundle]:
    """The bundle ``text`` names, read like a bundle directory (an image's labels in
    ``image_labels``); an unpacked image is removed when the block ends."""
    source = text if isinstance(text, Source) else resolve_source(text, base=base)
    if source.kind is SourceKind.directory:
        assert source.path is not None
        yield load_bundle(source.path)
        return
    with unpacked_image(source) as (root, labels):
        bundle = load_bundle(root, label=source.text)
        bundle.image_labels = labels
        yield bundle
