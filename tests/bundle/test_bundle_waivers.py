"""Waivers on ``bundle validate`` (issue 16): a legal ``alpha`` channel fails
``--strict --select all`` (good-practices warns) until a waiver with its reason accepts it,
on the command line or in olmtool.yaml. Wiring through the CLI in-process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from olmtool.actions import bundle_build, bundle_validate
from olmtool.errors import InputError
from tests.catalog.test_cli_validate import cli

SOURCE = Path(__file__).resolve().parents[2] / "bundle" / "etcd-operator" / "0.3.0"
CHANNEL = "good-practices/channel-name"
PROJECT = """\
validate:
  ignore:
    - check: good-practices/channel-name
      file: metadata/annotations.yaml
      reason: alpha is our preview channel
    - "csv/no-examples=examples live in the docs"
"""


@pytest.fixture
def alpha(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The etcd bundle published to an ``alpha`` channel, in the working directory."""
    root = tmp_path / "bundle"
    shutil.copytree(SOURCE, root)
    for name in ("metadata/annotations.yaml", "bundle.Dockerfile"):
        path = root / name
        path.write_text(path.read_text().replace("stable", "alpha"))
    monkeypatch.chdir(tmp_path)
    return root


def strict(*args: str):
    return cli("bundle", "validate", "bundle", "--strict", "--select", "all", *args)


def test_a_legal_alpha_channel_fails_strict_without_a_waiver(alpha: Path) -> None:
    result = strict()
    assert result.returncode == 1
    assert f"warning [{CHANNEL}] bundle/metadata/annotations.yaml:3:" in result.stdout


def test_a_command_line_waiver_passes_and_lists_the_finding(alpha: Path) -> None:
    result = strict("--ignore", f"{CHANNEL}=alpha is our preview channel")
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"waived [{CHANNEL}] bundle/metadata/annotations.yaml:3: ")
    assert lines[0].endswith("(alpha is our preview channel; --ignore)")
    assert lines[-1].startswith("bundle: valid: 0 error(s), 0 warning(s), 1 waived (")


def test_a_waiver_for_other_files_accepts_nothing(alpha: Path) -> None:
    result = strict("--ignore", f"{CHANNEL}:manifests/*=not here")
    assert result.returncode == 1
    assert f"note: waiver {CHANNEL}:manifests/* (--ignore) matched no finding" in result.stdout


def test_project_waivers_apply_from_the_file_found_upward(alpha: Path) -> None:
    (alpha.parent / "olmtool.yaml").write_text(PROJECT)
    result = strict("-o", "json")
    assert result.returncode == 0, result.stdout
    data = json.loads(result.stdout)
    assert data["passed"] is True and data["findings"] == [] and data["warnings"] == 0
    (waived,) = data["waived"]
    assert waived == {
        "check": CHANNEL,
        "severity": "warning",
        "message": "channel 'alpha' does not follow the candidate/stable/fast naming convention",
        "file": "bundle/metadata/annotations.yaml",
        "line": 3,
        "path": "annotations[operators.operatorframework.io.bundle.channels.v1]",
        "origin": "upstream",
        "reason": "alpha is our preview channel",
        "waiver": "olmtool.yaml:3",
    }
    assert data["unused_waivers"] == [
        {
            "check": "csv/no-examples",
            "file": None,
            "reason": "examples live in the docs",
            "source": "olmtool.yaml:6",
        }
    ]
    text = strict()
    assert "note: waiver csv/no-examples (olmtool.yaml:6) matched no finding" in text.stdout


def test_config_names_the_project_file(alpha: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "conf" / "project.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(PROJECT)
    assert strict().returncode == 1  # no olmtool.yaml upward: no waivers
    assert strict("--config", str(elsewhere)).returncode == 0
    report = bundle_validate(alpha, select=["all"], config=elsewhere)
    assert [w.finding.check for w in report.waived] == [CHANNEL]


def test_waived_errors_do_not_fail_and_crashes_cannot_be_waived(alpha: Path) -> None:
    csv = alpha / "manifests/etcd-operator.clusterserviceversion.yaml"
    csv.write_text(csv.read_text().replace("name: etcd-operator.v0.3.0", "name: Etcd_Operator"))
    assert cli("bundle", "validate", "bundle").returncode == 1
    waived = cli("bundle", "validate", "bundle", "--ignore", "csv/name=renamed later")
    assert waived.returncode == 0, waived.stdout
    crashed = cli("bundle", "validate", "bundle", "--ignore", "internal/check-crashed")
    assert crashed.returncode == 2
    assert "cannot be waived" in " ".join(crashed.stderr.replace("│", " ").split())


def test_a_bad_project_waiver_is_one_line_naming_file_and_line(alpha: Path) -> None:
    (alpha.parent / "olmtool.yaml").write_text(
        "validate:\n  ignore:\n    - check: good-practice/channel-name\n      reason: x\n"
    )
    result = strict()
    assert result.returncode == 1
    assert result.error == (
        "olmtool.yaml:3: validate.ignore[0].check: unknown check "
        "'good-practice/channel-name'; did you mean good-practices/channel-name?"
    )


# --- bundle build: its refusals under a check id honour validate.ignore --------------------


def test_bundle_build_honours_project_waivers(project: Path) -> None:
    sample = project / "samples" / "widget.yaml"
    sample.write_text(sample.read_text().replace("replicas: 2", "replicas: two"))
    config = project / "olmtool.yaml"
    with pytest.raises(InputError, match=r"example Widget example: spec\.replicas"):
        bundle_build(config=config)
    config.write_text(
        config.read_text() + "validate:\n  ignore:\n"
        "    - check: bundle/example-invalid\n      file: samples/widget.yaml\n"
        "      reason: shows a validation error on purpose\n"
    )
    built = bundle_build(config=config)
    (waived,) = built.as_dict()["waived"]
    assert waived["check"] == "bundle/example-invalid" and waived["severity"] == "error"
    assert waived["file"].endswith("samples/widget.yaml") and waived["line"] == 1
    assert waived["reason"] == "shows a validation error on purpose"
    csv = built.bundle.directory / "manifests/widget-operator.clusterserviceversion.yaml"
    assert '"replicas": "two"' in csv.read_text()  # in alm-examples
    # In the bundle the example lives in the CSV: the waiver scoped to the sample file
    # does not match there, and validate warns about it.
    report = bundle_validate(built.bundle.directory, config=config)
    assert "bundle/example-invalid" in [f.check for f in report.findings]
    assert [w.label for w in report.unused_waivers] == [
        "bundle/example-invalid:samples/widget.yaml"
    ]
