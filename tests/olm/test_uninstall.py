"""``uninstall`` removes what the install created: its plans' objects, cluster-scoped
objects with the CSV's owner labels, and only the CatalogSource/OperatorGroup it made."""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from olmtool.olm.removal import uninstall

JSON = dict[str, Any]
OLM = "/apis/operators.coreos.com"
NS = "ns"
OWNER = {"olm.owner": "op.v1", "olm.owner.namespace": NS, "olm.owner.kind": "ClusterServiceVersion"}


class FakeKube:
    """Objects by REST path; lists by collection path with a label selector."""

    def __init__(self, objects: dict[str, JSON]) -> None:
        self.objects = objects
        self.deleted: list[str] = []
        self.discovery = {
            "/api/v1": [("Secret", "secrets", True), ("ServiceAccount", "serviceaccounts", True)],
            "/apis/scheduling.k8s.io/v1": [("PriorityClass", "priorityclasses", False)],
            "/apis/rbac.authorization.k8s.io/v1": [
                ("ClusterRoleBinding", "clusterrolebindings", False),
                ("ClusterRole", "clusterroles", False),
            ],
        }

    def get(self, path: str, labelSelector: str = "", **_: Any) -> JSON:
        if path in self.discovery:
            return {
                "resources": [
                    {"kind": k, "name": n, "namespaced": ns} for k, n, ns in self.discovery[path]
                ]
            }
        wanted = dict(item.split("=") for item in labelSelector.split(",") if item)
        items = [
            obj
            for where, obj in self.objects.items()
            if where.rpartition("/")[0] == path
            and all((obj["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]
        return {"items": items}

    def get_or_none(self, path: str) -> JSON | None:
        if path in self.discovery:
            return self.get(path)
        return self.objects.get(path)

    def delete(self, path: str) -> JSON:
        if path not in self.objects:
            raise ApiException(status=404)
        self.deleted.append(path)
        return self.objects.pop(path)


def obj(kind: str, name: str, labels: JSON | None = None, **extra: Any) -> JSON:
    return {"kind": kind, "metadata": {"name": name, "labels": labels or {}, **extra}}


def step(group: str, kind: str, name: str, status: str) -> JSON:
    return {
        "status": status,
        "resource": {"group": group, "version": "v1", "kind": kind, "name": name},
    }


def test_uninstall_removes_what_the_plans_created_and_only_that() -> None:
    plan = obj(
        "InstallPlan",
        "install-abcde",
        ownerReferences=[{"name": "op"}],
        creationTimestamp="2026-01-01T10:00:00Z",
    )
    plan["status"] = {
        "plan": [
            step("operators.coreos.com", "ClusterServiceVersion", "op.v1", "Created"),
            step("", "Secret", "made", "Created"),
            step("", "Secret", "there-before", "Present"),
            step("", "Secret", "made-then-retried", "Present"),
            step("rbac.authorization.k8s.io", "ClusterRoleBinding", "admin-binding", "Created"),
            step("scheduling.k8s.io", "PriorityClass", "high", "Created"),
        ]
    }
    sub = obj("Subscription", "op")
    sub["status"] = {"installedCSV": "op.v1"}
    kube = FakeKube(
        {
            f"{OLM}/v1alpha1/namespaces/{NS}/subscriptions/op": sub,
            f"{OLM}/v1alpha1/namespaces/{NS}/installplans/install-abcde": plan,
            f"{OLM}/v1alpha1/namespaces/{NS}/clusterserviceversions/op.v1": obj("CSV", "op.v1"),
            f"/api/v1/namespaces/{NS}/secrets/made": obj("Secret", "made"),
            f"/api/v1/namespaces/{NS}/secrets/there-before": obj(
                "Secret", "there-before", creationTimestamp="2026-01-01T09:59:59Z"
            ),
            f"/api/v1/namespaces/{NS}/secrets/made-then-retried": obj(
                "Secret", "made-then-retried", creationTimestamp="2026-01-01T10:00:01Z"
            ),
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/admin-binding": obj(
                "ClusterRoleBinding", "admin-binding"
            ),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/op.v1-x": obj(
                "ClusterRole", "op.v1-x", OWNER
            ),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/someone-elses": obj(
                "ClusterRole", "someone-elses", {**OWNER, "olm.owner": "other.v1"}
            ),
            "/apis/scheduling.k8s.io/v1/priorityclasses/high": obj("PriorityClass", "high"),
        }
    )
    removed = uninstall(kube, NS, "op")
    assert "Secret made" in removed and "PriorityClass high" in removed
    assert "Secret made-then-retried" in removed  # OLM says Present after a retry
    assert "ClusterRoleBinding admin-binding" in removed and "ClusterRole op.v1-x" in removed
    left = set(kube.objects)
    assert f"/api/v1/namespaces/{NS}/secrets/there-before" in left
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles/someone-elses" in left
    assert f"{OLM}/v1alpha1/namespaces/{NS}/subscriptions/op" not in left


def test_the_cli_prints_what_uninstall_deleted_as_json(
    monkeypatch: Any, capsys: Any, tmp_path: Any
) -> None:
    """``olmtool uninstall -o json``: the typed result, as every other verb has."""
    import importlib
    import json
    import sys

    import pytest

    from olmtool.cli import main

    action = importlib.import_module("olmtool.actions.install")  # the face gives the function

    kube = FakeKube({f"{OLM}/v1alpha1/namespaces/{NS}/subscriptions/op": {"status": {}}})
    kube.close = lambda: None  # type: ignore[attr-defined]
    kube.server, kube.kubeconfig = "https://127.0.0.1:1", tmp_path / "kc"  # type: ignore[attr-defined]
    monkeypatch.setattr(action, "resolve_target", lambda *_: action.Target(tmp_path / "kc"))
    monkeypatch.setattr(action, "connect_olm", lambda *_, **__: kube)
    monkeypatch.setattr(
        sys, "argv", ["olmtool", "uninstall", "op", "--namespace", NS, "-o", "json"]
    )
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code in (0, None)
    result = json.loads(capsys.readouterr().out)
    assert result == {"package": "op", "namespace": NS, "deleted": [f"Subscription {NS}/op"]}
