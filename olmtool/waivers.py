"""Waivers: findings a project accepts on purpose, each with the reason why.

A waiver names a check id and, optionally, the files it covers (a glob matched against
the end of the finding's file path). On the command line (``--ignore``, repeatable, for
``bundle validate`` and ``catalog validate``) it is ``CHECK[:FILE][=REASON]``::

    olmtool bundle validate DIR --strict --select all \\
        --ignore good-practices/channel-name="alpha is our preview channel"
    olmtool catalog validate catalog --ignore 'unreachable-head:legacy-operator/*'

In ``olmtool.yaml`` a waiver needs a reason (it is committed: say why), as a mapping or
in the command line's form::

    validate:
      ignore:
        - check: good-practices/channel-name
          reason: alpha is our preview channel
        - check: csv/no-examples
          file: manifests/*.clusterserviceversion.yaml
          reason: examples live in the docs
        - "olm-v1/install-modes=we target OLM v0 only"

Waived findings do not count toward the verdict (not for ``--strict`` either) and are
listed, with their reason and the waiver's source, in every output format; a waiver that
matched nothing is reported as a note. ``internal/`` findings (a crashed check) cannot
be waived: they are bugs in olmtool, never a verdict.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from olmtool.errors import ArgumentError

COMMAND_LINE = "--ignore"
UNWAIVABLE_PREFIX = "internal/"


@dataclass(frozen=True)
class Waiver:
    """Accept the findings of ``check`` (in files matching ``file``, when set)."""

    check: str
    reason: str = ""
    file: str = ""  # a glob matched against the end of the finding's file path
    source: str = COMMAND_LINE  # where the waiver was given: --ignore, olmtool.yaml:12

    @property
    def label(self) -> str:
        return f"{self.check}:{self.file}" if self.file else self.check

    def matches(self, finding: Any) -> bool:
        if finding.check != self.check:
            return False
        return not self.file or _file_matches(finding.file, self.file)

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "file": self.file or None,
            "reason": self.reason,
            "source": self.source,
        }


@dataclass(frozen=True)
class WaivedFinding:
    """A finding a waiver accepted."""

    finding: Any
    waiver: Waiver

    def as_dict(self, **extra: Any) -> dict[str, Any]:
        """The finding's fields (plus ``extra``, such as its origin), the waiver's reason
        and source: the same shape as the report's findings, with two keys more."""
        return {
            **self.finding.as_dict(),
            **extra,
            "reason": self.waiver.reason,
            "waiver": self.waiver.source,
        }


@dataclass
class Waived:
    """What waivers did to a list of findings."""

    kept: list[Any] = field(default_factory=list)
    waived: list[WaivedFinding] = field(default_factory=list)
    unused: list[Waiver] = field(default_factory=list)


def _file_matches(file: str | None, pattern: str) -> bool:
    if not file:
        return False
    return PurePosixPath(file).match(pattern.strip("/"))


def apply_waivers(
    findings: Iterable[Any], waivers: Sequence[Waiver], *, checks: Collection[str]
) -> Waived:
    """Split ``findings`` into kept and waived (each waived by the first waiver that
    matches it). Waivers of checks in ``checks`` (the validator's own ids) that match no
    finding are ``unused``; the others belong to another validator and are left alone."""
    result = Waived()
    used: set[Waiver] = set()
    for finding in findings:
        matching = [w for w in waivers if w.matches(finding)]
        used.update(matching)
        if matching:
            result.waived.append(WaivedFinding(finding, matching[0]))
        else:
            result.kept.append(finding)
    result.unused = [w for w in dict.fromkeys(waivers) if w not in used and w.check in checks]
    return result


def waive(report: Any, waivers: Sequence[Waiver], *, checks: Collection[str]) -> None:
    """Apply ``waivers`` to a report (:class:`olmtool.findings.Findings`) in place."""
    if not waivers:
        return
    outcome = apply_waivers(report.findings, waivers, checks=checks)
    report.findings = outcome.kept
    report.waived = [*report.waived, *outcome.waived]
    report.unused_waivers = [*report.unused_waivers, *outcome.unused]


# --- parsing --------------------------------------------------------------------------------


def split_waiver(text: str) -> tuple[str, str, str]:
    """``CHECK[:FILE][=REASON]`` as (check, file, reason), each stripped."""
    head, _, reason = text.partition("=")
    check, _, file = head.partition(":")
    return check.strip(), file.strip(), reason.strip()


def unknown_check_problem(check: str, known: Collection[str]) -> str | None:
    """Why ``check`` cannot be waived (unknown, with the closest id; or internal)."""
    if not check:
        return "no check named (CHECK[:FILE][=REASON])"
    if check.startswith(UNWAIVABLE_PREFIX) and check in known:
        return f"{check} cannot be waived: it reports a bug in olmtool, not a verdict"
    if check in known:
        return None
    close = difflib.get_close_matches(check, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else " (--list-checks lists them)"
    return f"unknown check {check!r}{hint}"


def parse_waivers(texts: Iterable[str], *, known: Collection[str]) -> list[Waiver]:
    """``--ignore`` values as waivers; ArgumentError (argument ``ignore``) for an unknown
    or unwaivable check id."""
    waivers = []
    for text in texts:
        check, file, reason = split_waiver(text)
        problem = unknown_check_problem(check, known)
        if problem:
            raise ArgumentError(problem if check else f"{text!r}: {problem}", argument="ignore")
        waivers.append(Waiver(check, reason, file))
    return waivers
