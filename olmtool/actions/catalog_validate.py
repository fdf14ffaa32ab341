"""``catalog validate``: opm's checks, plus the graph checks opm misses.

>>> catalog_validate("catalog/").passed(strict=True)
True
"""

from __future__ import annotations

from pathlib import Path

from olmtool.catalog import Report, check_rows, validate_catalog
from olmtool.findings import CheckRow


def catalog_validate(directory: str | Path) -> Report:
    """Load the catalog under ``directory`` (or one file) and check it."""
    return validate_catalog(directory)


def catalog_checks() -> list[CheckRow]:
    """Every catalog check id with its origin (upstream: opm; olmtool) and severity."""
    return check_rows()
