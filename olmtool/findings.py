"""What validators report: findings (check, severity, message, where) and a verdict.

Bundle, CRD and catalog validation report the same :class:`Finding` (with a field path,
or a package and the object in it) and share :class:`Findings`' verdict rules.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from olmtool.jsonfields import json_fields

Severity = Literal["error", "warning"]
# Where a check comes from: "upstream" checks give operator-framework/api's or opm's
# verdict and severity; "olmtool" checks go beyond upstream and are errors only where OLM,
# opm or the apiserver would certainly refuse what they find.
Origin = Literal["upstream", "olmtool"]
ORIGINS: tuple[Origin, ...] = ("upstream", "olmtool")


@dataclass(frozen=True, order=True)
class Problem:
    """What is wrong at one field of an object: ``path`` in the apiserver's notation
    (``spec.versions[0].name``; "" for the object itself), the message, how bad. A
    validator turns problems into findings (check id, file, line)."""

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class Finding:
    """One problem: which check found it, how bad it is, and in which file and line;
    ``path`` is the field inside the file (``spec.install...``, a bundle's or CRD's),
    ``package`` and ``scope`` the object in a catalog (``channel "stable"``)."""

    check: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    path: str | None = None  # the only other one given by position
    _: KW_ONLY
    package: str | None = None
    scope: str | None = None

    @property
    def location(self) -> str:
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def suite(self) -> str:
        """The suite of a ``suite/name`` check id."""
        return self.check.split("/", 1)[0]

    def __str__(self) -> str:
        subject = " ".join(
            part
            for part in (f'package "{self.package}"' if self.package else "", self.scope)
            if part
        )
        parts = [self.location, subject, self.path or ""]
        return ": ".join([*(part for part in parts if part), self.message])

    def as_dict(self) -> dict[str, Any]:
        """The common keys, then those of ``path``, ``package`` and ``scope`` that are set
        (a validator's JSON adds the ones its findings always carry)."""
        data: dict[str, Any] = {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
        }
        for key in ("path", "package", "scope"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


@dataclass
class Findings:
    """A validation's findings and its verdict: it passes when none is an error (with
    ``strict``, none is a warning either). Findings a waiver accepted
    (:mod:`olmtool.waivers`) are in ``waived``, outside the verdict; waivers that matched
    nothing in ``unused_waivers``."""

    findings: list[Any] = field(default_factory=list)
    waived: list[Any] = field(default_factory=list)  # waivers.WaivedFinding
    unused_waivers: list[Any] = field(default_factory=list)  # waivers.Waiver

    def waiver_dicts(self, origin_of: Any) -> dict[str, list[dict[str, Any]]]:
        """``waived`` (each finding with its origin, reason and waiver) and
        ``unused_waivers``, for ``-o json``: present, maybe empty, in every report."""
        return {
            "waived": [w.as_dict(origin=origin_of(w.finding.check)) for w in self.waived],
            "unused_waivers": [w.as_dict() for w in self.unused_waivers],
        }

    @property
    def errors(self) -> list[Any]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Any]:
        return [f for f in self.findings if f.severity == "warning"]

    def passed(self, *, strict: bool = False) -> bool:
        return not self.errors and not (strict and self.warnings)


@dataclass(frozen=True)
class CheckRow:
    """One line of a validator's check listing (``--list-checks``)."""

    check: str
    origin: Origin
    severity: str  # "error", "warning" or "error/warning"
    summary: str

    def as_dict(self) -> dict[str, Any]:
        return json_fields(self)
