"""A corpus of broken file-based catalogs, one defect each, proving every validation check.

Every directory under ``corpus/`` is a small catalog built from one valid base (package
``widget-operator``: bundles 1.0.0, 1.1.0 (carrying a CSV as olm.bundle.object) and 1.2.0
(every other property type), channel ``stable`` with replaces edges and a skipRange, a
deprecation) laid out as opm's YAML, opm's JSON, or spread over YAML and JSON files.
Each ``valid-*`` case is the base itself; every other case changes ONE thing.

``corpus/expected.yaml`` names, per case, the finding it must produce: check id, severity,
a fragment of the message, the file (relative to the case directory) and the line. The
case must report that finding and nothing else; the two cases whose defect necessarily
brings a second finding (package-no-channels, bundle-name-empty) list it under ``also``
with the reason, and a case whose ``xfail`` names a bug in olmtool is a strict xfail
until the bug is fixed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.actions import catalog_checks, catalog_validate
from olmtool.catalog.validate import CHECKS, validate_catalog
from olmtool.findings import Finding
from tests.catalog.test_cli_validate import validate

CORPUS = Path(__file__).parent / "corpus"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load(
    (CORPUS / "expected.yaml").read_text(encoding="utf-8")
)
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
DEFECTS = [name for name in CASES if "check" in EXPECTED.get(name, {})]
REPO_ROOT = Path(__file__).resolve().parents[2]

Key = tuple[str, str, str, int]


def expected_findings(name: str) -> list[dict[str, Any]]:
    entry = EXPECTED[name]
    if "check" not in entry:
        return []
    return [entry, *entry.get("also", {}).get("findings", [])]


def key(finding: Finding | dict[str, Any]) -> Key:
    if isinstance(finding, Finding):
        return (finding.check, finding.severity, finding.file or "", finding.line or 0)
    return (finding["check"], finding["severity"], finding["file"], finding["line"])


# --- the corpus itself --------------------------------------------------------------------


def test_expected_describes_every_case_directory() -> None:
    assert sorted(EXPECTED) == CASES


def test_corpus_size_and_formats() -> None:
    assert len(DEFECTS) >= 40
    assert len(CASES) - len(DEFECTS) >= 1  # the valid base
    suffixes: dict[str, set[str]] = {}
    for name in CASES:
        for path in (CORPUS / name).rglob("*"):
            if path.is_file():
                suffixes.setdefault(path.suffix, set()).add(name)
    assert len(suffixes[".yaml"]) >= 20
    assert len(suffixes[".json"]) >= 20


def test_every_check_is_proved_by_a_case() -> None:
    """Every check of the default run; the olm-v1 suite's (``--select olm-v1``) are
    proved one by one in tests/catalog/test_olm_v1.py."""
    proved = {EXPECTED[name]["check"] for name in DEFECTS if "xfail" not in EXPECTED[name]}
    default = {
        check
        for check in CHECKS
        if not check.startswith("olm-v1/")
        and (not check.startswith("crd-upgrade/") or check == "crd-upgrade/stored-versions")
    }
    assert default - proved == set()
    assert proved - default == set()


def test_expected_severity_is_the_checks() -> None:
    for name in DEFECTS:
        for finding in expected_findings(name):
            assert finding["severity"] == CHECKS[finding["check"]][0], (name, finding)


def test_inherent_companions_give_a_reason() -> None:
    for name in DEFECTS:
        also = EXPECTED[name].get("also")
        if also is not None:
            assert also["reason"] and also["findings"], name


# --- each case -----------------------------------------------------------------------------


def _case_params() -> list[Any]:
    """Every case; one whose ``xfail`` names a bug in olmtool is expected to fail (strict)."""
    return [
        pytest.param(
            name,
            marks=pytest.mark.xfail(reason=EXPECTED[name]["xfail"], strict=True)
            if "xfail" in EXPECTED.get(name, {})
            else (),
        )
        for name in CASES
    ]


@pytest.mark.parametrize("name", _case_params())
def test_case_reports_exactly_its_defect(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS / name)  # finding files are relative to the working directory
    report = validate_catalog(".")
    expected = expected_findings(name)
    assert sorted(key(f) for f in report.findings) == sorted(key(e) for e in expected), "\n".join(
        str(f) + f" [{f.check}]" for f in report.findings
    )
    by_key = {key(f): f for f in report.findings}
    for item in expected:
        finding = by_key[key(item)]
        assert item["message"] in finding.message
    assert report.passed() == all(e["severity"] == "warning" for e in expected)
    assert report.passed(strict=True) == (not expected)


def test_load_findings_have_no_package_and_checks_have_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(CORPUS / "channel-cycle")
    (cycle,) = validate_catalog(".").findings
    assert (cycle.package, cycle.scope) == ("widget-operator", 'channel "stable"')
    monkeypatch.chdir(CORPUS / "parse-json-missing-comma")
    (parse,) = validate_catalog(".").findings
    assert (parse.package, parse.scope) == (None, None)


def test_repository_catalog_is_valid_with_strict() -> None:
    report = catalog_validate(REPO_ROOT / "catalog")
    assert report.passed(strict=True), "\n".join(str(f) for f in report.findings)
    assert report.findings == []


# --- through the CLI: wiring only, in-process ------------------------------------------------


def test_cli_error_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS / "channel-cycle")
    result = validate(".")
    assert result.returncode == 1, result.exception
    lines = result.stdout.splitlines()
    assert lines[0] == "invalid index:"
    assert lines[1] == '└── invalid package "widget-operator":'
    assert lines[2] == '    └── invalid channel "stable":'
    assert lines[3].startswith("        └── detected cycle in replaces chain")
    assert lines[3].endswith("[channel-cycle] (widget-operator/channels.json:1)")
    assert lines[-1] == ".: invalid: 1 error(s), 0 warning(s)"


def test_cli_json_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS / "bundle-duplicate")
    result = validate(".", "-o", "json")
    assert result.returncode == 1, result.exception
    data = json.loads(result.stdout)
    assert set(data) == {"passed", "error", "findings", "waived", "unused_waivers"}
    assert data["passed"] is False
    assert data["error"]["message"].startswith("invalid index:\n")
    assert 'invalid bundle "widget-operator.v1.0.0":' in data["error"]["message"]
    (finding,) = data["findings"]
    assert finding == {
        "check": "bundle-duplicate",
        "severity": "error",
        "message": "duplicate bundle (first at widget-operator/bundles/v1.0.0.json:1)",
        "file": "widget-operator/bundles/v1.0.0.yaml",
        "line": 2,
        "package": "widget-operator",
        "scope": 'bundle "widget-operator.v1.0.0"',
        "origin": "upstream",
    }


def test_every_check_has_an_origin_and_extras_only_warn() -> None:
    """opm's checks keep opm's severity; olmtool's extras warn (opm serves such catalogs),
    but for the olm-v1 suite's and the CRD upgrade checks, errors where OLM refuses the
    bundle or the upgrade."""
    rows = {row.check: row for row in catalog_checks()}
    assert set(rows) == set(CHECKS)
    for check, row in rows.items():
        assert row.origin in ("upstream", "olmtool"), check
        if row.origin == "olmtool" and not check.startswith(("olm-v1/", "crd-upgrade/")):
            assert row.severity == "warning", check
        if row.severity == "error" and row.origin == "olmtool":
            assert (
                "OLM v1 refuses" in row.summary
                or "OLM v1 pulls" in row.summary
                or ("OLM v0 and v1 refuse" in row.summary)
            ), check


def test_cli_lists_checks() -> None:
    result = validate("--list-checks", "-o", "json")
    assert result.returncode == 0, result.stdout
    rows = {row["check"]: row for row in json.loads(result.stdout)["checks"]}
    assert rows["channel-head"]["origin"] == "upstream"
    assert rows["unreachable-head"] == {
        "check": "unreachable-head",
        "origin": "olmtool",
        "severity": "warning",
        "summary": "a bundle with no upgrade path to its channel head",
    }


def test_cli_warnings_fail_only_with_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS / "skips-unknown")
    lenient = validate(".")
    assert lenient.returncode == 0, lenient.stdout
    assert "warning: entry 'widget-operator.v1.2.0' skips" in lenient.stdout
    assert lenient.stdout.splitlines()[-1] == ".: valid: 0 error(s), 1 warning(s)"

    strict = validate(".", "--strict", "-o", "json")
    assert strict.returncode == 1
    data = json.loads(strict.stdout)
    assert data["passed"] is False
    assert "warning: " in data["error"]["message"]
    assert [f["check"] for f in data["findings"]] == ["skips-unknown"]


def test_cli_repository_catalog_with_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    result = validate("catalog/", "--strict")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "catalog: valid: 0 error(s), 0 warning(s)"
