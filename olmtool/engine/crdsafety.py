"""OLM's checks before it updates a CRD that already exists: no stored version may go
away, and every existing custom resource must stay valid under the new schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

from olmtool.crd import validate_object
from olmtool.engine.objects import JSON, name_of

if TYPE_CHECKING:
    from olmtool.kube import Kube


class UnsafeCRDUpdate(Exception):
    """Updating the CRD would lose data or invalidate existing objects (OLM's message)."""


def check_update(kube: Kube, existing: JSON, new: JSON) -> None:
    """Raise UnsafeCRDUpdate with OLM's wording when ``new`` may not replace ``existing``."""
    name = name_of(existing)
    new_versions = {v.get("name") for v in (new.get("spec") or {}).get("versions") or []}
    single = (new.get("spec") or {}).get("version")  # apiextensions v1beta1
    if single:
        new_versions.add(single)
    for stored in (existing.get("status") or {}).get("storedVersions") or []:
        if stored not in new_versions:
            raise UnsafeCRDUpdate(
                f"risk of data loss updating {name}: new CRD removes version {stored} "
                "that is listed as a stored version on the existing CRD"
            )
    spec = existing.get("spec") or {}
    group, plural = spec.get("group"), (spec.get("names") or {}).get("plural")
    kind = (spec.get("names") or {}).get("kind")
    # OLM validates existing objects against the new schema of their version, served or
    # not: a release may stop serving an old version (real OLM v0.18.3 accepts that)
    schemas = _all_served(new)
    for version in spec.get("versions") or []:
        if not version.get("served") or version.get("name") not in new_versions:
            continue
        listed = kube.get(f"/apis/{group}/{version['name']}/{plural}")
        for item in listed.get("items", []):
            errors = validate_object(schemas, item).errors
            if errors:
                raise UnsafeCRDUpdate(
                    f"error validating existing CRs against new CRD's schema: {name}: error "
                    f"validating custom resource against new schema for {kind} {_where(item)}: "
                    f"{errors[0]}"
                )


def _all_served(crd: JSON) -> JSON:
    spec = crd.get("spec") or {}
    versions = [{**v, "served": True} for v in spec.get("versions") or []]
    return {**crd, "spec": {**spec, "versions": versions}}


def _where(item: JSON) -> str:
    metadata = item.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata.get('name')}" if namespace else str(metadata.get("name"))


def established(crd: JSON) -> bool:
    conditions = {
        c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or []
    }
    return conditions.get("Established") == "True" and conditions.get("NamesAccepted") == "True"
