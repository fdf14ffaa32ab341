"""``olmtool bundle build`` and ``olmtool bundle validate`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import olmtool

BUNDLE = "out/widget-operator/1.2.0"


def test_build_then_check_then_drift(project: Path) -> None:
    built = olmtool("bundle", "build", cwd=project)
    assert built.returncode == 0, built.stderr
    assert f"bundle {BUNDLE}: 7 files, 7 changed" in built.stdout
    assert olmtool("bundle", "build", "--check", cwd=project).returncode == 0
    (project / "olmtool.yaml").write_text(
        (project / "olmtool.yaml").read_text().replace("Makes widgets.", "Makes gadgets.")
    )
    stale = olmtool("bundle", "build", "--check", "-o", "json", cwd=project)
    assert stale.returncode == 1
    data = json.loads(stale.stdout)
    assert data["stale"] and data["modified"] == [
        "manifests/widget-operator.clusterserviceversion.yaml"
    ]


def test_validate_json_and_strict(project: Path) -> None:
    olmtool("bundle", "build", cwd=project)
    ok = olmtool("bundle", "validate", BUNDLE, cwd=project)
    assert ok.returncode == 0 and "valid: 0 error(s), 0 warning(s)" in ok.stdout
    hub = olmtool(
        "bundle", "validate", BUNDLE, "--select", "operatorhub", "-o", "json", cwd=project
    )
    report = json.loads(hub.stdout)
    assert hub.returncode == 0 and report["passed"] and report["warnings"] == 1
    assert report["findings"][0]["check"] == "operatorhub/icon-missing"
    strict = olmtool("bundle", "validate", BUNDLE, "--select", "all", "--strict", cwd=project)
    assert strict.returncode == 1
    assert "warning [operatorhub/icon-missing]" in strict.stdout


def test_validate_reports_a_csv_syntax_error_with_its_line(project: Path) -> None:
    olmtool("bundle", "build", cwd=project)
    csv = project / BUNDLE / "manifests" / "widget-operator.clusterserviceversion.yaml"
    lines = csv.read_text().splitlines()
    lines[30] = lines[30] + " ]"
    csv.write_text("\n".join(lines) + "\n")
    result = olmtool("bundle", "validate", BUNDLE, cwd=project)
    assert result.returncode == 1
    assert "error [loader/csv-parse]" in result.stdout
    assert (
        "widget-operator.clusterserviceversion.yaml:31: cannot parse the ClusterServiceVersion"
        in result.stdout
    )


def test_user_errors_are_one_line(project: Path) -> None:
    extra = project / "extra" / "job.yaml"
    extra.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n")
    result = olmtool("bundle", "build", cwd=project)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "extra/job.yaml:2: kind Job cannot be shipped in a bundle" in result.stderr
    assert not (project / "out").exists()  # nothing half-written
    missing = olmtool("bundle", "validate", "nothing-here", cwd=project)
    assert missing.returncode == 1 and "nothing-here: no such bundle directory" in missing.stderr
    bad_suite = olmtool("bundle", "validate", BUNDLE, "--select", "bogus", cwd=project)
    assert bad_suite.returncode == 1 and "unknown suite bogus" in bad_suite.stderr
    no_image = olmtool("bundle", "build", "--push", cwd=project)
    assert no_image.returncode == 1 and "--push needs --image" in no_image.stderr
