"""The etcd operator's bundles against a real kube-apiserver: every manifest and the
objects OLM derives from the CSV are accepted, and the CRD upgrades 0.1.0 -> 0.2.0 ->
0.3.0 -> 0.4.0 -> 0.5.0 the way OLM applies them keep existing EtcdClusters readable."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from olmtool import yamlwrite
from olmtool.bundle import load_bundle, validate_bundle
from olmtool.cluster import ControlPlane, start_apiserver

REPO = Path(__file__).resolve().parents[2]
BUNDLES = REPO / "bundle" / "etcd-operator"
VERSIONS = sorted(p.name for p in BUNDLES.iterdir() if p.is_dir())
CRD_NAME = "etcdclusters.etcd.olmtool.dev"
GROUP = "etcd.olmtool.dev"


@pytest.fixture(scope="module")
def api(kube_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    """A control plane of its own: these tests install and upgrade the etcd CRD."""
    plane: ControlPlane
    with start_apiserver(kube_assets, tmp_path_factory.mktemp("bundle-plane")) as plane:
        yield config.new_client_from_config(config_file=str(plane.kubeconfig))


def _manifests(version: str) -> dict[str, Any]:
    """kind -> list of plain documents in a bundle's manifests/."""
    found: dict[str, list[Any]] = {}
    for path in sorted((BUNDLES / version / "manifests").iterdir()):
        for doc in yamlwrite.load_all(path):
            found.setdefault(doc["kind"], []).append(json.loads(json.dumps(yamlwrite.plain(doc))))
    return found


def _apply_crd(api: client.ApiClient, manifest: dict[str, Any]) -> Any:
    """Create, or update in place like OLM's InstallPlan does, then wait for Established."""
    extensions = client.ApiextensionsV1Api(api)
    try:
        current = extensions.read_custom_resource_definition(CRD_NAME)
        manifest["metadata"]["resourceVersion"] = current.metadata.resource_version
        extensions.replace_custom_resource_definition(CRD_NAME, manifest)
    except ApiException as exc:
        if exc.status != 404:
            raise
        extensions.create_custom_resource_definition(manifest)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = extensions.read_custom_resource_definition(CRD_NAME)
        if {c.type: c.status for c in crd.status.conditions or []}.get("Established") == "True":
            served = {v.name for v in crd.spec.versions if v.served}
            if all(_discoverable(api, v) for v in served):
                return crd
        time.sleep(0.2)
    raise AssertionError(f"{CRD_NAME} not established")


def _discoverable(api: client.ApiClient, version: str) -> bool:
    try:
        client.CustomObjectsApi(api).list_namespaced_custom_object(
            GROUP, version, "default", "etcdclusters"
        )
        return True
    except ApiException:
        return False


def _examples(csv: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(csv["metadata"]["annotations"]["alm-examples"])


def test_crd_upgrades_keep_existing_clusters(api: client.ApiClient) -> None:
    objects = client.CustomObjectsApi(api)
    stored_versions = []
    created = []
    for version in VERSIONS:
        manifests = _manifests(version)
        (crd,) = manifests["CustomResourceDefinition"]
        applied = _apply_crd(api, crd)
        stored_versions.append(sorted(applied.status.stored_versions))
        for created_name in created:  # every earlier cluster is readable in every served version
            for served in (v.name for v in applied.spec.versions if v.served):
                obj = objects.get_namespaced_custom_object(
                    GROUP, served, "default", "etcdclusters", created_name
                )
                assert obj["spec"]["replicas"] == 3
        (csv,) = manifests["ClusterServiceVersion"]
        for example in _examples(csv):
            example["metadata"]["name"] = f"example-{version.replace('.', '-')}"
            api_version = example["apiVersion"].split("/")[1]
            objects.create_namespaced_custom_object(
                GROUP, api_version, "default", "etcdclusters", example
            )
            created.append(example["metadata"]["name"])
    assert stored_versions == [
        ["v1alpha1"],
        ["v1alpha1"],
        ["v1alpha1", "v1beta1"],
        ["v1alpha1", "v1beta1"],
        ["v1alpha1", "v1beta1"],
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_csv_derived_objects_are_accepted(api: client.ApiClient, version: str) -> None:
    """What OLM creates from the CSV (Deployment, ServiceAccount, Role, ClusterRole) and
    the extra manifests pass the apiserver's validation (server-side dry run)."""
    manifests = _manifests(version)
    (csv,) = manifests["ClusterServiceVersion"]
    install = csv["spec"]["install"]["spec"]
    core, apps, rbac = (
        client.CoreV1Api(api),
        client.AppsV1Api(api),
        client.RbacAuthorizationV1Api(api),
    )
    accepted = []
    for deployment in install["deployments"]:
        body = {"metadata": {"name": deployment["name"]}, "spec": deployment["spec"]}
        created = apps.create_namespaced_deployment("default", body, dry_run="All")
        accepted.append(created.kind)
        container = created.spec.template.spec.containers[0]
        assert container.env[0].value_from.field_ref.field_path == (
            "metadata.annotations['olm.targetNamespaces']"
        )
        account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        accepted.append(
            core.create_namespaced_service_account(
                "default", {"metadata": {"name": account}}, dry_run="All"
            ).kind
        )
    for entry in install.get("permissions", []):
        body = {"metadata": {"name": f"{csv['metadata']['name']}-role"}, "rules": entry["rules"]}
        accepted.append(rbac.create_namespaced_role("default", body, dry_run="All").kind)
    for entry in install.get("clusterPermissions", []):
        body = {"metadata": {"name": f"{csv['metadata']['name']}-role"}, "rules": entry["rules"]}
        accepted.append(rbac.create_cluster_role(body, dry_run="All").kind)
    for service in manifests.get("Service", []):
        accepted.append(core.create_namespaced_service("default", service, dry_run="All").kind)
    assert accepted[:3] == ["Deployment", "ServiceAccount", "Role"]
    assert ("ClusterRole" in accepted) == bool(install.get("clusterPermissions"))


@pytest.mark.parametrize("policy", ["Always", "", "OnFailure", "Never"])
def test_deployment_restart_policy_verdict_is_the_apiservers(
    api: client.ApiClient, policy: str, tmp_path: Path
) -> None:
    """``csv/deployment`` flags a pod template restartPolicy exactly when the apiserver
    refuses the Deployment OLM would create from the CSV."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLES / VERSIONS[-1], bundle)
    (csv_path,) = (bundle / "manifests").glob("*.clusterserviceversion.yaml")
    csv = yamlwrite.load(csv_path)
    deployment = csv["spec"]["install"]["spec"]["deployments"][0]
    deployment["spec"]["template"]["spec"]["restartPolicy"] = policy
    csv_path.write_text(yamlwrite.dump(csv))
    body = {"metadata": {"name": deployment["name"]}, "spec": yamlwrite.plain(deployment["spec"])}
    try:
        client.AppsV1Api(api).create_namespaced_deployment("default", body, dry_run="All")
        refused = False
    except ApiException as exc:
        assert exc.status == 422, exc
        refused = True
    flagged = [
        f
        for f in validate_bundle(load_bundle(bundle)).findings
        if f.check == "csv/deployment" and "restartPolicy" in f.message
    ]
    assert bool(flagged) == refused == (policy not in ("Always", ""))
