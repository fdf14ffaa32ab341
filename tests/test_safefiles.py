"""read_regular refuses what a hostile tree may hold, with one line naming the file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from olmtool.errors import InputError
from olmtool.safefiles import check_regular, read_regular, read_regular_text


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "ok.yaml").write_text("a: 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner").symlink_to("../ok.yaml")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "dangling").symlink_to("nothing")
    (tmp_path / "outside").symlink_to("/etc/hostname")
    (tmp_path / "latin1").write_bytes(b"caf\xe9")
    return tmp_path


def test_regular_files_and_symlinks_inside_are_read(tree: Path) -> None:
    assert read_regular(tree / "ok.yaml", root=tree) == b"a: 1\n"
    assert read_regular_text(tree / "sub" / "inner", root=tree) == "a: 1\n"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("fifo", "a FIFO, not a regular file"),
        ("loop1", "a symlink loop"),
        ("zero", "a symlink to /dev/zero, outside"),
        ("dangling", "a dangling symlink to nothing"),
        ("outside", "a symlink to /etc/hostname, outside"),
        ("sub", "a directory, not a regular file"),
        ("missing", "no such file"),
    ],
)
@pytest.mark.parametrize("check", [read_regular, check_regular])
def test_hostile_entries_are_one_line_errors(
    tree: Path, name: str, message: str, check: Callable[..., object]
) -> None:
    with pytest.raises(InputError) as error:
        check(tree / name, root=tree)
    assert message in str(error.value)
    assert name in str(error.value)
    assert "\n" not in str(error.value)


def test_devices_and_size_limits(tree: Path) -> None:
    with pytest.raises(InputError, match="a character device"):
        read_regular(Path("/dev/zero"))
    with pytest.raises(InputError, match="more than the 3 allowed"):
        read_regular(tree / "ok.yaml", limit=3)
    with pytest.raises(InputError, match="not UTF-8"):
        read_regular_text(tree / "latin1")


def test_check_regular_answers_without_reading(tree: Path) -> None:
    assert check_regular(tree / "sub" / "inner", root=tree) == (tree / "ok.yaml").resolve()
    with pytest.raises(InputError, match="more than the 3 allowed"):
        check_regular(tree / "ok.yaml", limit=3)


def test_reads_files_that_grow_or_tell_no_size() -> None:
    status = read_regular_text(Path("/proc/self/status"))  # st_size 0, yet text
    assert status.startswith("Name:")
    with pytest.raises(InputError, match="more than the 10 bytes allowed"):
        read_regular(Path("/proc/self/status"), limit=10)
