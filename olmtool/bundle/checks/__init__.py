"""The bundle checks, grouped in suites the way operator-framework/api groups its validators.

Each check is a function ``(bundle, context) -> Iterable[Finding]`` registered under a
suite. Default suites always run; optional ones (``operatorhub``, ``good-practices``,
``deprecated-apis``) run when selected, as with ``operator-sdk bundle validate
--select-optional``; target suites (``olm-v1``) only when selected by name. Every check id a check reports has a line in :mod:`.table`: its
origin (upstream or olmtool) and the severities it may take.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import semver

from olmtool.bundle.model import Bundle, Object
from olmtool.bundle.suites import DEFAULT_SUITES, OPTIONAL_SUITES, TARGET_SUITES
from olmtool.findings import Finding


@dataclass(frozen=True)
class Context:
    """Validation settings: the Kubernetes version the bundle must install on."""

    k8s_version: semver.Version | None = None


Check = Callable[[Bundle, Context], Iterable[Finding]]
CsvCheck = Callable[[Object, Bundle, Context], Iterable[Finding]]

SUITES: dict[str, list[Check]] = {
    name: [] for name in (*DEFAULT_SUITES, *OPTIONAL_SUITES, *TARGET_SUITES)
}


def register(suite: str) -> Callable[[Check], Check]:
    def decorate(check: Check) -> Check:
        SUITES[suite].append(check)
        return check

    return decorate


def register_csv(suite: str) -> Callable[[CsvCheck], CsvCheck]:
    """Register a check of the bundle's CSV; it is skipped when the bundle has no single
    CSV (the loader reports that)."""

    def decorate(check: CsvCheck) -> CsvCheck:
        @functools.wraps(check)
        def run(bundle: Bundle, context: Context) -> Iterable[Finding]:
            return () if bundle.csv is None else check(bundle.csv, bundle, context)

        SUITES[suite].append(run)
        return check

    return decorate


# Registration happens on import.
from olmtool.bundle.checks import csv, hub, layout, olmv1, relations, schemas, webhooks  # noqa: E402

__all__ = [
    "DEFAULT_SUITES",
    "OPTIONAL_SUITES",
    "SUITES",
    "TARGET_SUITES",
    "Check",
    "Context",
    "CsvCheck",
    "register",
    "register_csv",
]
_ = (csv, hub, layout, olmv1, relations, schemas, webhooks)
