"""The result of ``olmtool test upgrade``'s dynamic mode: one :class:`UpgradeRun` per start
version, next to the static plan's expectation, as a dict (``-o json``) and as JUnit XML
(one ``testcase`` per start version; per-hop timing in its ``properties`` and
``system-out``; the run's failure as the ``failure`` message).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from olmtool.olm.resolver import UpgradePlan
from olmtool.olm.upgrade_run import UpgradeRun

SUITE = "olmtool test upgrade"


@dataclass
class UpgradeReport:
    """Every dynamic run of one package's channel, with the static plan it checks."""

    plan: UpgradePlan
    catalog: str
    runs: list[UpgradeRun] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def package(self) -> str:
        return self.plan.package

    @property
    def channel(self) -> str:
        return self.plan.channel

    @property
    def head(self) -> str:
        return self.plan.head

    @property
    def passed(self) -> bool:
        return bool(self.runs) and all(r.passed for r in self.runs)

    @property
    def failures(self) -> list[UpgradeRun]:
        return [r for r in self.runs if not r.passed]

    def expected_hops(self, start: str) -> list[str]:
        """The hops the static plan predicts from ``start`` ([] when it has none)."""
        path = next((p for p in self.plan.paths if p.bundle == start), None)
        return list(path.hops) if path else []

    def version_of(self, csv: str) -> str:
        """The short name the summary table shows for a CSV: its version as the channel
        has it, else the name without ``<package>.v``, else the whole name."""
        path = next((p for p in self.plan.paths if p.bundle == csv), None)
        if path is not None and path.version:
            return path.version
        prefix = f"{self.package}.v"
        return csv[len(prefix) :] if csv.startswith(prefix) and csv != prefix else csv

    def matches_plan(self, run: UpgradeRun) -> bool:
        """Whether OLM took the hops the static plan predicts (only for passed runs)."""
        return run.passed and [h.to_csv for h in run.hops] == self.expected_hops(run.start)

    def as_dict(self) -> dict[str, object]:
        return {
            "package": self.package,
            "channel": self.channel,
            "head": self.head,
            "catalog": self.catalog,
            "passed": self.passed,
            "seconds": round(self.seconds, 2),
            "runs": [
                {
                    **run.as_dict(),
                    "expectedHops": self.expected_hops(run.start),
                    "matchesPlan": self.matches_plan(run),
                }
                for run in self.runs
            ],
            "plan": self.plan.as_dict(),
        }


def run_seconds(run: UpgradeRun) -> float:
    return run.install_seconds + sum(h.seconds for h in run.hops)


def run_log(run: UpgradeRun) -> str:
    """The run as lines of text: the install, then each hop with its timing."""
    lines = [f"install {run.start} ({run.channel or '-'}): {run.install_seconds:.1f}s"]
    for number, hop in enumerate(run.hops, 1):
        lines.append(
            f"hop {number} {hop.from_csv} -> {hop.to_csv}: {hop.seconds:.1f}s "
            f"(upgrade offered after {hop.offer_seconds:.1f}s)"
        )
    lines.append(f"reached {run.reached}: {'passed' if run.passed else 'failed'}")
    return "\n".join(lines) + "\n"


def junit_xml(report: UpgradeReport) -> str:
    """JUnit XML: one testsuite for the channel, one testcase per start version."""
    failures = len(report.failures)
    total = f"{report.seconds:.3f}"
    suites = ET.Element(
        "testsuites",
        name=SUITE,
        tests=str(len(report.runs)),
        failures=str(failures),
        errors="0",
        time=total,
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"upgrade {report.package}/{report.channel}",
        tests=str(len(report.runs)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=total,
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("package", report.package),
        ("channel", report.channel),
        ("head", report.head),
        ("catalog", report.catalog),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    for run in report.runs:
        suite.append(_testcase(report, run))
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def _testcase(report: UpgradeReport, run: UpgradeRun) -> ET.Element:
    case = ET.Element(
        "testcase",
        classname=f"{report.package}.{report.channel}",
        name=run.start,
        time=f"{run_seconds(run):.3f}",
    )
    properties = ET.SubElement(case, "properties")
    values = [
        ("namespace", run.namespace),
        ("install.seconds", f"{run.install_seconds:.2f}"),
        ("reached", run.reached),
        ("expected.hops", " -> ".join(report.expected_hops(run.start)) or "-"),
        ("examples", run.examples),
    ]
    for number, hop in enumerate(run.hops, 1):
        values += [
            (f"hop.{number}", f"{hop.from_csv} -> {hop.to_csv}"),
            (f"hop.{number}.seconds", f"{hop.seconds:.2f}"),
            (f"hop.{number}.offer.seconds", f"{hop.offer_seconds:.2f}"),
        ]
    for name, value in values:
        ET.SubElement(properties, "property", name=name, value=value)
    if run.failure is not None:
        failure = ET.SubElement(case, "failure", message=run.failure, type="UpgradeFailed")
        failure.text = run.failure
    ET.SubElement(case, "system-out").text = run_log(run)
    return case


def write_junit(report: UpgradeReport | UpgradePlan, path: Path) -> Path:
    """Write the dynamic run's report, or the static plan's (:func:`plan_junit_xml`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = plan_junit_xml(report) if isinstance(report, UpgradePlan) else junit_xml(report)
    path.write_text(text, encoding="utf-8")
    return path


def plan_junit_xml(plan: UpgradePlan) -> str:
    """JUnit XML of the static check: one testcase per start bundle, failed when its path
    does not reach the head or an error problem names it (a hop OLM v0 refuses)."""
    cases = []
    for path in plan.paths:
        errors = [p for p in plan.problems if p.bundle == path.bundle and p.severity == "error"]
        reached = path.status in ("at-head", "reaches-head")
        case = ET.Element(
            "testcase", classname=f"{plan.package}.{plan.channel}", name=path.bundle, time="0"
        )
        properties = ET.SubElement(case, "properties")
        ET.SubElement(properties, "property", name="status", value=path.status)
        ET.SubElement(properties, "property", name="hops", value=" -> ".join(path.hops) or "-")
        if errors or not reached:
            messages = [f"[{p.kind}] {p.message}" for p in errors] or [f"path {path.status}"]
            failure = ET.SubElement(case, "failure", message=messages[0], type="UpgradePathFailed")
            failure.text = "\n".join(messages)
        cases.append(case)
    failures = sum(1 for case in cases if case.find("failure") is not None)
    suites = ET.Element(
        "testsuites",
        name=SUITE,
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        time="0",
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"upgrade paths {plan.package}/{plan.channel}",
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time="0",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (("package", plan.package), ("channel", plan.channel), ("head", plan.head)):
        ET.SubElement(properties, "property", name=name, value=value)
    suite.extend(cases)
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
