"""What the CRD checker reports: problems with the JSON path the apiserver would print."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from olmtool.findings import Problem, Severity

__all__ = ["Problem", "Severity", "errors", "quote", "report"]


def report(found: Iterable[Problem]) -> list[Problem]:
    """Each violation once: errors first, then by path and message."""
    return sorted(set(found), key=lambda v: (v.severity != "error", v.path, v.message))


def errors(violations: list[Problem]) -> list[Problem]:
    return [v for v in violations if v.severity == "error"]


def quote(value: Any) -> str:
    """A value as the apiserver quotes it in messages (Go's %q; null for nothing)."""
    return '"' + str(value) + '"' if value is not None else "null"
