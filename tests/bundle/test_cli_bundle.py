"""``bundle build`` and ``bundle validate``: behaviour through the actions in-process; the
CLI tests at the end check only the wiring (exit codes, output formats, one-line errors)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from olmtool.actions import bundle_build, bundle_validate
from olmtool.config import ProjectNotFound
from olmtool.errors import ArgumentError, InputError
from tests.catalog.test_cli_validate import cli
from tests.test_cli import olmtool

BUNDLE = "out/widget-operator/1.2.0"
CSV = "manifests/widget-operator.clusterserviceversion.yaml"


def _rename_product(project: Path) -> None:
    config = project / "olmtool.yaml"
    config.write_text(config.read_text().replace("Makes widgets.", "Makes gadgets."))


def _break_csv_line_31(project: Path) -> None:
    csv = project / BUNDLE / CSV
    lines = csv.read_text().splitlines()
    lines[30] = lines[30] + " ]"
    csv.write_text("\n".join(lines) + "\n")


# --- the actions ---------------------------------------------------------------------------


def test_build_then_check_then_drift(project: Path) -> None:
    config = project / "olmtool.yaml"
    built = bundle_build(config=config)
    assert not built.failed
    assert built.bundle.directory.resolve() == (project / BUNDLE).resolve()
    assert len(built.bundle.files) == 7 and len(built.difference.changed) == 7
    assert not bundle_build(config=config, check=True).failed
    _rename_product(project)
    stale = bundle_build(config=config, check=True)
    assert stale.failed
    data = stale.as_dict()
    assert data["stale"] and data["modified"] == [CSV]
    assert "Makes widgets." in (project / BUNDLE / CSV).read_text(), "check must not write"


def test_validate_verdicts_and_strict(project: Path) -> None:
    bundle_build(config=project / "olmtool.yaml")
    ok = bundle_validate(project / BUNDLE)
    assert ok.passed() and not ok.errors
    # the base CSV's hand-written spec.customField, which OLM's CRD drops
    assert [(f.check, f.path) for f in ok.warnings] == [("csv/schema", "spec.customField")]
    hub = bundle_validate(project / BUNDLE, select=["operatorhub"])
    report = hub.as_dict()
    assert report["passed"] and report["warnings"] == 2
    assert [f["check"] for f in report["findings"]] == ["operatorhub/icon-missing", "csv/schema"]
    every = bundle_validate(project / BUNDLE, select=["all"])
    assert every.passed() and not every.passed(strict=True)
    assert every.as_dict(strict=True)["passed"] is False
    assert "operatorhub/icon-missing" in [f.check for f in every.warnings]
    with pytest.raises(ArgumentError, match="is not a Kubernetes version") as version:
        bundle_validate(project / BUNDLE, k8s_version="one")
    assert version.value.argument == "k8s_version"


def test_validate_reports_a_csv_syntax_error_with_its_line(project: Path) -> None:
    bundle_build(config=project / "olmtool.yaml")
    _break_csv_line_31(project)
    report = bundle_validate(project / BUNDLE)
    assert not report.passed()
    parse_errors = [str(f) for f in report.errors if f.check == "loader/csv-parse"]
    assert len(parse_errors) == 1
    assert (
        "widget-operator.clusterserviceversion.yaml:31: cannot parse the ClusterServiceVersion"
        in parse_errors[0]
    )


def test_refusals(project: Path) -> None:
    (project / "extra" / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n"
    )
    with pytest.raises(
        InputError, match=re.escape("extra/job.yaml:2: kind Job cannot be shipped in a bundle")
    ):
        bundle_build(config=project / "olmtool.yaml")
    assert not (project / "out").exists()  # nothing half-written
    with pytest.raises(InputError, match="nothing-here: no such bundle directory"):
        bundle_validate(project / "nothing-here")
    with pytest.raises(InputError, match="unknown suite bogus"):
        bundle_validate(project / BUNDLE, select=["bogus"])


def test_no_project_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProjectNotFound, match=re.escape("no olmtool.yaml")):
        bundle_build()
    result = cli("bundle", "build")
    assert result.returncode == 1
    assert (result.error or "").endswith("; pass --config")


# --- the commands: wiring only -------------------------------------------------------------


@pytest.fixture
def here(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(project)
    return project


def test_build_command_exit_codes_and_output(here: Path) -> None:
    built = cli("bundle", "build")
    assert built.returncode == 0, built.exception
    assert f"bundle {BUNDLE}: 7 files, 7 changed" in built.stdout
    checked = cli("bundle", "build", "--check")
    assert checked.returncode == 0 and f"bundle {BUNDLE}: up to date" in checked.stdout
    _rename_product(here)
    stale = cli("bundle", "build", "--check", "-o", "json")
    assert stale.returncode == 1
    data = json.loads(stale.stdout)
    assert data["stale"] and data["modified"] == [CSV]
    text = cli("bundle", "build", "--check")
    assert text.returncode == 1
    assert "-  description: Makes widgets." in text.stdout
    assert "+  description: Makes gadgets." in text.stdout
    assert f"bundle {BUNDLE}: stale" in text.stdout
    assert cli("bundle", "build", "-o", "xml").returncode == 2


def test_validate_command_exit_codes_and_output(here: Path) -> None:
    cli("bundle", "build")
    ok = cli("bundle", "validate", BUNDLE)
    assert ok.returncode == 0 and "valid: 0 error(s), 1 warning(s)" in ok.stdout
    assert "warning [csv/schema]" in ok.stdout and "spec.customField: unknown field" in ok.stdout
    hub = cli("bundle", "validate", BUNDLE, "--select", "operatorhub", "-o", "json")
    assert hub.returncode == 0 and json.loads(hub.stdout)["passed"]
    strict = cli("bundle", "validate", BUNDLE, "--select", "all", "--strict")
    assert strict.returncode == 1
    assert "warning [operatorhub/icon-missing]" in strict.stdout
    _break_csv_line_31(here)
    broken = cli("bundle", "validate", BUNDLE)
    assert broken.returncode == 1
    assert "error [loader/csv-parse]" in broken.stdout
    assert (
        "widget-operator.clusterserviceversion.yaml:31: cannot parse the ClusterServiceVersion"
        in broken.stdout
    )
    assert cli("bundle", "validate").returncode == 2


def test_validate_shows_each_findings_origin(here: Path) -> None:
    cli("bundle", "build")
    dockerfile = here / BUNDLE / "bundle.Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("LABEL ", "LABEL x.", 1))
    result = cli("bundle", "validate", BUNDLE, "--select", "all", "-o", "json")
    assert result.returncode == 0, result.stdout  # olmtool's Dockerfile check only warns
    origins = {(f["check"], f["origin"]) for f in json.loads(result.stdout)["findings"]}
    assert ("format/dockerfile-labels", "olmtool") in origins
    assert ("operatorhub/icon-missing", "upstream") in origins


def test_validate_lists_checks(here: Path) -> None:
    text = cli("bundle", "validate", "--list-checks")
    assert text.returncode == 0
    assert any(
        line.split()[:3] == ["bundle/example-invalid", "olmtool", "warning"]
        for line in text.stdout.splitlines()
    ), text.stdout
    data = json.loads(cli("bundle", "validate", "--list-checks", "-o", "json").stdout)
    rows = {row["check"]: row for row in data["checks"]}
    assert rows["bundle/service-account"]["origin"] == "upstream"
    assert rows["csv/example-not-owned"]["severity"] == "error"
    assert rows["format/dockerfile-labels"] == {
        "check": "format/dockerfile-labels",
        "origin": "olmtool",
        "severity": "warning",
        "summary": rows["format/dockerfile-labels"]["summary"],
    }


def test_user_errors_name_flags(here: Path) -> None:
    no_image = cli("bundle", "build", "--push")
    assert no_image.returncode == 1 and "--push needs --image" in (no_image.error or "")
    missing = cli("bundle", "validate", "nothing-here")
    assert missing.returncode == 1
    assert "nothing-here: no such bundle directory" in (missing.error or "")
    bad_suite = cli("bundle", "validate", BUNDLE, "--select", "bogus")
    assert bad_suite.returncode == 1 and "unknown suite bogus" in (bad_suite.error or "")
    cli("bundle", "build")
    version = cli("bundle", "validate", BUNDLE, "--k8s-version", "one")
    assert version.returncode == 1
    assert (version.error or "").startswith("--k8s-version 'one' is not a Kubernetes version")


def test_user_errors_are_one_line_on_stderr(project: Path) -> None:
    (project / "extra" / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n"
    )
    result = olmtool("bundle", "build", cwd=project)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "extra/job.yaml:2: kind Job cannot be shipped in a bundle" in result.stderr
    assert not (project / "out").exists()  # nothing half-written
    no_image = olmtool("bundle", "build", "--push", cwd=project)
    assert no_image.returncode == 1 and "--push needs --image" in no_image.stderr
    assert no_image.stderr.count("\n") == 1 and "Traceback" not in no_image.stderr
