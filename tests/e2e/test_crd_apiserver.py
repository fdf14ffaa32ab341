"""Generated CRDs against a real kube-apiserver: accepted, enforced, defaulted."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from olmtool import yamlwrite
from olmtool.cluster import ControlPlane

REPO = Path(__file__).resolve().parents[2]
ETCD_CRD = REPO / "operator/config/crd/etcd.olmtool.dev_etcdclusters.yaml"
GROUP = "etcd.olmtool.dev"


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(control_plane.kubeconfig))


def install_crd(api: client.ApiClient, manifest: dict[str, Any]) -> None:
    extensions = client.ApiextensionsV1Api(api)
    extensions.create_custom_resource_definition(json.loads(json.dumps(manifest)))
    name = manifest["metadata"]["name"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = extensions.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        if conditions.get("Established") == "True":
            return
        time.sleep(0.2)
    raise AssertionError(f"{name} not established: {conditions}")


@pytest.fixture(scope="module")
def etcd_crd(api: client.ApiClient) -> dict[str, Any]:
    manifest = yamlwrite.load(ETCD_CRD)
    install_crd(api, manifest)
    return manifest


def cluster(name: str, api: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{api}",
        "kind": "EtcdCluster",
        "metadata": {"name": name},
        "spec": spec,
    }


def create(api: client.ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    version = body["apiVersion"].split("/")[1]
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, version, "default", "etcdclusters", body
    )


def test_etcd_crd_is_accepted_with_both_versions(
    api: client.ApiClient, etcd_crd: dict[str, Any]
) -> None:
    crd = client.ApiextensionsV1Api(api).read_custom_resource_definition(
        etcd_crd["metadata"]["name"]
    )
    assert crd.status.accepted_names.kind == "EtcdCluster"
    assert crd.status.stored_versions == ["v1beta1"]
    assert {v.name: v.served for v in crd.spec.versions} == {"v1alpha1": True, "v1beta1": True}


def test_defaults_are_applied_and_versions_convert(
    api: client.ApiClient, etcd_crd: dict[str, Any]
) -> None:
    created = create(api, cluster("defaults"))
    assert created["spec"] == {
        "replicas": 3,
        "version": "3.5.1",
        "storageSize": "1Gi",
        "backupStorageSize": "1Gi",
        "finalSnapshot": True,
        "nodeLossTimeoutSeconds": 300,
    }
    as_alpha = client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "etcdclusters", "defaults"
    )
    assert as_alpha["apiVersion"] == f"{GROUP}/v1alpha1"
    # a v1alpha1 reader sees its own fields: the v1beta1-only ones are pruned on the way out
    alpha_fields = ("replicas", "version", "storageSize")
    assert as_alpha["spec"] == {k: v for k, v in created["spec"].items() if k in alpha_fields}
    old = create(api, cluster("old-client", "v1alpha1", replicas=1, backupSchedule="@daily"))
    assert old["spec"]["backupSchedule"] == "@daily"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": 4}, "spec.replicas"),
        ({"replicas": 9}, "spec.replicas"),
        ({"replicas": 0}, "spec.replicas"),
        ({"version": "latest"}, "spec.version"),
        ({"storageSize": "ten gigs"}, "spec.storageSize"),
        ({"backupSchedule": "whenever"}, "spec.backupSchedule"),
    ],
)
def test_invalid_spec_is_rejected(
    api: client.ApiClient, etcd_crd: dict[str, Any], spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(ApiException) as raised:
        create(api, cluster("invalid", **spec))
    assert raised.value.status == 422
    assert field in json.loads(raised.value.body)["message"]


def test_scale_subresource_enforces_replicas(
    api: client.ApiClient, etcd_crd: dict[str, Any]
) -> None:
    create(api, cluster("scaled", replicas=3))
    objects = client.CustomObjectsApi(api)
    scale = objects.patch_namespaced_custom_object_scale(
        GROUP, "v1beta1", "default", "etcdclusters", "scaled", {"spec": {"replicas": 5}}
    )
    assert scale["spec"]["replicas"] == 5
    with pytest.raises(ApiException) as raised:
        objects.patch_namespaced_custom_object_scale(
            GROUP, "v1beta1", "default", "etcdclusters", "scaled", {"spec": {"replicas": 4}}
        )
    assert raised.value.status == 422


def test_status_is_kept_and_validated(api: client.ApiClient, etcd_crd: dict[str, Any]) -> None:
    create(api, cluster("with-status"))
    objects = client.CustomObjectsApi(api)
    status = {
        "phase": "Running",
        "readyMembers": 3,
        "currentVersion": "3.5.1",
        "members": [{"name": "with-status-0", "healthy": True, "peerURL": "http://127.0.0.2:2380"}],
        "conditions": [
            {"type": "Available", "status": "True", "reason": "QuorumHealthy", "message": "3/3 members healthy",
             "lastTransitionTime": "2026-11-22T00:00:00Z"}
        ],
    }  # fmt: skip
    updated = objects.patch_namespaced_custom_object_status(
        GROUP, "v1beta1", "default", "etcdclusters", "with-status", {"status": status}
    )
    assert updated["status"]["members"][0]["peerURL"] == "http://127.0.0.2:2380"
    assert updated["status"]["phase"] == "Running"
    with pytest.raises(ApiException) as raised:
        objects.patch_namespaced_custom_object_status(
            GROUP,
            "v1beta1",
            "default",
            "etcdclusters",
            "with-status",
            {"status": {"phase": "Sleeping"}},
        )
    assert raised.value.status == 422


def test_deprecated_version_warns(api: client.ApiClient, etcd_crd: dict[str, Any]) -> None:
    response = client.CustomObjectsApi(api).list_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "etcdclusters", _preload_content=False
    )
    assert "v1alpha1 EtcdCluster is deprecated" in response.headers.get("Warning", "")


def test_unknown_fields_are_pruned(api: client.ApiClient, etcd_crd: dict[str, Any]) -> None:
    created = create(api, cluster("pruned", replicas=1, colour="blue"))
    assert "colour" not in created["spec"]


def test_an_enum_of_on_and_off_reaches_the_apiserver_as_strings(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """kubectl reads YAML with yaml.v2, to which a bare ``on``/``off`` is a boolean: the
    generated CRD and a resource are applied as YAML text, as a user does."""
    from typing import Literal

    from olmtool.cluster.assets import find_kubectl
    from olmtool.crd import CustomResource, Schema, Version

    class SwitchSpec(Schema):
        power: Literal["on", "off"] = "on"

    switch = CustomResource(
        group="switch.olmtool.dev", kind="Switch",
        versions=(Version(name="v1", spec=SwitchSpec, storage=True),),
    )  # fmt: skip
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(yamlwrite.dump(switch.manifest()))
    kubectl = [str(find_kubectl()), f"--kubeconfig={control_plane.kubeconfig}"]

    def run(*args: str) -> str:
        done = subprocess.run([*kubectl, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("apply", "-f", str(crd_file))
    run("wait", "--for=condition=Established", "--timeout=30s", "crd/switches.switch.olmtool.dev")
    (tmp_path / "off.yaml").write_text(
        yamlwrite.dump({"apiVersion": "switch.olmtool.dev/v1", "kind": "Switch",
                     "metadata": {"name": "lamp", "namespace": "default"},
                     "spec": {"power": "off"}})
    )  # fmt: skip
    run("apply", "-f", str(tmp_path / "off.yaml"))
    stored = json.loads(
        run("get", "switches.switch.olmtool.dev", "lamp", "-n", "default", "-o", "json")
    )
    assert stored["spec"] == {"power": "off"}
