"""``bundle validate --previous``: the bundle's CRDs against the release it upgrades from.

The rules are :mod:`olmtool.crd.upgrade`'s. A CRD the previous bundle also had is compared
with its previous form: a version the previous one stores that is gone is an error
(``crd-upgrade/stored-versions``: OLM v0 and v1 refuse the upgrade; a version it lists
without storing it is a warning: clusters that came through older releases may store
it); every other change
OLM v1's preflight refuses is a warning, an error with ``--select olm-v1`` (OLM v1 is the
target). Findings point at the new CRD's file and, where it can be told, the line of the
changed field.
"""

from __future__ import annotations

from dataclasses import replace

from olmtool.bundle.model import Bundle, Object
from olmtool.crd import (
    RULE_CHECKS,
    STORED_VERSIONS,
    CrdChange,
    compare_crds,
    olm_v0_message,
    storage_versions,
    version_names,
)
from olmtool.findings import Finding

CHECK_IDS = tuple(dict.fromkeys(RULE_CHECKS.values()))


def check_crd_upgrade(bundle: Bundle, previous: Bundle, *, olm_v1: bool) -> list[Finding]:
    """Every CRD change from ``previous`` to ``bundle`` OLM refuses."""
    before = {crd.name: crd for crd in previous.crds if crd.name}
    name = _release(previous)
    found = []
    for crd in bundle.crds:
        old = before.get(crd.name)
        if old is None or not isinstance(old.document, dict) or not isinstance(crd.document, dict):
            continue
        certain = storage_versions(old.document)
        # a version the previous release lists but does not store may still be stored by
        # clusters that came through older releases: dropping it is a warning
        for change in compare_crds(
            old.document, crd.document, stored_versions=version_names(old.document)
        ):
            if change.check != STORED_VERSIONS:
                found.append(_finding(crd, change, name, olm_v1=olm_v1))
                continue
            removed = change.listed
            for versions, sure in (
                ([v for v in removed if v in certain], True),
                ([v for v in removed if v not in certain], False),
            ):
                if versions:
                    dropped = replace(
                        change, message=f"stored versions removed : [{' '.join(versions)}]"
                    )
                    found.append(_stored_finding(crd, dropped, name, sure=sure))
    return found


def _stored_finding(crd: Object, change: CrdChange, previous: str, *, sure: bool) -> Finding:
    if sure:
        message = f"upgrade from {previous}: OLM v0 and v1 refuse it: {olm_v0_message(change)}"
        return crd.finding(STORED_VERSIONS, "error", message, "spec.versions")
    versions = " ".join(change.listed)
    message = (
        f"upgrade from {previous}: {previous} lists {versions} without storing it; clusters "
        f"that came from an older release that stored it refuse the upgrade "
        f"(OLM v0 and v1: {olm_v0_message(change)})"
    )
    return crd.finding(STORED_VERSIONS, "warning", message, "spec.versions")


def _finding(crd: Object, change: CrdChange, previous: str, *, olm_v1: bool) -> Finding:
    message = f"upgrade from {previous}: OLM v1 refuses it: {change.describe()}"
    severity = "error" if olm_v1 else "warning"
    return crd.finding(change.check, severity, message, change.schema_path(crd.document))


def _release(bundle: Bundle) -> str:
    """The previous release by its CSV's name, else by where it was read."""
    csv = bundle.csv
    return csv.name if csv is not None and csv.name else (bundle.label or bundle.display(""))
