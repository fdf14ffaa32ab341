"""Waivers (``--ignore CHECK[:FILE][=REASON]``, ``validate.ignore`` in olmtool.yaml): parsing,
matching, applying to a report, and the project file's section with its lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.bundle.validate import Report
from olmtool.config import load_project
from olmtool.errors import ArgumentError, InputError
from olmtool.findings import Finding
from olmtool.waivers import Waiver, apply_waivers, parse_waivers, split_waiver, waive

KNOWN = {"good-practices/channel-name", "csv/no-examples", "internal/check-crashed", "icon"}
ANNOTATIONS = "bundle/x/1.0.0/metadata/annotations.yaml"


def _finding(check: str, file: str | None = ANNOTATIONS, severity: str = "warning") -> Finding:
    return Finding(check, severity, f"{check} found", file, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("csv/no-examples", ("csv/no-examples", "", "")),
        ("csv/no-examples=docs have them", ("csv/no-examples", "", "docs have them")),
        (" icon : widget/* = a = sign ", ("icon", "widget/*", "a = sign")),
        ("icon:quay.io/x:1:/manifests/*.yaml", ("icon", "quay.io/x:1:/manifests/*.yaml", "")),
    ],
)
def test_split_waiver(text: str, parts: tuple[str, str, str]) -> None:
    assert split_waiver(text) == parts


def test_parse_waivers_from_the_command_line() -> None:
    (waiver,) = parse_waivers(["good-practices/channel-name:annotations.yaml=preview"], known=KNOWN)
    assert waiver == Waiver("good-practices/channel-name", "preview", "annotations.yaml")
    assert (
        waiver.source == "--ignore"
        and waiver.label == "good-practices/channel-name:annotations.yaml"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("good-practice/channel-name", "unknown check 'good-practice/channel-name'; did you mean good-practices/channel-name?"),
        ("nothing-like-it", "unknown check 'nothing-like-it' (--list-checks lists them)"),
        ("internal/check-crashed", "internal/check-crashed cannot be waived: it reports a bug in olmtool"),
        ("=why", "'=why': no check named (CHECK[:FILE][=REASON])"),
    ],
)  # fmt: skip
def test_unknown_or_unwaivable_checks_are_argument_errors(text: str, message: str) -> None:
    with pytest.raises(ArgumentError) as refused:
        parse_waivers([text], known=KNOWN)
    assert refused.value.argument == "ignore"
    assert refused.value.message.startswith(message)


def test_a_file_glob_matches_the_end_of_the_path() -> None:
    scoped = Waiver("icon", file="metadata/*.yaml")
    assert scoped.matches(_finding("icon"))
    assert Waiver("icon", file="annotations.yaml").matches(_finding("icon"))
    assert Waiver("icon", file="/annotations.yaml").matches(_finding("icon"))
    assert not Waiver("icon", file="manifests/*.yaml").matches(_finding("icon"))
    assert not scoped.matches(_finding("icon", file=None))  # no file: only unscoped waivers
    assert Waiver("icon").matches(_finding("icon", file=None))
    assert not Waiver("icon").matches(_finding("csv/no-examples"))
    image = _finding("icon", file="quay.io/x/bundle:1:/metadata/annotations.yaml")
    assert scoped.matches(image)


def test_apply_waivers_splits_findings_and_reports_unused_ones() -> None:
    findings = [_finding("icon"), _finding("csv/no-examples"), _finding("icon", "other.yaml")]
    first = Waiver("icon", "reason one", "annotations.yaml")
    second = Waiver("icon", "reason two")
    unused = Waiver("good-practices/channel-name", "never found")
    foreign = Waiver("gvk", "a catalog check: not this validator's")
    outcome = apply_waivers(findings, [first, second, unused, foreign], checks=KNOWN)
    assert outcome.kept == [findings[1]]
    assert [(w.finding, w.waiver) for w in outcome.waived] == [
        (findings[0], first),  # the first waiver that matches claims a finding
        (findings[2], second),
    ]
    assert outcome.unused == [unused]


def test_waive_keeps_waived_findings_out_of_the_verdict() -> None:
    report = Report(findings=[_finding("icon", severity="error"), _finding("csv/no-examples")])
    assert not report.passed()
    waive(
        report,
        [Waiver("icon", "accepted"), Waiver("csv/no-examples", "", "", "olmtool.yaml:7")],
        checks=KNOWN,
    )
    assert report.passed(strict=True) and report.findings == []
    data = report.as_dict(strict=True)
    assert data["passed"] is True and data["errors"] == 0 and data["warnings"] == 0
    assert [(w["check"], w["severity"], w["reason"], w["waiver"]) for w in data["waived"]] == [
        ("icon", "error", "accepted", "--ignore"),
        ("csv/no-examples", "warning", "", "olmtool.yaml:7"),
    ]
    assert data["waived"][0]["line"] == 3 and "origin" in data["waived"][0]
    assert data["unused_waivers"] == []


# --- olmtool.yaml -------------------------------------------------------------------------

CONFIG = """\
# a project that waives two findings
validate:
  ignore:
    - check: good-practices/channel-name
      reason: alpha is our preview channel
    - "csv/no-examples:manifests/*.yaml=examples live in the docs"
    - check: unreachable-head
      file: legacy/*
      reason: 0.x cannot upgrade, documented
"""


def test_validate_ignore_in_the_project_file(tmp_path: Path) -> None:
    (tmp_path / "olmtool.yaml").write_text(CONFIG)
    project = load_project(tmp_path / "olmtool.yaml")
    where = str(tmp_path / "olmtool.yaml")
    assert project.waivers == [
        Waiver("good-practices/channel-name", "alpha is our preview channel", "", f"{where}:4"),
        Waiver("csv/no-examples", "examples live in the docs", "manifests/*.yaml", f"{where}:6"),
        Waiver("unreachable-head", "0.x cannot upgrade, documented", "legacy/*", f"{where}:7"),
    ]


@pytest.mark.parametrize(
    ("entry", "line", "message"),
    [
        ("- check: good-practice/channel-name\n      reason: x", 3, "validate.ignore[0].check: unknown check 'good-practice/channel-name'; did you mean good-practices/channel-name?"),
        ("- check: csv/no-examples", 3, "validate.ignore[0].reason: required key is missing"),
        ('- "csv/no-examples"', 3, "validate.ignore[0].reason: a waiver in olmtool.yaml needs a reason"),
        ("- check: icon\n      reason: '  '", 4, "validate.ignore[0].reason: a waiver in olmtool.yaml needs a reason"),
        ("- check: internal/check-crashed\n      reason: x", 3, "validate.ignore[0].check: internal/check-crashed cannot be waived"),
        ("- check: icon\n      reason: x\n      why: y", 5, "validate.ignore[0].why: unknown key"),
    ],
)  # fmt: skip
def test_bad_waivers_in_the_project_file_name_file_and_line(
    tmp_path: Path, entry: str, line: int, message: str
) -> None:
    (tmp_path / "olmtool.yaml").write_text(f"validate:\n  ignore:\n    {entry}\n")
    with pytest.raises(InputError) as refused:
        load_project(tmp_path / "olmtool.yaml")
    assert str(refused.value).startswith(f"{tmp_path / 'olmtool.yaml'}:{line}: {message}")
