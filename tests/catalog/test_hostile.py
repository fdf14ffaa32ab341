"""Hostile catalogs (issue 15): each reproducer is a finding naming the file, never a crash,
a hang or unbounded memory. ``catalog validate`` reports them like other parse findings;
``catalog render`` and ``serve`` stop at the first with one line."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from olmtool.catalog.load import (
    catalog_files,
    load_catalog,
    load_catalog_strict,
    parse_blobs,
)
from olmtool.catalog.rendering import _image_catalog
from olmtool.catalog.templates.documents import read_documents
from olmtool.errors import InputError
from tests.catalog.test_cli_validate import validate
from tests.test_cli import olmtool
from tests.test_yamlread import laughs

T = TypeVar("T")
PACKAGE = "schema: olm.package\nname: pkg\ndefaultChannel: stable\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def catalog(root: Path, files: dict[str, str]) -> Path:
    """A catalog ``cat/`` holding a package blob and ``files`` (relative to ``cat/pkg``)."""
    package = root / "cat" / "pkg"
    package.mkdir(parents=True)
    (package / "package.yaml").write_text(PACKAGE)
    for name, text in files.items():
        (package / name).write_text(text)
    return root / "cat"


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``, failing the test (not hanging it) when it takes longer."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    if errors:
        raise errors[0]
    return result[0]


def parse_findings(root: Path) -> list[tuple[str, str, int | None, str]]:
    """(severity, file, line, message) of the load findings, the package blob's aside."""
    result = within(30, lambda: load_catalog(root))
    assert [p.name for p in result.config.packages] == ["pkg"]
    return [(f.severity, f.file, f.line, f.message) for f in result.findings]


# --- YAML and JSON ----------------------------------------------------------------------------


def test_billion_laughs_is_a_finding_in_bounded_time_and_memory(here: Path) -> None:
    root = catalog(here, {"laughs.yaml": laughs() + "schema: olm.bundle\nname: b\n"})
    tracemalloc.start()
    started = time.perf_counter()
    try:
        findings = parse_findings(root)
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert findings == [
        (
            "error",
            "cat/pkg/laughs.yaml",
            1,
            "invalid YAML: document contains excessive aliasing",
        )
    ]
    assert seconds < 5 and peak < 50 * 1024 * 1024  # it was 2 GB and running


def test_100000_deep_yaml_does_not_crash_the_process(here: Path) -> None:
    """libyaml's composer recursed in C and segfaulted (exit 139): now exit 1, a finding."""
    catalog(here, {"deep.yaml": "v: " + "[" * 100_000 + "]" * 100_000 + "\n"})
    result = olmtool("catalog", "validate", "cat", cwd=here)
    assert result.returncode == 1, result.stderr
    assert "invalid YAML: nested deeper than 512 levels [parse] (cat/pkg/deep.yaml:1)" in (
        result.stdout
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("name", "text", "line", "message"),
    [
        ("recursive.yaml", "a: 1\nv: &a [*a]\n", 2, "invalid YAML: an anchor's value contains itself"),
        ("deep.yaml", "v:\n " + "[" * 800 + "]" * 800 + "\n", 2, "invalid YAML: nested deeper than 512 levels"),
        ("deep.json", '{"schema": "x",\n "v": ' + "[" * 1000 + "]" * 1000 + "}", 2, "invalid JSON: nested deeper than 512 levels"),
        ("deeper.json", '{"v": ' + "[" * 100_000 + "]" * 100_000 + "}", 1, "invalid JSON: nested deeper than 512 levels"),
        ("big.json", '{"schema": "x",\n"v": ' + "9" * 5000 + "}", 2, "invalid JSON: number 99999999999999999999... (5000 characters) is out of range (Go reads it as a float64)"),
        ("inf.json", '{"schema": "x", "v": 1e400}', 1, "invalid JSON: number 1e400 is out of range (Go reads it as a float64)"),
    ],
)  # fmt: skip
def test_nesting_aliases_and_numbers_are_findings(
    here: Path, name: str, text: str, line: int, message: str
) -> None:
    root = catalog(here, {name: text})
    assert parse_findings(root) == [("error", f"cat/pkg/{name}", line, message)]


def test_a_5000_digit_yaml_integer_is_data_as_in_go(here: Path) -> None:
    """yaml.v2 leaves a number out of every range as the text written (opm renders a
    string too); Python's int() limit raised ValueError before."""
    digits = "9" * 5000
    blob = (
        f"schema: olm.bundle\nname: b\npackage: pkg\nproperties:\n- type: big\n  value: {digits}\n"
    )
    result = load_catalog(catalog(here, {"bundle.yaml": blob}))
    assert result.findings == []
    assert result.config.bundles[0].properties[0].value == digits


def test_json_depth_limit_is_exact(here: Path) -> None:
    fits = '{"schema": "x", "v": ' + "[" * 511 + "]" * 511 + "}"
    blobs, problems = parse_blobs(fits, "fits.json")
    assert problems == [] and len(blobs) == 1
    blobs, problems = parse_blobs(fits.replace("[", "[[", 1).replace("]", "]]", 1), "f.json")
    assert [p.message for p in problems] == ["invalid JSON: nested deeper than 512 levels"]


