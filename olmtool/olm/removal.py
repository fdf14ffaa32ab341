"""Removing what an install made: ``uninstall`` (the Subscription, its CSVs, what its
InstallPlans created, cluster-scoped objects with the CSV's owner labels, and the
CatalogSource/OperatorGroup ``install`` made) and ``remove_made`` (undoing a failed or
interrupted install: only what that run created)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.olm.discovery import Discovery
from olmtool.olm.subscription import CREATED_BY, JSON, Made, _path, label_selector

if TYPE_CHECKING:
    from olmtool.kube import Kube


def csv_names(kube: Kube, namespace: str) -> set[str]:
    """The CSVs in ``namespace`` now (what a failed install must not remove)."""
    items = kube.get(_path(namespace, "clusterserviceversions")).get("items", [])
    return {item["metadata"]["name"] for item in items}


def remove_made(
    kube: Kube,
    namespace: str,
    package: str,
    made: list[Made],
    csvs_before: set[str],
    describe: Callable[[BaseException], str] | None = None,
) -> tuple[list[str], list[str]]:
    """Undo what a failed install made: its Subscription (first, so OLM stops), the CSV
    it brought (unless in ``csvs_before``) with what its InstallPlans created, then the
    OperatorGroup, CatalogSource and namespace it created, newest first. Objects that
    existed before are left alone. Returns (removed, not removed with the reason); an
    object already gone counts as removed; ``describe`` words a failed request's reason."""
    removed: list[str] = []
    failed: list[str] = []
    briefly = describe or _briefly

    def delete(what: str, path: str) -> None:
        try:
            kube.delete(path)
        except Exception as exc:
            if not isinstance(exc, ApiException) or exc.status != 404:
                failed.append(f"{what} ({briefly(exc)})")
                return
        removed.append(what)

    subscription = next((m for m in made if m.kind == "Subscription"), None)
    if subscription is not None:
        csv_name, created = "", []
        try:
            status = (kube.get_or_none(subscription.path) or {}).get("status") or {}
            csv_name = status.get("installedCSV") or status.get("currentCSV") or ""
            created = _created_by(_plans_of(kube, namespace, package)) if csv_name else []
        except Exception as exc:
            failed.append(f"the CSV of {subscription} ({briefly(exc)})")
        delete(str(subscription), subscription.path)
        if csv_name and csv_name not in csvs_before:
            path = _path(namespace, "clusterserviceversions", csv_name)
            delete(f"ClusterServiceVersion {namespace}/{csv_name}", path)
            try:
                removed += _delete_created(kube, namespace, [csv_name], created)
            except ApiException as exc:
                if exc.status != 404:  # 404: an API not served, so nothing of it to remove
                    failed.append(f"what the InstallPlans of {csv_name} created ({briefly(exc)})")
            except Exception as exc:
                failed.append(f"what the InstallPlans of {csv_name} created ({briefly(exc)})")
    for item in reversed(made):
        if item.kind != "Subscription":
            delete(str(item), item.path)
    return removed, failed


