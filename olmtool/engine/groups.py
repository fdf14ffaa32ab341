"""OperatorGroups: target namespaces, the install mode a CSV needs, status and annotations.

Target namespaces are ``spec.targetNamespaces`` when given, else the namespaces the
``selector`` matches; no selector (or an empty one) means all namespaces, written as
``[""]`` in ``status.namespaces``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.engine.objects import (
    JSON,
    OWNER,
    OWNER_KIND,
    OWNER_NAMESPACE,
    PROVIDED_APIS,
    RBAC,
    V1,
    annotations_of,
    labels_of,
    name_of,
    namespace_of,
    now,
    owner_labels,
    path,
    short_hash,
)

if TYPE_CHECKING:
    from olmtool.kube import Kube

ALL_NAMESPACES = ""


def matches(selector: JSON, labels: dict[str, str]) -> bool:
    """A label selector (matchLabels + matchExpressions) against a label set."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def target_namespaces(group: JSON, namespaces: list[JSON]) -> list[str]:
    spec = group.get("spec") or {}
    explicit = spec.get("targetNamespaces")
    if explicit:
        return sorted(set(explicit))
    selector = spec.get("selector")
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return [ALL_NAMESPACES]
    return sorted(name_of(n) for n in namespaces if matches(selector, labels_of(n)))


def required_install_mode(own: str, targets: list[str]) -> str:
    if targets == [ALL_NAMESPACES]:
        return "AllNamespaces"
    if len(targets) == 1:
        return "OwnNamespace" if targets[0] == own else "SingleNamespace"
    return "MultiNamespace"


def unsupported_message(csv: JSON, own: str, targets: list[str]) -> str | None:
    """OLM's UnsupportedOperatorGroup message, or None when the CSV supports the group."""
    supported = {
        m.get("type"): bool(m.get("supported"))
        for m in (csv.get("spec") or {}).get("installModes") or []
    }
    if not targets:
        return "no target namespaces: the OperatorGroup selects no namespace"
    mode = required_install_mode(own, targets)
    if mode == "MultiNamespace" and own in targets and supported.get(mode):
        mode = "OwnNamespace"  # watching its own namespace among others needs both modes
    if supported.get(mode):
        return None
    texts = {
        "AllNamespaces": "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces",
        "OwnNamespace": "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace",
        "SingleNamespace": "SingleNamespace InstallModeType not supported, cannot configure to watch one namespace",
        "MultiNamespace": f"MultiNamespace InstallModeType not supported, cannot configure to watch {len(targets)} namespaces",
    }
    return texts[mode]


def provided_apis(csvs: list[JSON]) -> str:
    """``Kind.version.group`` of every owned CRD of the group's CSVs, sorted, comma-joined."""
    apis = set()
    for csv in csvs:
        owned = ((csv.get("spec") or {}).get("customresourcedefinitions") or {}).get("owned") or []
        for crd in owned:
            group = str(crd.get("name", "")).partition(".")[2]
            apis.add(f"{crd.get('kind')}.{crd.get('version')}.{group}")
    return ",".join(sorted(apis))


VERBS = {
    "admin": ["*"],
    "edit": ["create", "update", "patch", "delete"],
    "view": ["get", "list", "watch"],
}


def _aggregation_key(group: JSON, verb: str) -> str:
    return f"olm.opgroup.permissions/aggregate-to-{short_hash(group['metadata']['uid'], 16)}-{verb}"


def group_cluster_roles(group: JSON) -> list[JSON]:
    """``<group>-admin|edit|view``: aggregated from the APIs its operators provide."""
    labels = {
        OWNER: name_of(group),
        OWNER_NAMESPACE: namespace_of(group),
        OWNER_KIND: "OperatorGroup",
    }
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{name_of(group)}-{verb}", "labels": labels},
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {_aggregation_key(group, verb): "true"}}]
            },
        }
        for verb in VERBS
    ]


def api_cluster_roles(group: JSON, csvs: list[JSON]) -> list[JSON]:
    """``<plural>.<group>-<version>-admin|edit|view`` per owned API, aggregated into the
    cluster's admin/edit/view roles and the OperatorGroup's own."""
    roles = []
    for csv in csvs:
        owned = ((csv.get("spec") or {}).get("customresourcedefinitions") or {}).get("owned") or []
        for crd in owned:
            plural, _, api_group = str(crd.get("name", "")).partition(".")
            for verb, verbs in VERBS.items():
                labels = {
                    f"rbac.authorization.k8s.io/aggregate-to-{verb}": "true",
                    _aggregation_key(group, verb): "true",
                    **owner_labels(csv),
                }
                roles.append(
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "ClusterRole",
                        "metadata": {
                            "name": f"{crd.get('name')}-{crd.get('version')}-{verb}",
                            "labels": labels,
                        },
                        "rules": [
                            {"apiGroups": [api_group], "resources": [plural], "verbs": verbs}
                        ],
                    }
                )
    return roles


_ENSURED: set[str] = set()  # roles written by this process, as hashes of the whole role


def _ensure_cluster_role(kube: Kube, role: JSON) -> None:
    key = short_hash(role, 32)
    if key in _ENSURED:
        return
    where = path(RBAC, "clusterroles", name=name_of(role))
    existing = kube.get_or_none(where)
    if existing is None:
        kube.create(path(RBAC, "clusterroles"), role)
    elif labels_of(existing) != {**labels_of(existing), **labels_of(role)}:
        merged = {
            **existing,
            "metadata": {
                **existing["metadata"],
                "labels": {**labels_of(existing), **labels_of(role)},
            },
        }
        kube.put(where, merged)
    _ENSURED.add(key)


def sync_group(kube: Kube, group: JSON, namespaces: list[JSON], csvs: list[JSON]) -> list[str]:
    """Write the group's ``status.namespaces`` and ``olm.providedAPIs``; its targets."""
    targets = target_namespaces(group, namespaces)
    namespace = namespace_of(group)
    status = group.get("status") or {}
    if status.get("namespaces") != targets:
        body = {**group, "status": {**status, "namespaces": targets, "lastUpdated": now()}}
        group = kube.put(path(V1, "operatorgroups", namespace, name_of(group)) + "/status", body)
    for role in group_cluster_roles(group) + api_cluster_roles(group, csvs):
        _ensure_cluster_role(kube, role)
    provided = provided_apis(csvs)
    annotations = annotations_of(group)
    if annotations.get(PROVIDED_APIS, "") != provided and (
        provided or PROVIDED_APIS in annotations
    ):
        patch = {"metadata": {"annotations": {PROVIDED_APIS: provided or None}}}
        kube.patch(path(V1, "operatorgroups", namespace, name_of(group)), patch)
    return targets


def delete_orphaned_group_roles(kube: Kube, groups: list[JSON]) -> list[str]:
    """Delete the ``<group>-admin|edit|view`` ClusterRoles of OperatorGroups that no longer
    exist (OLM garbage-collects them with their group); the names deleted."""
    alive = {(namespace_of(g), name_of(g)) for g in groups}
    selector = f"{OWNER_KIND}=OperatorGroup"
    deleted = []
    for role in kube.get(path(RBAC, "clusterroles"), labelSelector=selector).get("items", []):
        labels = labels_of(role)
        if (labels.get(OWNER_NAMESPACE), labels.get(OWNER)) in alive:
            continue
        try:
            kube.delete(path(RBAC, "clusterroles", name=name_of(role)))
        except ApiException as exc:
            if exc.status != 404:
                raise
        deleted.append(name_of(role))
    return deleted
