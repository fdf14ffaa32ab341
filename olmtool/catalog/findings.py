"""Catalog findings: what a check found, in which package/channel/bundle, in which file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem. ``scope`` names the object inside the package: ``channel "stable"``."""

    check: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    package: str | None = None
    scope: str | None = None

    @property
    def location(self) -> str:
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        where = [p for p in (self.location,) if p]
        subject = " ".join(
            part
            for part in (f'package "{self.package}"' if self.package else "", self.scope or "")
            if part
        )
        return ": ".join([*where, *([subject] if subject else []), self.message])

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "package": self.package,
            "scope": self.scope,
        }
