"""``olmtool catalog validate``: the error tree, machine output, exit codes, bad arguments.

Run in-process with typer's CliRunner (fast); the one test of how a user error reaches
the terminal goes through ``python -m olmtool`` like tests/test_cli.py.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from olmtool.cli import app
from olmtool.errors import InputError
from tests.test_cli import olmtool

CORPUS = Path(__file__).parent / "corpus"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Run:
    returncode: int
    stdout: str
    exception: BaseException | None


def validate(*args: str) -> Run:
    """``olmtool catalog validate ARGS`` in this process (relative to the working directory)."""
    result = CliRunner().invoke(app, ["catalog", "validate", *args])
    exception = None if isinstance(result.exception, SystemExit) else result.exception
    return Run(result.exit_code, ANSI.sub("", result.stdout), exception)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


WIDGET = """\
---
schema: olm.package
name: widget
defaultChannel: stable
icon:
  base64data: PHN2Zy8+
  mediatype: image/bmp
---
schema: olm.channel
name: stable
package: widget
entries:
  - name: widget.v1.0.0
---
schema: olm.channel
name: fast
package: widget
entries:
  - name: widget.v1.0.0
  - name: widget.v2.0.0
    replaces: widget.v1.0.0
---
schema: olm.bundle
name: widget.v1.0.0
package: widget
image: quay.io/example/widget-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: widget, version: 1.0.0}
---
schema: olm.bundle
name: widget.v1.1.0
package: widget
image: quay.io/example/widget-bundle:v1.1.0
properties:
  - type: olm.package
    value: {packageName: widget, version: 1.1.0}
"""

GADGET = """\
{"schema": "olm.bundle", "name": "gadget.v1.0.0", "package": "gadget",
 "image": "quay.io/example/gadget-bundle:v1.0.0",
 "properties": [{"type": "olm.package", "value": {"packageName": "gadget", "version": "1.0.0"}}]}
"""


def test_error_tree_of_several_packages_and_levels(here: Path) -> None:
    (here / "widget").mkdir()
    (here / "widget" / "catalog.yaml").write_text(WIDGET)
    (here / "gadget").mkdir()
    (here / "gadget" / "catalog.json").write_text(GADGET)
    (here / "broken.json").write_text('{"schema": "olm.package",\n')

    result = validate(".")
    assert result.returncode == 1, result.exception
    assert result.stdout.splitlines() == [
        "invalid index:",
        "├── invalid JSON: Expecting property name enclosed in double quotes (column 1)"
        " [parse] (broken.json:2)",
        '├── invalid package "gadget":',
        '│   └── invalid bundle "gadget.v1.0.0":',
        "│       └── unknown package 'gadget' [package-missing] (gadget/catalog.json:1)",
        '└── invalid package "widget":',
        "    ├── warning: icon mediatype 'image/bmp' is not one of image/png, image/jpeg,"
        " image/gif, image/svg+xml [icon] (widget/catalog.yaml:2)",
        '    ├── invalid bundle "widget.v1.1.0":',
        "    │   └── bundle is not in any channel [bundle-not-in-channel] (widget/catalog.yaml:31)",
        '    └── invalid channel "fast":',
        "        └── entry 'widget.v2.0.0' names no bundle of the package"
        " [channel-entry-bundle] (widget/catalog.yaml:15)",
        ".: invalid: 4 error(s), 1 warning(s)",
    ]


def test_valid_catalog_as_yaml_and_as_text(here: Path) -> None:
    shutil.copytree(CORPUS / "valid-split", here / "valid")
    machine = validate("valid", "-o", "yaml")
    assert machine.returncode == 0, machine.exception
    assert yaml.safe_load(machine.stdout) == {"passed": True, "findings": []}
    text = validate("valid/", "--strict")
    assert text.returncode == 0
    assert text.stdout == "valid: valid: 0 error(s), 0 warning(s)\n"


def test_warnings_only_json_passes_without_strict(here: Path) -> None:
    shutil.copytree(CORPUS / "icon-mediatype", here / "icon")
    result = validate("icon", "-o", "json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["passed"] is True and "error" not in data
    assert [(f["check"], f["severity"]) for f in data["findings"]] == [("icon", "warning")]


def test_single_file_and_strict_json(here: Path) -> None:
    (here / "widget.yaml").write_text(WIDGET)
    result = validate("widget.yaml", "--strict", "-o", "json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["passed"] is False
    assert [(f["check"], f["file"], f["line"]) for f in data["findings"]] == [
        ("icon", "widget.yaml", 2),
        ("bundle-not-in-channel", "widget.yaml", 31),
        ("channel-entry-bundle", "widget.yaml", 15),
    ]
    assert data["error"]["message"].splitlines()[0] == "invalid index:"


def test_missing_or_empty_directory_is_an_input_error(here: Path) -> None:
    (here / "empty").mkdir()
    (here / "empty" / "notes.yaml").write_text("# nothing here\n")
    missing = validate("nowhere")
    assert isinstance(missing.exception, InputError)
    assert str(missing.exception) == "nowhere: no such catalog directory"
    empty = validate("empty")
    assert isinstance(empty.exception, InputError)
    assert str(empty.exception) == "empty: holds no catalog blobs"


def test_input_error_is_one_line_on_stderr(tmp_path: Path) -> None:
    result = olmtool("catalog", "validate", "nowhere", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == "error: nowhere: no such catalog directory\n"


def test_usage_errors_exit_2(here: Path) -> None:
    assert validate(".", "-o", "xml").returncode == 2
    assert validate().returncode == 2
