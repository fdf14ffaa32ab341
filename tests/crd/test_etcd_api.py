"""The etcd operator's EtcdCluster API, as generated into operator/config/crd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from olmtool import yamlwrite
from olmtool.crd import check_crd, generate_crds, load_resources, sync_files, validate_object

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "operator/config/crd/etcd.olmtool.dev_etcdclusters.yaml"


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return yamlwrite.load(CRD_FILE)


def cluster(api: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"etcd.olmtool.dev/{api}",
        "kind": "EtcdCluster",
        "metadata": {"name": "example"},
        "spec": spec,
    }


def test_committed_crd_is_up_to_date() -> None:
    files = generate_crds(load_resources(["etcd_operator.api"], search_path=[REPO / "operator"]))
    result = sync_files(files, CRD_FILE.parent, check=True)
    assert not result.stale, "\n".join(result.diffs)


def test_crd_is_valid_and_has_two_versions(crd: dict[str, Any]) -> None:
    assert check_crd(crd) == []
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert set(versions) == {"v1alpha1", "v1beta1"}
    assert versions["v1beta1"]["storage"] and not versions["v1alpha1"]["storage"]
    assert versions["v1alpha1"]["deprecated"] and versions["v1alpha1"]["served"]
    assert crd["spec"]["scope"] == "Namespaced"


def test_v1beta1_only_adds_fields_to_v1alpha1(crd: dict[str, Any]) -> None:
    """Conversion strategy None needs the same fields: v1beta1 may only add optional ones."""
    versions = {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}

    def fields(schema: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
        found = {}
        for name, child in (schema.get("properties") or {}).items():
            found[prefix + name] = child
            found.update(fields(child, f"{prefix}{name}."))
            if isinstance(child.get("items"), dict):
                found[f"{prefix}{name}[]"] = child["items"]
                found.update(fields(child["items"], f"{prefix}{name}[]."))
        return found

    alpha, beta = fields(versions["v1alpha1"]), fields(versions["v1beta1"])
    assert set(alpha) <= set(beta)
    for name in alpha:
        ignored = ("properties", "description", "items")
        same = {k: v for k, v in alpha[name].items() if k not in ignored}
        assert same == {k: v for k, v in beta[name].items() if k not in ignored}, name
    for added in set(beta) - set(alpha):
        parent, _, leaf = added.rpartition(".")
        required = (beta[parent] if parent else versions["v1beta1"]).get("required", [])
        assert leaf not in required or parent in set(beta) - set(alpha), f"{added} must be optional"


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_valid_clusters(crd: dict[str, Any], version: str) -> None:
    assert validate_object(crd, cluster(version)).errors == []
    full = cluster(
        version, replicas=5, version="3.4.23", storageSize="10Gi", backupSchedule="0 */6 * * *"
    )
    assert validate_object(crd, full).errors == []
    assert (
        validate_object(
            crd, cluster(version, backupSchedule="@daily", storageSize=1073741824)
        ).errors
        == []
    )


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"replicas": 4}, "spec.replicas: 4 is not one of [1, 3, 5, 7]"),
        ({"replicas": 9}, "spec.replicas: 9 is not one of [1, 3, 5, 7]"),
        ({"replicas": "3"}, "spec.replicas: '3' is not of type 'integer'"),
        ({"version": "3.6.0"}, "spec.version: '3.6.0' does not match"),
        ({"version": "latest"}, "spec.version: 'latest' does not match"),
        ({"storageSize": "10 GB"}, "spec.storageSize: '10 GB' does not match"),
        ({"backupSchedule": "every day"}, "spec.backupSchedule: 'every day' does not match"),
        ({"backupSchedule": "* * *"}, "spec.backupSchedule: '* * *' does not match"),
    ],
)
def test_invalid_clusters(crd: dict[str, Any], spec: dict[str, Any], error: str) -> None:
    report = validate_object(crd, cluster(**spec))
    assert any(e.startswith(error) for e in report.errors), report.errors


def test_resources_only_in_v1beta1(crd: dict[str, Any]) -> None:
    resources = {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m"}}
    assert validate_object(crd, cluster("v1beta1", resources=resources)).pruned == []
    assert validate_object(crd, cluster("v1alpha1", resources=resources)).pruned == [
        "spec.resources"
    ]
    bad = validate_object(crd, cluster("v1beta1", resources={"limits": {"memory": "lots"}}))
    assert bad.errors and bad.errors[0].startswith("spec.resources.limits.memory")


def test_unknown_version_and_kind(crd: dict[str, Any]) -> None:
    assert "has no version 'v2'" in validate_object(crd, cluster("v2")).errors[0]
    other = dict(cluster(), kind="EtcdBackup")
    assert "is not a etcd.olmtool.dev EtcdCluster" in validate_object(crd, other).errors[0]
