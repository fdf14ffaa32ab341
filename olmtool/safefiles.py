"""Reading files that other people wrote: regular files only, inside their tree, bounded.

Bundles and catalogs come from anywhere. A symlink may lead out of the tree (to
``/etc/shadow``), into a loop, or to ``/dev/zero``; a FIFO blocks a reader forever. Every
loader reads through :func:`read_regular`, which refuses all of these with a one-line
:class:`~olmtool.errors.InputError` naming the file, so each becomes a finding.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "a.yaml").write_text("x: 1")
>>> read_regular(root / "a.yaml", root=root)
b'x: 1'
>>> (root / "out").symlink_to("/etc/hostname")
>>> read_regular(root / "out", root=root)
Traceback (most recent call last):
...
olmtool.errors.InputError: ...out: a symlink to /etc/hostname, outside ...
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from olmtool.errors import InputError

# Far above any real manifest or catalog file (the largest real CSVs are a few MB), far
# below what would exhaust memory.
MAX_FILE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def resolve_inside(path: Path, root: Path | None) -> Path:
    """``path`` with every symlink resolved, refused when dangling, looping or (with
    ``root``) leading outside ``root``."""
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        if path.is_symlink():
            raise InputError(f"a dangling symlink to {os.readlink(path)}", path=path) from None
        raise InputError("no such file", path=path) from None
    except RuntimeError:  # Python < 3.13 reports a symlink loop this way
        raise InputError("a symlink loop", path=path) from None
    except OSError as exc:  # ELOOP and friends on newer Pythons
        raise InputError(f"cannot resolve: {exc.strerror or exc}", path=path) from None
    if root is not None:
        top = root.resolve()
        if resolved != top and top not in resolved.parents:
            raise InputError(f"a symlink to {resolved}, outside {top}", path=path)
    return resolved


def file_kind(path: Path) -> str | None:
    """None for a regular file (symlinks followed), else what it is ("a FIFO", ...)."""
    mode = path.stat().st_mode
    if stat.S_ISREG(mode):
        return None
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def check_regular(path: Path, *, root: Path | None = None, limit: int = MAX_FILE_BYTES) -> Path:
    """What :func:`read_regular` checks, without reading (for a reader that opens the file
    itself, later): ``path`` resolved, or an InputError naming it."""
    resolved = resolve_inside(path, root)
    try:
        info = resolved.stat()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise InputError(f"{kind}, not a regular file", path=path)
    if info.st_size > limit:
        raise InputError(f"{info.st_size} bytes, more than the {limit} allowed", path=path)
    return resolved


def read_regular(path: Path, *, root: Path | None = None, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``: a regular file (after symlinks, confined to ``root`` when
    given) of at most ``limit`` bytes; anything else is an InputError naming the file."""
    resolved = resolve_inside(path, root)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise InputError(f"{kind}, not a regular file", path=path)
        if info.st_size > limit:
            raise InputError(f"{info.st_size} bytes, more than the {limit} allowed", path=path)
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = _read_bounded(handle, info.st_size, limit)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while being read
        raise InputError(f"more than the {limit} bytes allowed", path=path)
    return data


def _read_bounded(handle: BinaryIO, size: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes: the ``size`` the file has, then (if it grew, or is a
    file of /proc that tells no size) the rest in chunks. Never a ``limit``-sized buffer
    for a small file: Python allocates what a read asks for."""
    data = handle.read(min(size, limit) + 1)
    if len(data) <= size:
        return data
    chunks = [data]
    total = len(data)
    while total <= limit:
        chunk = handle.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_regular_text(path: Path, *, root: Path | None = None, limit: int = MAX_FILE_BYTES) -> str:
    """:func:`read_regular` decoded as UTF-8 (an InputError when it is not)."""
    data = read_regular(path, root=root, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None
