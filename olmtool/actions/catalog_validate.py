"""``catalog validate``: opm's checks, plus the graph checks opm misses.

>>> catalog_validate("catalog/").passed(strict=True)
True
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from olmtool.actions._project import project_waivers
from olmtool.catalog import (
    CHECKS,
    Report,
    check_rows,
    checks_run,
    select_catalog_suites,
    validate_catalog,
)
from olmtool.findings import CheckRow
from olmtool.waivers import parse_waivers, waive


def catalog_validate(
    directory: str | Path,
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    config: Path | None = None,
) -> Report:
    """Load the catalog under ``directory`` (or one file) and check it; ``select`` adds
    optional suites (``olm-v1``). ``ignore`` waives findings (``CHECK[:FILE][=REASON]``,
    see :mod:`olmtool.waivers`), as does ``validate.ignore`` of ``config`` (default:
    ``olmtool.yaml`` found upward)."""
    waivers = parse_waivers(ignore, known=CHECKS)
    suites = select_catalog_suites(select)
    waivers += project_waivers(config)
    report = validate_catalog(directory, suites=suites)
    waive(report, waivers, checks=checks_run(suites))
    return report


def catalog_checks() -> list[CheckRow]:
    """Every catalog check id with its origin (upstream: opm; olmtool) and severity."""
    return check_rows()
