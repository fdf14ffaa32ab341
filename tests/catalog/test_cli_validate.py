"""``catalog validate``: verdicts and findings through the action in-process; the CLI tests
check only the wiring (the error tree as text, machine output, exit codes, bad arguments).

``cli`` runs a command in this process with typer's CliRunner (fast); the one test of how
a user error reaches the terminal goes through ``python -m olmtool`` like tests/test_cli.py,
since ``olmtool.cli.main`` renders those.
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

from olmtool.actions import catalog_validate
from olmtool.cli import app
from olmtool.cli.output import error_line, exit_code
from olmtool.errors import InputError, OlmtoolError
from tests.test_cli import olmtool

CORPUS = Path(__file__).parent / "corpus"
NO_WAIVERS = {"waived": [], "unused_waivers": []}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    exception: BaseException | None

    @property
    def error(self) -> str | None:
        """The line ``olmtool.cli.main`` prints after ``error:`` for a user error."""
        if isinstance(self.exception, OlmtoolError):
            return error_line(self.exception)
        return None


def cli(*args: str) -> Run:
    """``olmtool ARGS`` in this process (relative to the working directory)."""
    result = CliRunner().invoke(app, list(args))
    exception = None if isinstance(result.exception, SystemExit) else result.exception
    code = exit_code(exception) if isinstance(exception, OlmtoolError) else result.exit_code
    return Run(code, ANSI.sub("", result.stdout), result.stderr, exception)


def validate(*args: str) -> Run:
    return cli("catalog", "validate", *args)


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


def _write_tree_example(here: Path) -> None:
    (here / "widget").mkdir()
    (here / "widget" / "catalog.yaml").write_text(WIDGET)
    (here / "gadget").mkdir()
    (here / "gadget" / "catalog.json").write_text(GADGET)
    (here / "broken.json").write_text('{"schema": "olm.package",\n')


# --- the action ----------------------------------------------------------------------------


def test_findings_of_several_packages_and_levels(here: Path) -> None:
    _write_tree_example(here)
    report = catalog_validate(here)
    assert not report.passed()
    assert (len(report.errors), len(report.warnings)) == (4, 1)
    assert sorted(f.check for f in report.findings) == [
        "bundle-not-in-channel",
        "channel-entry-bundle",
        "icon",
        "package-missing",
        "parse",
    ]


def test_valid_catalog_passes_strict(here: Path) -> None:
    shutil.copytree(CORPUS / "valid-split", here / "valid")
    report = catalog_validate(Path("valid"))
    assert report.passed(strict=True)
    assert report.as_dict() == {"passed": True, "findings": [], **NO_WAIVERS}


def test_warnings_only_passes_without_strict(here: Path) -> None:
    shutil.copytree(CORPUS / "icon-mediatype", here / "icon")
    report = catalog_validate(Path("icon"))
    assert report.passed() and not report.passed(strict=True)
    data = report.as_dict()
    assert data["passed"] is True and "error" not in data
    assert [(f["check"], f["severity"]) for f in data["findings"]] == [("icon", "warning")]


def test_single_file_strict(here: Path) -> None:
    (here / "widget.yaml").write_text(WIDGET)
    data = catalog_validate(Path("widget.yaml")).as_dict(strict=True)
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
    with pytest.raises(InputError) as missing:
        catalog_validate("nowhere")
    assert str(missing.value) == "nowhere: no such catalog directory"
    with pytest.raises(InputError) as empty:
        catalog_validate(Path("empty"))
    assert str(empty.value) == "empty: holds no catalog blobs"


# --- the command: wiring only --------------------------------------------------------------


def test_error_tree_of_several_packages_and_levels(here: Path) -> None:
    _write_tree_example(here)
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


def test_exit_codes_and_machine_output(here: Path) -> None:
    shutil.copytree(CORPUS / "valid-split", here / "valid")
    machine = validate("valid", "-o", "yaml")
    assert machine.returncode == 0, machine.exception
    assert yaml.safe_load(machine.stdout) == {"passed": True, "findings": [], **NO_WAIVERS}
    text = validate("valid/", "--strict")
    assert text.returncode == 0
    assert text.stdout == "valid: valid: 0 error(s), 0 warning(s)\n"

    shutil.copytree(CORPUS / "icon-mediatype", here / "icon")
    warned = validate("icon", "-o", "json")
    assert warned.returncode == 0
    assert json.loads(warned.stdout)["passed"] is True
    strict = validate("icon", "--strict", "-o", "json")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["passed"] is False
    assert "icon: invalid: 0 error(s), 1 warning(s)" in validate("icon", "--strict").stdout


def test_warnings_alone_are_no_invalid_index(here: Path) -> None:
    """opm's "invalid index" header (and "invalid package") only where there are errors."""
    shutil.copytree(CORPUS / "icon-mediatype", here / "icon")
    lines = validate("icon").stdout.splitlines()
    assert lines[0] == "warnings:"
    assert lines[1] == '└── package "widget-operator":'
    assert lines[2].startswith("    └── warning: icon mediatype 'image/bmp'")
    assert lines[-1] == "icon: valid: 0 error(s), 1 warning(s)"
    strict = validate("icon", "--strict", "-o", "json")
    assert json.loads(strict.stdout)["error"]["message"].startswith("warnings:\n")