# --- files that are not regular, or lead elsewhere ----------------------------------------------


def test_fifo_is_a_finding_and_does_not_block(here: Path) -> None:
    root = catalog(here, {})
    os.mkfifo(root / "pkg" / "fifo.yaml")
    assert parse_findings(root) == [
        ("error", "cat/pkg/fifo.yaml", None, "cannot read: a FIFO, not a regular file")
    ]


def test_symlink_to_dev_zero_is_a_finding(here: Path) -> None:
    root = catalog(here, {})
    (root / "pkg" / "zero.yaml").symlink_to("/dev/zero")
    ((severity, file, line, message),) = parse_findings(root)
    assert (severity, file, line) == ("error", "cat/pkg/zero.yaml", None)
    assert message.startswith("cannot read: a symlink to /dev/zero, outside ")
    # named directly, it is refused as a device (not read until memory runs out)
    (here / "zero.json").symlink_to("/dev/zero")
    assert [f.message for f in within(10, lambda: load_catalog("zero.json")).findings] == [
        "cannot read: a character device, not a regular file"
    ]


def test_symlink_outside_the_tree_is_not_read(here: Path) -> None:
    secret = here / "secret.yaml"
    secret.write_text("schema: olm.package\nname: stolen\n")
    root = catalog(here, {})
    (root / "pkg" / "shadow.yaml").symlink_to(secret)
    (root / "pkg" / "etc").symlink_to("/etc")
    findings = parse_findings(root)
    assert [(f[1], f[3].split(",")[0]) for f in findings] == [
        ("cat/pkg/etc", "cannot read: a symlink to /etc"),
        ("cat/pkg/shadow.yaml", f"cannot read: a symlink to {secret}"),
    ]
    assert all(f[3].endswith(f"outside {root.resolve()}") for f in findings)


def test_symlinks_inside_the_tree_are_read(here: Path) -> None:
    root = catalog(here, {})
    (here / "cat" / "shared").mkdir()
    (here / "cat" / "shared" / "bundle.yaml").write_text(
        "schema: olm.bundle\nname: b\npackage: pkg\n"
    )
    (root / "pkg" / "bundle.yaml").symlink_to("../shared/bundle.yaml")
    (root / "pkg" / "shared").symlink_to("../shared")  # a directory: not followed, as opm
    result = load_catalog(root)
    assert [(f.file, f.message) for f in result.findings] == [
        ("cat/pkg/shared", "cannot read: a directory, not a regular file")
    ]
    assert [b.origin.file for b in result.config.bundles] == [
        "cat/pkg/bundle.yaml",  # named as the link, not its target
        "cat/shared/bundle.yaml",
    ]


def test_symlink_loop_and_dangling_symlink_are_findings(here: Path) -> None:
    root = catalog(here, {})
    (root / "pkg" / "loop.yaml").symlink_to("loop.yaml")
    (root / "pkg" / "a.json").symlink_to("b.json")
    (root / "pkg" / "b.json").symlink_to("a.json")
    (root / "pkg" / "gone.yaml").symlink_to("nowhere.yaml")
    assert parse_findings(root) == [
        ("error", "cat/pkg/a.json", None, "cannot read: a symlink loop"),
        ("error", "cat/pkg/b.json", None, "cannot read: a symlink loop"),
        ("error", "cat/pkg/gone.yaml", None, "cannot read: a dangling symlink to nowhere.yaml"),
        ("error", "cat/pkg/loop.yaml", None, "cannot read: a symlink loop"),
    ]


# --- .indexignore --------------------------------------------------------------------------------


def test_indexignore_pattern_the_library_refuses_is_a_warning_with_its_line(here: Path) -> None:
    root = catalog(here, {".indexignore": "*.md\n!\nfoo\\\n", "README.md": "# not a blob\n"})
    assert parse_findings(root) == [
        ("warning", "cat/pkg/.indexignore", 2, "pattern '!' skipped: Invalid git pattern: '!'"),
        (
            "warning",
            "cat/pkg/.indexignore",
            3,
            "pattern 'foo\\\\' skipped: Invalid git pattern: 'foo\\\\'",
        ),
    ]  # and *.md still applies: README.md is not read


def test_unreadable_indexignore_is_an_error(here: Path) -> None:
    root = catalog(here, {})
    os.mkfifo(root / "pkg" / ".indexignore")
    assert parse_findings(root) == [
        ("error", "cat/pkg/.indexignore", None, "cannot read: a FIFO, not a regular file")
    ]
    with pytest.raises(InputError, match="a FIFO") as exc:
        catalog_files(root)  # serve and the catalog image walk with this: one line
    assert str(exc.value) == "cat/pkg/.indexignore: cannot read: a FIFO, not a regular file"


