"""``bundle validate``: every upstream check (and more) over a bundle directory or image.

>>> report = bundle_validate("bundle/etcd-operator/0.3.0", select=["all"])
>>> report.passed(strict=True)
True
>>> next(row for row in bundle_checks() if row.check == "format/dockerfile-labels").origin
'olmtool'
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path

from olmtool.actions._project import project_waivers
from olmtool.bundle import CHECKS, Report, open_bundle, select_suites, validate_bundle
from olmtool.findings import CheckRow
from olmtool.waivers import parse_waivers, waive


def bundle_validate(
    source: str | Path,
    *,
    select: Iterable[str] = (),
    k8s_version: str | None = None,
    ignore: Iterable[str] = (),
    config: Path | None = None,
    previous: str | Path | None = None,
) -> Report:
    """Validate the bundle ``source`` names (a directory, OCI layout or image reference,
    see :mod:`olmtool.bundle.source`) with the default suites plus ``select``.

    ``ignore`` waives findings (``CHECK[:FILE][=REASON]``, see :mod:`olmtool.waivers`),
    as does ``validate.ignore`` of ``config`` (default: ``olmtool.yaml`` found upward).
    ``previous`` (a directory or image, like ``source``) is the release the bundle
    upgrades from: its CRDs must stay upgrade-safe (``crd-upgrade/*``)."""
    waivers = parse_waivers(ignore, known=CHECKS)
    suites = select_suites(select)
    waivers += project_waivers(config)
    with ExitStack() as stack:
        bundle = stack.enter_context(open_bundle(source))
        before = stack.enter_context(open_bundle(previous)) if previous is not None else None
        report = validate_bundle(bundle, suites=suites, k8s_version=k8s_version, previous=before)
    ran = (
        CHECKS if previous is not None else [c for c in CHECKS if not c.startswith("crd-upgrade/")]
    )
    waive(report, waivers, checks=ran)
    return report


def bundle_checks() -> list[CheckRow]:
    """Every bundle check id with its origin (upstream or olmtool) and severity."""
    return [
        CheckRow(check, info.origin, info.severity, info.summary) for check, info in CHECKS.items()
    ]
