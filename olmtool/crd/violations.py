"""What the CRD checker reports: violations with the JSON path the apiserver would print."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from olmtool.findings import Severity

__all__ = ["Severity", "Violation", "errors", "quote", "report"]


@dataclass(frozen=True, order=True)
class Violation:
    """One finding, with the path the apiserver would print."""

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def report(found: Iterable[Violation]) -> list[Violation]:
    """Each violation once: errors first, then by path and message."""
    return sorted(set(found), key=lambda v: (v.severity != "error", v.path, v.message))


def errors(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == "error"]


def quote(value: Any) -> str:
    """A value as the apiserver quotes it in messages (Go's %q; null for nothing)."""
    return '"' + str(value) + '"' if value is not None else "null"
