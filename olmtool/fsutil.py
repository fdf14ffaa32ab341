"""Writing files and directories so that a failure or a kill never leaves one half-written.

``write_atomic`` writes a file beside its target and renames it into place;
``write_tree`` builds a directory beside its target and swaps the two with one
``renameat2(RENAME_EXCHANGE)`` (Linux), so the target always exists and is always either
the old tree or the new one. Both flush data (``fsync``) before the rename, so a crash of the
machine does not leave empty files behind the new names either.

Everything olmtool puts beside a target for a while — a staging file or tree, an old tree
being removed — is named ``.olmtool-staging-<name>-<pid>-<random>`` (:func:`is_staging`).
The catalog loader and bundle globs skip these names; a run killed in between leaves one
behind, and the next write in that directory removes every leftover whose process is gone
(or that is older than :data:`STALE_AFTER` seconds: a live PID reused by another program).

Test hook: with ``OLMTOOL_TEST_WRITE_PAUSE=<seconds>`` in the environment, every step
between writing and swapping prints ``OLMTOOL_TEST_WRITE_PAUSE: <step> <path>`` to stderr
and sleeps, so that a test can kill the process inside the swap (tests/test_kill_loop.py).
"""

from __future__ import annotations

import ctypes
import difflib
import errno
import os
import platform
import re
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

STAGING_PREFIX = ".olmtool-staging-"
_STAGING = re.compile(r"^\.olmtool-staging-.*-(?P<pid>[0-9]+)-[0-9a-f]+$")
STALE_AFTER = 15 * 60  # seconds: a leftover this old is removed even if its PID is alive
PAUSE_ENV = "OLMTOOL_TEST_WRITE_PAUSE"
_ACTIVE: set[str] = set()  # staging names this process is using right now


def is_staging(name: str) -> bool:
    """Whether ``name`` (a file or directory name) is olmtool's staging or leftover entry."""
    return name.startswith(STAGING_PREFIX)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a staging file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    staging = _staging_path(path.parent, path.name)
    try:
        _write_file(staging, text)
        _pause("written", path)
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    finally:
        _ACTIVE.discard(staging.name)
    _fsync_directory(path.parent)


def write_tree(directory: Path, files: dict[str, str], *, staging_dir: Path | None = None) -> None:
    """Make ``directory`` hold exactly ``files`` (relative path -> text): built in a staging
    tree, then swapped in atomically, then the old tree removed.

    The staging tree is made in ``staging_dir`` when given and on the same filesystem
    (the catalog writer keeps it out of the catalog root, which opm reads whole), else
    beside ``directory``.
    """
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    where = _staging_place(parent, staging_dir)
    remove_stale(directory, staging_dir=where)
    staging = _staging_path(where, directory.name)
    try:
        os.mkdir(staging, 0o700)
        for index, (name, text) in enumerate(files.items()):
            if index == len(files) // 2:
                _pause("staging", directory)  # half written
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_file(path, text)
        subdirectories = {d for n in files for d in (staging / n).parents if d != staging}
        for sub in sorted(d for d in subdirectories if d.is_relative_to(staging)):
            _fsync_directory(sub)
        os.chmod(staging, 0o755)
        _fsync_directory(staging)
        _pause("staged", directory)
        old = _swap_in(staging, directory)
    except BaseException:
        _remove(staging)  # the new tree never went in: it is still the staging tree
        _ACTIVE.discard(staging.name)
        raise
    try:
        _fsync_directory(parent)
        if where != parent:
            _fsync_directory(where)
        if old is not None:
            _pause("swapped", directory)
            _remove(old)
    finally:
        _ACTIVE.discard(staging.name)
        if old is not None:
            _ACTIVE.discard(old.name)


def remove_stale(target: Path, *, staging_dir: Path | None = None) -> list[Path]:
    """Remove the leftovers of killed writes where a write of ``target`` stages: beside
    it and in ``staging_dir``. A leftover is stale when its process is gone, older than
    :data:`STALE_AFTER`, or names this process without being in use. Also removes the
    names older olmtool versions left (``.<name>.old-<pid>``, ``.<name>.<8 random>``)."""
    removed: list[Path] = []
    places = {target.parent, staging_dir or target.parent}
    for place in places:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            if _stale(entry) or (place == target.parent and _legacy(entry, target.name)):
                _remove(Path(entry.path))
                removed.append(Path(entry.path))
    return removed


# --- staging ----------------------------------------------------------------------------


def _staging_path(where: Path, name: str) -> Path:
    staged = f"{STAGING_PREFIX}{name[:100]}-{os.getpid()}-{secrets.token_hex(4)}"
    _ACTIVE.add(staged)
    return where / staged


