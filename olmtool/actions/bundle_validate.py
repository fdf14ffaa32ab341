"""``bundle validate``: every upstream check (and more) over a bundle directory or image.

>>> report = bundle_validate("bundle/etcd-operator/0.3.0", select=["all"])
>>> report.passed(strict=True)
True
>>> next(row for row in bundle_checks() if row.check == "format/dockerfile-labels").origin
'olmtool'
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from olmtool.bundle import CHECKS, Report, open_bundle, select_suites, validate_bundle
from olmtool.findings import CheckRow


def bundle_validate(
    source: str | Path, *, select: Iterable[str] = (), k8s_version: str | None = None
) -> Report:
    """Validate the bundle ``source`` names (a directory, OCI layout or image reference,
    see :mod:`olmtool.bundle.source`) with the default suites plus ``select``."""
    suites = select_suites(select)
    with open_bundle(source) as bundle:
        return validate_bundle(bundle, suites=suites, k8s_version=k8s_version)


def bundle_checks() -> list[CheckRow]:
    """Every bundle check id with its origin (upstream or olmtool) and severity."""
    return [
        CheckRow(check, info.origin, info.severity, info.summary) for check, info in CHECKS.items()
    ]