def test_user_error_exits_1(here: Path) -> None:
    result = validate("nowhere")
    assert result.returncode == 1
    assert result.error == "nowhere: no such catalog directory"


def test_input_error_is_one_line_on_stderr(tmp_path: Path) -> None:
    result = olmtool("catalog", "validate", "nowhere", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == "error: nowhere: no such catalog directory\n"


def test_usage_errors_exit_2(here: Path) -> None:
    assert validate(".", "-o", "xml").returncode == 2
    assert validate().returncode == 2


# --- many findings of one check ----------------------------------------------------------

GOLDEN = Path(__file__).parent / "golden"


def _write_repeated_findings(here: Path, packages: int, bundles: int) -> None:
    """``packages`` packages of ``bundles`` bundles, each channel entry skipping a bundle
    that does not exist: one skips-unknown warning per bundle; the first package also has
    an icon of an unknown media type (one more warning)."""
    for p in range(packages):
        package = f"p{p:02d}"
        docs: list[dict[str, object]] = [{"schema": "olm.package", "name": package}]
        if p == 0:
            docs[0]["icon"] = {"base64data": "PHN2Zy8+", "mediatype": "image/bmp"}
        entries = []
        for i in range(bundles):
            name = f"{package}.v1.{i}.0"
            entry: dict[str, object] = {"name": name, "skips": [f"{package}.v0.{i}.0"]}
            if i:
                entry["replaces"] = f"{package}.v1.{i - 1}.0"
            entries.append(entry)
            docs.append(
                {
                    "schema": "olm.bundle",
                    "name": name,
                    "package": package,
                    "image": f"quay.io/example/{package}-bundle:v1.{i}.0",
                    "properties": [
                        {
                            "type": "olm.package",
                            "value": {"packageName": package, "version": f"1.{i}.0"},
                        }
                    ],
                }
            )
        docs[0]["defaultChannel"] = "stable"
        docs.insert(
            1, {"schema": "olm.channel", "name": "stable", "package": package, "entries": entries}
        )
        (here / package).mkdir()
        text = "\n".join(json.dumps(d, indent=4) for d in docs) + "\n"
        (here / package / "catalog.json").write_text(text)


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if not path.exists():  # the first run writes it: review it, then commit it
        path.write_text(text)
    assert text == path.read_text()


def test_a_check_found_many_times_is_summarized_with_a_count_and_examples(here: Path) -> None:
    _write_repeated_findings(here, packages=3, bundles=6)
    grouped = validate(".")
    assert grouped.returncode == 0
    _golden("validate-repeated.txt", grouped.stdout)
    assert "18 findings in 3 package(s)" in grouped.stdout
    assert grouped.stdout.count("skips-unknown") == 1  # the icon warning stays in the tree
    every = validate(".", "--verbose")
    _golden("validate-repeated-verbose.txt", every.stdout)
    assert every.stdout.count("[skips-unknown]") == 18


def test_json_output_lists_every_repeated_finding(here: Path) -> None:
    _write_repeated_findings(here, packages=3, bundles=6)
    machine = validate(".", "-o", "json").stdout
    _golden("validate-repeated.json", machine)
    checks = [f["check"] for f in json.loads(machine)["findings"]]
    assert checks.count("skips-unknown") == 18 and checks.count("icon") == 1
