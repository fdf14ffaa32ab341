"""What a CSV gets in the namespaces its OperatorGroup targets: copied CSVs and RBAC.

* Copied CSVs in each target namespace but its own (label ``olm.copiedFrom``, phase of the
  original, reason ``Copied``); for all namespaces, in every namespace. Removed where the
  namespace is no longer targeted.
* RBAC: for Single/MultiNamespace the CSV's Roles and RoleBindings (the ones its
  InstallPlan made in its own namespace) are copied into each target namespace, owned by
  the copied CSV there. For AllNamespaces its ``permissions`` become ClusterRoles and
  ClusterRoleBindings, plus get/list/watch on namespaces; those carry the owner labels the
  CSV finalizer uses to remove them.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.engine.objects import (
    COPIED_FROM,
    JSON,
    RBAC,
    TARGET_NAMESPACES,
    V1ALPHA1,
    labels_of,
    name_of,
    namespace_of,
    owner_labels,
    owner_reference,
    path,
)
from olmtool.engine.steps import RBAC_GROUP, rbac_name

if TYPE_CHECKING:
    from olmtool.kube import Kube

CSVS = "clusterserviceversions"


def copied_csv(csv: JSON, namespace: str) -> JSON:
    metadata = csv.get("metadata") or {}
    labels = {**(metadata.get("labels") or {}), COPIED_FROM: namespace_of(csv)}
    return {
        "apiVersion": csv.get("apiVersion", "operators.coreos.com/v1alpha1"),
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": name_of(csv),
            "namespace": namespace,
            "labels": labels,
            # the copy does not watch anything itself: no olm.targetNamespaces
            "annotations": {
                k: v
                for k, v in (metadata.get("annotations") or {}).items()
                if k != TARGET_NAMESPACES
            },
        },
        "spec": copy.deepcopy(csv.get("spec") or {}),
    }


def copied_status(csv: JSON) -> JSON:
    status = csv.get("status") or {}
    source = namespace_of(csv)
    return {
        "phase": status.get("phase", ""),
        "reason": "Copied",
        "message": f"The operator is running in {source} but is managing this namespace",
        "lastUpdateTime": status.get("lastUpdateTime", ""),
        "lastTransitionTime": status.get("lastTransitionTime", ""),
    }


def sync_copies(
    kube: Kube, csv: JSON, targets: list[str], all_namespaces: list[str], existing: list[JSON]
) -> dict[str, JSON]:
    """Copies of ``csv`` in its targets (all namespaces for ``[""]``); stale copies removed.
    Returns the copy per namespace."""
    own = namespace_of(csv)
    wanted = set(all_namespaces if targets == [""] else targets) - {own}
    copies = {}
    for found in existing:
        if name_of(found) != name_of(csv) or labels_of(found).get(COPIED_FROM) != own:
            continue
        if namespace_of(found) in wanted:
            copies[namespace_of(found)] = found
        else:
            _delete(kube, path(V1ALPHA1, CSVS, namespace_of(found), name_of(found)))
    for namespace in sorted(wanted):
        current = copies.get(namespace)
        if current is None:
            try:
                current = kube.create(path(V1ALPHA1, CSVS, namespace), copied_csv(csv, namespace))
            except ApiException as exc:
                if exc.status in (403, 404, 409):  # namespace terminating or gone meanwhile
                    continue
                raise
        status = copied_status(csv)
        if {k: (current.get("status") or {}).get(k) for k in status} != status:
            current = kube.put(
                path(V1ALPHA1, CSVS, namespace, name_of(csv)) + "/status",
                {**current, "status": status},
            )
        copies[namespace] = current
    return copies


def _delete(kube: Kube, where: str) -> None:
    try:
        kube.delete(where)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _permissions(csv: JSON) -> list[JSON]:
    install = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}
    return list(install.get("permissions") or [])


def _binding(kind: str, name: str, role_kind: str, account: str, namespace: str) -> JSON:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def sync_rbac(kube: Kube, csv: JSON, targets: list[str], copies: dict[str, JSON]) -> None:
    own = namespace_of(csv)
    if targets == [""]:
        _cluster_wide(kube, csv)
        return
    for namespace in targets:
        if namespace == own or namespace not in copies:
            continue
        owner = [owner_reference(copies[namespace])]
        for permission in _permissions(csv):
            account = str(permission.get("serviceAccountName") or "default")
            name = rbac_name(name_of(csv), account, permission.get("rules") or [])
            role = {
                "apiVersion": f"{RBAC_GROUP}/v1",
                "kind": "Role",
                "metadata": {"name": name},
                "rules": permission.get("rules") or [],
            }
            binding = _binding("RoleBinding", name, "Role", account, own)
            for obj, plural in ((role, "roles"), (binding, "rolebindings")):
                labels = {**owner_labels(csv), COPIED_FROM: own}
                obj["metadata"].update(ownerReferences=owner, labels=labels)
                _ensure(kube, path(RBAC, plural, namespace), obj)


def _cluster_wide(kube: Kube, csv: JSON) -> None:
    own = namespace_of(csv)
    for permission in _permissions(csv):
        account = str(permission.get("serviceAccountName") or "default")
        rules = list(permission.get("rules") or [])
        rules.append(
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}
        )
        name = rbac_name(name_of(csv), account, rules)
        role = {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        }
        binding = _binding("ClusterRoleBinding", name, "ClusterRole", account, own)
        for obj, plural in ((role, "clusterroles"), (binding, "clusterrolebindings")):
            obj["metadata"]["labels"] = owner_labels(csv)
            _ensure(kube, path(RBAC, plural), obj)


def _ensure(kube: Kube, collection: str, obj: JSON) -> None:
    existing = kube.get_or_none(f"{collection}/{name_of(obj)}")
    if existing is None:
        kube.create(collection, obj)
        return
    same = all(existing.get(k) == obj.get(k) for k in ("rules", "roleRef", "subjects"))
    if (
        not same
        and obj.get("kind", "").endswith("Binding")
        and existing.get("roleRef") != obj.get("roleRef")
    ):
        _delete(kube, f"{collection}/{name_of(obj)}")  # roleRef cannot change
        kube.create(collection, obj)
    elif not same:
        kube.put(
            f"{collection}/{name_of(obj)}",
            {
                **obj,
                "metadata": {
                    **obj["metadata"],
                    "resourceVersion": existing["metadata"]["resourceVersion"],
                },
            },
        )


def delete_cluster_rbac(kube: Kube, csv: JSON) -> None:
    """What the finalizer removes: cluster RBAC carrying the CSV's owner labels."""
    labels = owner_labels(csv)
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    for plural in ("clusterrolebindings", "clusterroles"):
        for item in kube.get(path(RBAC, plural), labelSelector=selector).get("items", []):
            _delete(kube, path(RBAC, plural, name=name_of(item)))
