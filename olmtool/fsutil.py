"""Writing files so that a failure never leaves one half-written."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class TreeDiff:
    """How a directory on disk differs from the files it should hold."""

    directory: Path
    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return bool(self.added or self.modified or self.removed)

    @property
    def changed(self) -> list[str]:
        return [*self.added, *self.modified, *self.removed]


def read_tree(directory: Path) -> dict[str, str]:
    """Every file under ``directory``: relative POSIX path -> text."""
    if not directory.is_dir():
        return {}
    return {
        path.relative_to(directory).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def diff_tree(directory: Path, files: dict[str, str]) -> TreeDiff:
    """Compare ``directory`` with ``files`` (relative path -> text), with unified diffs."""
    return diff_files(directory, files, read_tree(directory))


def diff_files(
    directory: Path,
    files: dict[str, str],
    current: dict[str, str],
    names: Iterable[str] | None = None,
) -> TreeDiff:
    """Compare ``current`` (what ``directory`` holds) with ``files`` (what it should hold).

    ``names`` orders the comparison (and so the lists and diffs); by default every name of
    either side, sorted.
    """
    result = TreeDiff(directory)
    for name in sorted(set(files) | set(current)) if names is None else names:
        old, new = current.get(name), files.get(name)
        if old == new:
            result.unchanged.append(name)
            continue
        bucket = result.added if old is None else result.removed if new is None else result.modified
        bucket.append(name)
        result.diffs.append(unified_diff(directory / name, old or "", new or ""))
    return result


def unified_diff(path: Path, old: str, new: str) -> str:
    """A diff from ``path`` as it is on disk to the text generated for it."""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{path} (on disk)",
            tofile=f"{path} (generated)",
        )
    )


def write_tree(directory: Path, files: dict[str, str]) -> None:
    """Make ``directory`` hold exactly ``files``: built beside it, then swapped in by rename."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        for name, text in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            os.chmod(path, 0o644)
        os.chmod(staging, 0o755)
        retired = None
        if directory.exists():
            retired = directory.with_name(f".{directory.name}.old-{os.getpid()}")
            os.replace(directory, retired)
        try:
            os.replace(staging, directory)
        except BaseException:
            if retired is not None:  # put the old directory back before reporting
                os.replace(retired, directory)
            raise
        if retired is not None:
            shutil.rmtree(retired)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
