"""Running the bundle checks and collecting their findings into a report."""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool.bundle.checks import (
    DEFAULT_SUITES,
    OPTIONAL_SUITES,
    SUITES,
    TARGET_SUITES,
    Check,
    Context,
)
from olmtool.bundle.checks.crdupgrade import check_crd_upgrade
from olmtool.bundle.checks.table import origin_of
from olmtool.bundle.model import Bundle
from olmtool.errors import ArgumentError, InputError
from olmtool.findings import Finding, Findings
from olmtool.versions import parse_version

ALL = "all"
CHECK_CRASHED = "internal/check-crashed"
ISSUES_URL = "https://github.com/olmtool/olmtool/issues"


@dataclass
class Report(Findings):
    """Findings of one validation run, ordered by file, line and check."""

    bundle: str = ""
    suites: tuple[str, ...] = ()

    def as_dict(self, *, strict: bool = False) -> dict[str, object]:
        return {
            "bundle": self.bundle,
            "suites": list(self.suites),
            "passed": self.passed(strict=strict),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            # origin: "upstream" (operator-framework/api, opm) or "olmtool" (beyond them)
            "findings": [
                {**f.as_dict(), "path": f.path, "origin": origin_of(f.check)} for f in self.findings
            ],
            **self.waiver_dicts(origin_of),
        }


def select_suites(selected: Iterable[str] = ()) -> tuple[str, ...]:
    """Default suites plus the selected ones (comma lists allowed; ``all`` for every
    optional suite; target suites such as ``olm-v1`` only by name)."""
    names = [n.strip() for item in selected for n in item.split(",") if n.strip()]
    unknown = sorted(set(names) - set(SUITES) - {ALL})
    if unknown:
        raise InputError(
            f"unknown suite {', '.join(unknown)} (suites: {', '.join([*SUITES, ALL])})"
        )
    optional = OPTIONAL_SUITES if ALL in names else [s for s in OPTIONAL_SUITES if s in names]
    return (*DEFAULT_SUITES, *optional, *(s for s in TARGET_SUITES if s in names))


def parse_k8s_version(text: str | None):
    """``1.25`` or ``v1.25.3`` as a semantic version (missing parts are 0)."""
    if not text:
        return None
    parts = text.removeprefix("v").split(".")
    try:
        return parse_version(".".join(([*parts, "0", "0"])[:3]))
    except ValueError:
        raise ArgumentError(
            f"{text!r} is not a Kubernetes version like 1.25", argument="k8s_version"
        ) from None


def validate_bundle(
    bundle: Bundle,
    *,
    suites: Sequence[str] = DEFAULT_SUITES,
    k8s_version: str | None = None,
    previous: Bundle | None = None,
) -> Report:
    """Run every check of ``suites`` over ``bundle``; with ``previous`` (the release it
    upgrades from) its CRDs are checked against that release's too."""
    context = Context(k8s_version=parse_k8s_version(k8s_version))
    report = Report(bundle=bundle.label or bundle.display("").rstrip("/"), suites=tuple(suites))
    for suite in suites:
        for check in SUITES[suite]:
            report.findings.extend(run_check(check, bundle, context))
    if previous is not None:
        olm_v1 = "olm-v1" in suites
        report.findings.extend(check_crd_upgrade(bundle, previous, olm_v1=olm_v1))
    report.findings.sort(key=_order)
    return report


def run_check(check: Check, bundle: Bundle, context: Context) -> list[Finding]:
    """The findings of one check. A check that raises is a bug in olmtool: its findings so
    far are kept, and an ``internal/check-crashed`` error names it and where to report
    it, so one broken check never costs the rest of the report (nor passes the bundle)."""
    found: list[Finding] = []
    try:
        for finding in check(bundle, context):
            found.append(finding)
    except Exception as exc:  # the last-resort guard: reported as an error finding
        found.append(
            Finding(
                CHECK_CRASHED,
                "error",
                f"the check {check.__module__}.{check.__qualname__} crashed "
                f"({_where(exc)}{type(exc).__name__}: {exc}); this is a bug in olmtool, "
                f"please report it at {ISSUES_URL} with the bundle that causes it",
                bundle.label or bundle.display("").rstrip("/"),
            )
        )
    return found


def _where(exc: BaseException) -> str:
    """``olmtool/bundle/checks/csv.py:123: ``: the innermost frame in olmtool's code (else
    the innermost frame's file name), for the bug report."""
    frames = traceback.extract_tb(exc.__traceback__)[1:]  # from the check down
    if not frames:
        return ""
    ours = [f for f in frames if Path(f.filename).is_relative_to(_PACKAGE)]
    frame = ours[-1] if ours else frames[-1]
    path = Path(frame.filename)
    shown = path.relative_to(_PACKAGE.parent) if ours else Path(path.name)
    return f"{shown.as_posix()}:{frame.lineno}: "


_PACKAGE = Path(__file__).resolve().parents[1]  # the olmtool package


def _order(finding: Finding) -> tuple:
    return (finding.file or "", finding.line or 0, finding.check, finding.message)