def _briefly(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return f"{exc.status} {exc.reason}"
    return str(exc) or type(exc).__name__


OWNER_KIND_CSV = "ClusterServiceVersion"
# Cluster-scoped kinds an InstallPlan creates for a CSV with its owner labels (namespaced
# ones are owned by the CSV and go with it)
CLUSTER_SCOPED_OWNED = (
    ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    ("/apis/rbac.authorization.k8s.io/v1", "clusterroles"),
    ("/apis/scheduling.k8s.io/v1", "priorityclasses"),
)


def _plans_of(kube: Kube, namespace: str, package: str) -> list[JSON]:
    """The InstallPlans of the Subscription ``package`` (they name it as an owner)."""
    return [
        plan
        for plan in kube.get(_path(namespace, "installplans")).get("items", [])
        if package in {r.get("name") for r in plan["metadata"].get("ownerReferences") or []}
    ]


def _created_by(plans: list[JSON]) -> list[JSON]:
    """The objects the InstallPlans made, but CSVs, CRDs and Subscriptions, as small dicts
    (apiVersion, kind, name, and for a step ``Present`` the plan's creation time): OLM marks
    a step it created ``Created``, and ``Present`` when a retry of the plan finds it, so a
    ``Present`` object counts only if it is not older than the plan."""
    created = []
    for plan in plans:
        for step in (plan.get("status") or {}).get("plan") or []:
            resource = step.get("resource") or {}
            if step.get("status") not in ("Created", "Present") or resource.get("kind") in (
                OWNER_KIND_CSV,
                "CustomResourceDefinition",
                "Subscription",
            ):
                continue
            group, version = resource.get("group", ""), resource.get("version", "")
            since = (
                plan["metadata"].get("creationTimestamp", "") if step["status"] == "Present" else ""
            )
            created.append(
                {
                    "api_version": f"{group}/{version}" if group else version,
                    "kind": resource.get("kind"),
                    "name": resource.get("name"),
                    "since": since,
                }
            )
    return created


def _delete_quietly(kube: Kube, where: str) -> bool:
    """Delete ``where``; False when it was gone already (GC or OLM was faster)."""
    try:
        kube.delete(where)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False
    return True


def _delete_created(
    kube: Kube, namespace: str, csv_names: list[str], created: list[JSON]
) -> list[str]:
    """Everything the install created that deleting the CSV does not take by itself: what
    its plans created, and cluster-scoped objects with its owner labels."""
    removed = []
    discovery = Discovery(kube)
    for item in created:
        collection = discovery.collection(item["api_version"], item["kind"], namespace)
        where = f"{collection[0]}/{item['name']}" if collection else None
        found = kube.get_or_none(where) if where is not None else None
        if found is None:
            continue
        # RFC 3339 times in UTC compare as text
        if found["metadata"].get("creationTimestamp", "") < item.get("since", ""):
            continue  # there before the plan: not the install's to remove
        if _delete_quietly(kube, where):
            removed.append(f"{item['kind']} {item['name']}")
    for csv_name in csv_names:
        owner = {"olm.owner": csv_name, "olm.owner.namespace": namespace}
        selector = label_selector({**owner, "olm.owner.kind": OWNER_KIND_CSV})
        for base, plural in CLUSTER_SCOPED_OWNED:
            for found in kube.get(f"{base}/{plural}", labelSelector=selector).get("items", []):
                name = found["metadata"]["name"]
                if _delete_quietly(kube, f"{base}/{plural}/{name}"):
                    removed.append(f"{found.get('kind', plural)} {name}")
    return removed


def uninstall(kube: Kube, namespace: str, package: str, *, delete_crds: bool = False) -> list[str]:
    """Delete the Subscription and its CSV (and with ``delete_crds`` the CRDs the CSV
    owns), what its InstallPlans created, then the CatalogSource/OperatorGroup ``install``
    created; what went."""
    removed: list[str] = []
    sub = kube.get_or_none(_path(namespace, "subscriptions", package))
    plans = _plans_of(kube, namespace, package) if sub is not None else []
    status = (sub or {}).get("status") or {}
    # the Subscription's CSVs, and those its plans name (a failed plan's CSV may be the
    # only one: OLM does not always record it as currentCSV)
    csv_names = {status.get("installedCSV"), status.get("currentCSV")}
    csv_names |= {
        n for p in plans for n in (p.get("spec") or {}).get("clusterServiceVersionNames") or []
    }
    csv_names = sorted(n for n in csv_names if n)
    owned: list[str] = []
    for csv_name in csv_names:
        csv = kube.get_or_none(_path(namespace, "clusterserviceversions", csv_name)) or {}
        owned += [
            c["name"]
            for c in (csv.get("spec", {}).get("customresourcedefinitions") or {}).get("owned") or []
        ]
    if sub is not None:
        kube.delete(_path(namespace, "subscriptions", package))
        removed.append(f"Subscription {namespace}/{package}")
    for csv_name in csv_names:
        where = _path(namespace, "clusterserviceversions", csv_name)
        if kube.get_or_none(where) and _delete_quietly(kube, where):
            removed.append(f"ClusterServiceVersion {namespace}/{csv_name}")
    removed += _delete_created(kube, namespace, csv_names, _created_by(plans))
    if delete_crds:
        for crd in sorted(set(owned)):
            path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"
            if kube.get_or_none(path):
                kube.delete(path)
                removed.append(f"CustomResourceDefinition {crd}")
    selector = label_selector(CREATED_BY)
    for plural, version in (("catalogsources", "v1alpha1"), ("operatorgroups", "v1")):
        for item in kube.get(_path(namespace, plural, version=version), labelSelector=selector).get(
            "items", []
        ):
            kube.delete(_path(namespace, plural, item["metadata"]["name"], version=version))
            removed.append(f"{item['kind']} {namespace}/{item['metadata']['name']}")
    return removed
