"""A root filesystem assembled in memory from ``.deb`` data archives and a few files,
written as one reproducible layer.

Each package's files come from ``dpkg-deb --fsys-tarfile`` (what ``dpkg-deb -x``
unpacks, as a tar stream): no maintainer script runs, nothing touches the host's disk.
The tree is merged-``/usr`` as Debian bookworm's own systems are (``/bin``, ``/sbin``,
``/lib*`` are links into ``/usr``, and a package's ``/lib/...`` lands in ``/usr/lib/...``).
Everything is owned by root, timestamps are fixed and entries sorted, so the same
packages give the same bytes.
"""

from __future__ import annotations

import io
import posixpath
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import OlmtoolError
from olmtool.images.bytecode import compile_sources

MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Documentation a runtime never reads; each package's copyright notice stays.
_DROPPED = (
    "usr/share/man/",
    "usr/share/info/",
    "usr/share/lintian/",
    "usr/share/doc-base/",
    "usr/share/bug/",
)


class RootFsError(OlmtoolError):
    """A package archive that cannot be read."""


@dataclass(frozen=True)
class Node:
    kind: bytes  # tarfile.REGTYPE, DIRTYPE or SYMTYPE
    mode: int
    data: bytes = b""
    target: str = ""
    owner: int = 0  # uid and gid


class RootFs:
    """Paths (no leading slash) to files, directories and symlinks."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {
            name: Node(tarfile.SYMTYPE, 0o777, target=f"usr/{name}") for name in MERGED
        }
        self.nodes["usr"] = Node(tarfile.DIRTYPE, 0o755)
        for name in MERGED:
            self.nodes[f"usr/{name}"] = Node(tarfile.DIRTYPE, 0o755)

    def add_deb(self, deb: Path) -> None:
        """Every file of the package's data archive (minus man pages and docs)."""
        try:
            done = subprocess.run(
                ["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, timeout=300
            )
        except OSError as exc:
            raise RootFsError(f"cannot run dpkg-deb: {exc.strerror}") from None
        if done.returncode != 0:
            raise RootFsError(f"{deb.name}: {done.stderr.decode(errors='replace').strip()}")
        self.add_tar(done.stdout, deb.name)

    def add_tar(self, data: bytes, what: str) -> None:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                path = merged_path(member.name)
                if not path or _dropped(path):
                    continue
                if member.isdir():
                    self.directory(path, member.mode & 0o7777)
                elif member.issym():
                    self.symlink(path, member.linkname)
                elif member.islnk():
                    source = self.nodes.get(merged_path(member.linkname))
                    if source is None or source.kind != tarfile.REGTYPE:
                        raise RootFsError(f"{what}: hard link {member.name} to a missing file")
                    self.file(path, source.data, source.mode)
                elif member.isreg():
                    extracted = archive.extractfile(member)
                    self.file(path, extracted.read() if extracted else b"", member.mode & 0o7777)
                # devices and fifos: none in the packages olmtool uses; skipped

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._parents(path)
        self.nodes[path] = Node(tarfile.REGTYPE, mode, data)

    def directory(self, path: str, mode: int = 0o755, owner: int = 0) -> None:
        if self.nodes.get(path, Node(tarfile.DIRTYPE, 0)).kind == tarfile.SYMTYPE:
            return  # a package's /lib dir when /lib is the merged-/usr link
        self._parents(path)
        self.nodes[path] = Node(tarfile.DIRTYPE, mode, owner=owner)

    def symlink(self, path: str, target: str) -> None:
        self._parents(path)
        self.nodes[path] = Node(tarfile.SYMTYPE, 0o777, target=target)

    def remove(self, prefix: str) -> None:
        for path in [p for p in self.nodes if p == prefix or p.startswith(prefix + "/")]:
            del self.nodes[path]

    def names(self, directory: str) -> list[str]:
        """The entries directly inside ``directory``, sorted."""
        start = directory.rstrip("/") + "/"
        return sorted(
            p[len(start) :]
            for p in self.nodes
            if p.startswith(start) and "/" not in p[len(start) :]
        )

    def layer(self, mtime: int = 0) -> bytes:
        """An uncompressed tar of the tree: sorted, root-owned, every mtime ``mtime``."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.nodes):
                node = self.nodes[path]
                info = tarfile.TarInfo(path)
                info.type, info.mode, info.mtime = node.kind, node.mode, mtime
                info.uid = info.gid = node.owner
                info.uname = info.gname = ""
                if node.kind == tarfile.REGTYPE:
                    info.size = len(node.data)
                    tar.addfile(info, io.BytesIO(node.data))
                else:
                    info.linkname = node.target
                    tar.addfile(info)
        return buffer.getvalue()

    def _parents(self, path: str) -> None:
        parent = posixpath.dirname(path)
        while parent and parent not in self.nodes:
            self.nodes[parent] = Node(tarfile.DIRTYPE, 0o755)
            parent = posixpath.dirname(parent)


def compile_python(tree: RootFs, directory: str, python: str) -> int:
    """Add ``__pycache__`` bytecode for every module under ``directory`` (Debian writes it
    in a maintainer script, which never runs here; :mod:`olmtool.images.bytecode`);
    returns the count."""
    sources = {
        path: node.data
        for path, node in tree.nodes.items()
        if path.startswith(directory + "/") and node.kind == tarfile.REGTYPE
    }
    compiled = compile_sources(sources, python)
    for path, data in compiled.items():
        tree.file(path, data)
    return len(compiled)


def merged_path(name: str) -> str:
    """A package path as it lands on a merged-/usr system: ``./lib/x`` -> ``usr/lib/x``."""
    path = posixpath.normpath("/" + name).lstrip("/")
    if path in ("", "."):
        return ""
    top, _, rest = path.partition("/")
    if top in MERGED:
        return f"usr/{top}/{rest}" if rest else f"usr/{top}"
    return path


def _dropped(path: str) -> bool:
    if path.startswith("usr/share/doc/"):
        parts = path.split("/")
        return len(parts) > 4 and not (len(parts) == 5 and parts[4] == "copyright")
    return path.startswith(_DROPPED)
