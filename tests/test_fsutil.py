"""fsutil: atomic writes of files and trees, staging names, leftovers of killed runs."""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from olmtool import fsutil
from olmtool.fsutil import is_staging, read_tree, remove_stale, write_atomic, write_tree


def dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def staging_names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if is_staging(p.name))


def test_exchange_swaps_two_directories(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "from-a").write_text("a")
    (tmp_path / "b").mkdir()
    assert fsutil.exchange(tmp_path / "a", tmp_path / "b")  # Linux with renameat2
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["from-a"]
    assert list((tmp_path / "a").iterdir()) == []
    with pytest.raises(FileNotFoundError):
        fsutil.exchange(tmp_path / "a", tmp_path / "missing")


def test_write_tree_creates_replaces_and_leaves_nothing_beside(tmp_path: Path) -> None:
    target = tmp_path / "pkg"
    write_tree(target, {"a.yaml": "a\n", "sub/b.yaml": "b\n"})
    assert read_tree(target) == {"a.yaml": "a\n", "sub/b.yaml": "b\n"}
    inode = target.stat().st_ino
    write_tree(target, {"c.yaml": "c\n"})
    assert read_tree(target) == {"c.yaml": "c\n"}
    assert target.stat().st_ino != inode
    assert oct(target.stat().st_mode & 0o777) == "0o755"
    assert oct((target / "c.yaml").stat().st_mode & 0o777) == "0o644"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]
    assert not fsutil._ACTIVE


def test_write_tree_stages_in_staging_dir_and_never_misses_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "catalog", tmp_path
    target = root / "pkg"
    write_tree(target, {"catalog.json": "{}\n"})
    seen: list[tuple[str, list[str], list[str], bool]] = []

    def pause(step: str, path: Path) -> None:
        seen.append((step, staging_names(root), staging_names(outside), target.is_dir()))

    monkeypatch.setattr(fsutil, "_pause", pause)
    write_tree(target, {"catalog.json": "[]\n"}, staging_dir=outside)
    assert [s[0] for s in seen] == ["staging", "staged", "swapped"]
    for _step, in_root, beside, present in seen:
        assert in_root == [] and len(beside) == 1 and present
    assert read_tree(target) == {"catalog.json": "[]\n"}
    assert staging_names(outside) == [] and sorted(os.listdir(root)) == ["pkg"]


def test_write_tree_falls_back_to_two_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(a: bytes, b: bytes) -> int:
        ctypes.set_errno(errno.EINVAL)  # what a filesystem without RENAME_EXCHANGE answers
        return -1

    monkeypatch.setattr(fsutil, "_exchange_call", lambda: unsupported)
    target = tmp_path / "pkg"
    write_tree(target, {"x": "1\n"})
    steps: list[str] = []
    monkeypatch.setattr(fsutil, "_pause", lambda step, path: steps.append(step))
    write_tree(target, {"x": "2\n"})
    assert steps == ["staging", "staged", "retired", "swapped"]
    assert read_tree(target) == {"x": "2\n"}
    assert sorted(os.listdir(tmp_path)) == ["pkg"]


def test_exchange_reports_other_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(a: bytes, b: bytes) -> int:
        ctypes.set_errno(errno.EACCES)
        return -1

    monkeypatch.setattr(fsutil, "_exchange_call", lambda: denied)
    with pytest.raises(PermissionError):
        fsutil.exchange(tmp_path / "a", tmp_path / "b")
    monkeypatch.setattr(fsutil, "_exchange_call", lambda: None)  # not Linux
    assert fsutil.exchange(tmp_path / "a", tmp_path / "b") is False


def test_staging_dir_on_another_filesystem_or_unwritable_is_not_used(tmp_path: Path) -> None:
    assert fsutil._staging_place(tmp_path, None) == tmp_path
    (tmp_path / "elsewhere").mkdir()
    assert fsutil._staging_place(tmp_path, tmp_path / "elsewhere") == tmp_path / "elsewhere"
    assert fsutil._staging_place(tmp_path, tmp_path / "missing") == tmp_path
    if Path("/proc").is_dir():
        assert fsutil._staging_place(tmp_path, Path("/proc/self")) == tmp_path