def _staging_place(parent: Path, staging_dir: Path | None) -> Path:
    """``staging_dir`` if it is a writable directory on ``parent``'s filesystem, else
    ``parent``: a rename cannot cross filesystems."""
    if staging_dir is None:
        return parent
    try:
        same = os.stat(staging_dir).st_dev == os.stat(parent).st_dev
    except OSError:
        return parent
    return staging_dir if same and os.access(staging_dir, os.W_OK | os.X_OK) else parent


def _stale(entry: os.DirEntry[str]) -> bool:
    match = _STAGING.match(entry.name)
    if match is None:
        return False
    if entry.name in _ACTIVE:
        return False
    pid = int(match["pid"])
    if pid == os.getpid() or not _alive(pid):
        return True  # our own PID but not in use: an earlier process that had it
    try:
        status = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    # ctime: a rename (how an old tree becomes a leftover) updates it, mtime does not
    return time.time() - max(status.st_mtime, status.st_ctime) > STALE_AFTER


def _legacy(entry: os.DirEntry[str], name: str) -> bool:
    """What olmtool before the staging names left beside ``name`` when killed."""
    prefix = f".{name}."
    if not entry.name.startswith(prefix):
        return False
    rest = entry.name[len(prefix) :]
    if not entry.is_dir(follow_symlinks=False) and not rest.endswith(".tmp"):
        return False
    if rest.startswith("old-") and rest[4:].isdigit():
        return not _alive(int(rest[4:]))
    if re.fullmatch(r"[a-z0-9_]{8}(\.tmp)?", rest):  # mkdtemp's staging tree, mkstemp's file
        try:
            age = time.time() - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            return False
        return age > STALE_AFTER
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or a PID no process can have: keep it)
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _write_file(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
        handle.flush()
        os.fchmod(fd, 0o644)  # whatever the umask
        os.fsync(fd)


def _fsync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the data is synced already
    finally:
        os.close(fd)


def _pause(step: str, path: Path) -> None:
    seconds = os.environ.get(PAUSE_ENV)
    if seconds:
        sys.stderr.write(f"{PAUSE_ENV}: {step} {path}\n")
        sys.stderr.flush()
        time.sleep(float(seconds))


# --- the swap ----------------------------------------------------------------------------


def _swap_in(staging: Path, directory: Path) -> Path | None:
    """Put ``staging`` at ``directory``; return where the old tree now is (None: there was
    none). The target never goes missing, except in the fallback below."""
    try:
        if exchange(staging, directory):
            return staging  # the names swapped: the old tree is at the staging name
    except FileNotFoundError:
        if os.path.lexists(directory):
            raise  # the staging tree is gone (removed by someone else): nothing to swap
        os.rename(staging, directory)  # first creation: a plain rename
        return None
    # Fallback where the filesystem (or kernel, or C library) cannot exchange two names:
    # the old tree is renamed aside, then the new one in. A kill between the two renames
    # leaves the target missing (the old tree is kept at the staging-pattern name
    # ``retired``), which is why the exchange is preferred.
    if not os.path.lexists(directory):
        os.replace(staging, directory)
        return None
    retired = _staging_path(staging.parent, directory.name)
    os.replace(directory, retired)
    try:
        _pause("retired", directory)
        os.replace(staging, directory)
    except BaseException:
        os.replace(retired, directory)  # put the old tree back before reporting
        _ACTIVE.discard(retired.name)
        raise
    return retired


AT_FDCWD = -100
RENAME_EXCHANGE = 2
_SYSCALL_RENAMEAT2 = {"x86_64": 316, "amd64": 316, "aarch64": 276, "arm64": 276}
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM}
_renameat2: Callable[[bytes, bytes], int] | bool | None = None  # False: unavailable


def exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` atomically (``renameat2(RENAME_EXCHANGE)``); False
    where that is unavailable (not Linux, an old C library and unknown machine, or a
    filesystem that refuses: EINVAL, ENOSYS, EOPNOTSUPP). Other failures raise OSError."""
    call = _exchange_call()
    if call is None:
        return False
    ctypes.set_errno(0)
    if call(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _exchange_call() -> Callable[[bytes, bytes], int] | None:
    global _renameat2
    if _renameat2 is None:
        _renameat2 = _load_renameat2() or False
    return _renameat2 or None


def _load_renameat2() -> Callable[[bytes, bytes], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    function = getattr(libc, "renameat2", None)  # glibc 2.28+
    if function is not None:
        function.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        function.restype = ctypes.c_int
        return lambda a, b: function(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    number = _SYSCALL_RENAMEAT2.get(platform.machine().lower())
    syscall = getattr(libc, "syscall", None)
    if number is None or syscall is None:
        return None
    syscall.restype = ctypes.c_long
    return lambda a, b: syscall(
        ctypes.c_long(number),
        ctypes.c_int(AT_FDCWD),
        ctypes.c_char_p(a),
        ctypes.c_int(AT_FDCWD),
        ctypes.c_char_p(b),
        ctypes.c_uint(RENAME_EXCHANGE),
    )


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
