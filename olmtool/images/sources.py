"""Where a bundle or catalog comes from: one rule for a source text, everywhere olmtool
takes one (bundles: validate, render, publish, add, templates; catalogs: install, test
upgrade). A source text is, in this order:

1. an OCI image layout: ``oci:<directory>[:<tag>]`` (skopeo's notation), or an existing
   directory that holds an ``oci-layout`` file;
2. a directory: any other existing path (relative to ``base``, default the working
   directory);
3. with ``addresses`` (catalogs): a registry server to dial, ``host:port``;
4. a missing directory: a text written as a path (:func:`looks_like_path`: it starts with
   ``/``, ``./``, ``../`` or ``~``, or its first ``/``-separated part exists here, as in
   ``bundle/etcd-operator/0.9.0``) is "no such directory", never an image, so a typo is
   reported as one (with what the nearest existing folder holds);
5. an image reference: anything else whose first ``/``-separated part names a registry
   host (holds a ``.`` or a ``:``, or is ``localhost``), which is how docker tells a
   registry from a Docker Hub path: ``quay.io/org/bundle:1.0``, ``localhost:5000/b:1``.
   Docker Hub images are written out in full (``docker.io/org/bundle:1.0``).

Anything else is an :class:`~olmtool.errors.InputError` naming the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from olmtool.errors import InputError, display_path
from olmtool.images.reference import parse_reference

# a registry server's address: host:port, no path
_ADDRESS = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:\d+$")


class SourceKind(StrEnum):
    directory = "directory"
    layout = "oci-layout"
    image = "image"
    address = "address"


@dataclass(frozen=True)
class Source:
    """A classified source text: ``path`` for directories and layouts, ``tag`` for a
    layout's chosen image."""

    text: str
    kind: SourceKind
    path: Path | None = None
    tag: str | None = None


def is_registry_address(text: str) -> bool:
    """``host:port`` (a registry server to dial), as opposed to a path or an image."""
    return bool(_ADDRESS.match(text)) and "/" not in text


LAYOUT_PREFIX = "oci:"


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


def classify_source(
    text: str | Path, *, base: Path | None = None, what: str = "bundle", addresses: bool = False
) -> Source:
    """Classify ``text`` by the module's rule (``addresses``: host:port is one); InputError
    naming the text when it is none of them (``what``: "bundle" or "catalog")."""
    text = str(text)
    if text.startswith(LAYOUT_PREFIX):
        directory, _, tag = text.removeprefix(LAYOUT_PREFIX).partition(":")
        return Source(text, SourceKind.layout, _under(base, directory), tag or None)
    path = _under(base, text)
    if path.exists():
        kind = SourceKind.layout if (path / "oci-layout").is_file() else SourceKind.directory
        return Source(text, kind, path)
    if addresses and is_registry_address(text):
        return Source(text, SourceKind.address)
    if looks_like_path(text, base=base):
        raise missing_directory(text, base=base, what=what)
    if names_registry(text):
        parse_reference(text)  # a clear error for a malformed reference
        return Source(text, SourceKind.image)
    kinds = "directory, registry address (host:port)" if addresses else "directory, OCI layout"
    raise InputError(f"no such {what} {kinds} or image reference", path=text)


def existing_directory(text: str | Path, *, base: Path | None = None, what: str = "bundle") -> Path:
    """The existing directory ``text`` names: InputError "no such directory" (with what
    its nearest existing folder holds) otherwise."""
    path = _under(base, str(text))
    if not path.is_dir():
        raise missing_directory(str(text), base=base, what=what)
    return path


def missing_directory(text: str, *, base: Path | None = None, what: str = "bundle") -> InputError:
    """The error for a missing directory, with what the nearest existing folder the text
    names holds: a mistyped version or package shows the right ones next to it."""
    parts = Path(text).parts
    for depth in range(len(parts) - 1, 0, -1):
        if parts[depth - 1] in ("/", ".", "..", "~"):
            break  # the working directory, home or / say nothing about a typo
        folder = _under(base, str(Path(*parts[:depth])))
        if folder.is_dir():
            return InputError(f"no such {what} directory{_holds(folder)}", path=text)
    return InputError(f"no such {what} directory", path=text)


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
