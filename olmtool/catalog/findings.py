"""Catalog findings: what a check found, in which package/channel/bundle, in which file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from olmtool.findings import Finding as BaseFinding
from olmtool.findings import Severity

__all__ = ["Finding", "Severity"]


@dataclass(frozen=True)
class Finding(BaseFinding):
    """A catalog finding; ``scope`` names the object inside the package: ``channel "stable"``."""

    package: str | None = None
    scope: str | None = None

    def __str__(self) -> str:
        where = [p for p in (self.location,) if p]
        subject = " ".join(
            part
            for part in (f'package "{self.package}"' if self.package else "", self.scope or "")
            if part
        )
        return ": ".join([*where, *([subject] if subject else []), self.message])

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "package": self.package, "scope": self.scope}