def test_unreadable_directory_is_a_finding(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = catalog(here, {})
    locked = root / "locked"
    locked.mkdir()
    scandir = os.scandir

    def refuse(path: str) -> object:  # what chmod 000 does, for a test that may run as root
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    assert parse_findings(root) == [
        ("error", "cat/locked", None, "cannot read directory: Permission denied")
    ]


# --- the commands ------------------------------------------------------------------------------


def hostile(root: Path) -> Path:
    cat = catalog(
        root,
        {
            "laughs.yaml": laughs(),
            "deep.json": '{"v": ' + "[" * 2000 + "]" * 2000 + "}",
            ".indexignore": "!\n",
        },
    )
    os.mkfifo(cat / "pkg" / "fifo.yaml")
    (cat / "pkg" / "loop.yaml").symlink_to("loop.yaml")
    return cat


def test_validate_reports_every_reproducer_like_other_parse_findings(here: Path) -> None:
    hostile(here)
    run = within(60, lambda: validate("cat"))
    assert run.returncode == 1 and run.exception is None
    lines = [line for line in run.stdout.splitlines() if "[parse]" in line]
    assert [line.split("[parse]")[1].strip() for line in lines] == [
        "(cat/pkg/.indexignore:1)",
        "(cat/pkg/deep.json:1)",
        "(cat/pkg/fifo.yaml)",
        "(cat/pkg/laughs.yaml:1)",
        "(cat/pkg/loop.yaml)",
    ]


def test_render_stops_at_the_first_with_one_line(here: Path) -> None:
    hostile(here)
    with pytest.raises(InputError) as exc:
        within(30, lambda: load_catalog_strict("cat"))
    assert str(exc.value) == "cat/pkg/deep.json:1: invalid JSON: nested deeper than 512 levels"
    result = olmtool("catalog", "render", "cat", cwd=here)
    assert result.returncode == 1
    assert result.stderr == (
        "error: cat/pkg/deep.json:1: invalid JSON: nested deeper than 512 levels\n"
    )


def test_catalog_image_configs_are_read_by_the_same_rule(here: Path) -> None:
    """An unpacked catalog image is someone else's tree: its symlinks stay inside."""
    configs = here / "image" / "configs"
    (configs / "pkg").mkdir(parents=True)
    (configs / "pkg" / "package.yaml").write_text(PACKAGE)
    (here / "secret.yaml").write_text(PACKAGE)
    config = _image_catalog("ref", here / "image", "/configs")
    assert [p.name for p in config.packages] == ["pkg"]
    (configs / "pkg" / "escape.yaml").symlink_to(here / "secret.yaml")
    with pytest.raises(InputError, match=r"^ref:/configs/pkg/escape\.yaml: cannot read: a symlink"):
        _image_catalog("ref", here / "image", "/configs")


def test_templates_and_project_file_are_read_by_the_same_rule(here: Path) -> None:
    from olmtool.config import load_project

    os.mkfifo(here / "template.yaml")
    with pytest.raises(InputError, match="a FIFO, not a regular file"):
        within(10, lambda: read_documents(here / "template.yaml"))
    (here / "laughs.yaml").write_text("schema: olm.template.basic\n" + laughs())
    with pytest.raises(InputError, match="excessive aliasing"):
        read_documents(here / "laughs.yaml")
    (here / "olmtool.yaml").write_text("crd: " + "{a: " * 600 + "1" + "}" * 600 + "\n")
    with pytest.raises(InputError, match="nested deeper than 512 levels"):
        load_project(here / "olmtool.yaml")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: os.mkfifo(p), "cannot read: a FIFO, not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "cannot read: a symlink to /dev/zero, outside"),
        (lambda p: p.symlink_to("nowhere"), "cannot read: a dangling symlink to nowhere"),
        (lambda p: p.symlink_to(p), "cannot read: a symlink loop"),
    ],
)
def test_the_catalog_server_stops_at_a_hostile_file_with_one_line(
    here: Path, make: Callable[[Path], None], message: str
) -> None:
    """``catalog serve`` indexes the files catalog_files lists, reading them itself:
    they are checked before (it blocked on a FIFO, read /dev/zero, crashed on a dangling
    link); what they hold is judged by the loader's rules."""
    from olmtool.serve.index.build import build_index

    root = catalog(here, {})
    make(root / "pkg" / "x.yaml")
    with pytest.raises(InputError) as exc:
        within(30, lambda: build_index(root))
    assert str(exc.value).startswith(f"cat/pkg/x.yaml: {message}")
    (root / "pkg" / "x.yaml").unlink()
    (root / "pkg" / "x.yaml").write_text(laughs())
    with pytest.raises(InputError, match="excessive aliasing"):
        within(30, lambda: build_index(root))


def test_base_csv_round_trip_reading_is_bounded_too() -> None:
    """yamlwrite (ruamel.yaml, for the base CSV rewritten with its comments) applies the
    same rule before ruamel recurses or its aliases are expanded."""
    from olmtool import yamlwrite

    with pytest.raises(InputError, match="excessive aliasing"):
        yamlwrite.loads(laughs(), path="base.yaml")
    with pytest.raises(InputError, match="nested deeper than 512 levels"):
        yamlwrite.loads_all("a: 1\n---\nb: " + "[" * 600 + "]" * 600, path="base.yaml")
    assert yamlwrite.loads("a: &x {b: 1}\nc: *x\n") == {"a": {"b": 1}, "c": {"b": 1}}