def test_write_atomic_uses_the_staging_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "catalog.Dockerfile"
    seen: list[list[str]] = []
    monkeypatch.setattr(fsutil, "_pause", lambda step, p: seen.append(staging_names(tmp_path)))
    write_atomic(path, "FROM scratch\n")
    assert path.read_text() == "FROM scratch\n"
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert len(seen) == 1 and seen[0][0].startswith(".olmtool-staging-catalog.Dockerfile-")
    assert os.listdir(tmp_path) == ["catalog.Dockerfile"]


def test_stale_leftovers_are_removed_live_ones_kept(tmp_path: Path) -> None:
    gone, me, parent = dead_pid(), os.getpid(), os.getppid()
    names = {
        f".olmtool-staging-pkg-{gone}-0a1b2c3d": "dir",  # its process is gone
        f".olmtool-staging-Dockerfile-{gone}-99": "file",
        f".olmtool-staging-pkg-{me}-deadbeef": "dir",  # our PID, not in use: an earlier process
        f".olmtool-staging-pkg-{parent}-feedf00d": "dir",  # alive and fresh: in use
        f".pkg.old-{gone}": "dir",  # what older olmtool versions left
        f".pkg.old-{parent}": "dir",
        ".pkg.abcd1234": "dir",  # an old mkdtemp staging tree: removed once old
        ".pkg.zz99zz99.tmp": "file",  # an old mkstemp file (write_atomic)
        ".pkg.keep": "dir",
        "pkg": "dir",
    }
    for name, kind in names.items():
        if kind == "dir":
            (tmp_path / name / "sub").mkdir(parents=True)
            (tmp_path / name / "sub" / "catalog.json").write_text("{}")
        else:
            (tmp_path / name).write_text("x")
    removed = remove_stale(tmp_path / "pkg")
    assert sorted(p.name for p in removed) == sorted(
        [
            f".olmtool-staging-pkg-{gone}-0a1b2c3d",
            f".olmtool-staging-Dockerfile-{gone}-99",
            f".olmtool-staging-pkg-{me}-deadbeef",
            f".pkg.old-{gone}",
        ]
    )
    old = time.time() - fsutil.STALE_AFTER - 60
    os.utime(tmp_path / ".pkg.abcd1234", (old, old))
    os.utime(tmp_path / ".pkg.zz99zz99.tmp", (old, old))
    assert sorted(p.name for p in remove_stale(tmp_path / "pkg")) == [
        ".pkg.abcd1234",
        ".pkg.zz99zz99.tmp",
    ]
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f".olmtool-staging-pkg-{parent}-feedf00d", f".pkg.old-{parent}", ".pkg.keep", "pkg"]
    )


def test_a_live_pid_leftover_goes_once_it_is_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f".olmtool-staging-pkg-{os.getppid()}-00ff"
    (tmp_path / name).mkdir()
    assert remove_stale(tmp_path / "pkg") == []
    monkeypatch.setattr(fsutil, "STALE_AFTER", -1.0)  # a PID reused by another program
    assert [p.name for p in remove_stale(tmp_path / "pkg")] == [name]


def test_the_next_write_removes_leftovers(tmp_path: Path) -> None:
    gone = dead_pid()
    (tmp_path / f".olmtool-staging-pkg-{gone}-1234abcd").mkdir()
    (tmp_path / f".olmtool-staging-other-{gone}-1234abcd").mkdir()
    write_tree(tmp_path / "pkg", {"a": "a"})
    assert sorted(os.listdir(tmp_path)) == ["pkg"]


def test_is_staging() -> None:
    assert is_staging(".olmtool-staging-etcd-operator-12-ab")
    assert not is_staging("etcd-operator") and not is_staging(".etcd-operator.old-12")


def test_exchange_by_syscall_number_without_glibc_renameat2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ctypes.CDLL(None, use_errno=True)

    class OldLibc:  # a C library older than glibc 2.28: the raw system call only
        syscall = real.syscall

    monkeypatch.setattr(fsutil.ctypes, "CDLL", lambda *a, **k: OldLibc())
    call = fsutil._load_renameat2()
    if fsutil.platform.machine().lower() not in fsutil._SYSCALL_RENAMEAT2:
        assert call is None
        return
    assert call is not None
    monkeypatch.setattr(fsutil, "_exchange_call", lambda: call)
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    assert fsutil.exchange(tmp_path / "a", tmp_path / "b")
    assert (tmp_path / "a").read_text() == "b" and (tmp_path / "b").read_text() == "a"
