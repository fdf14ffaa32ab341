"""Which claims the provisioner serves, and the volumes it makes for them."""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster.provisioner import (
    PROVISIONED_BY,
    PROVISIONER,
    SELECTED_NODE,
    storage_class,
    volume_for,
    wants_volume,
)

CLASSES = {
    "standard": storage_class(),
    "other": {"metadata": {"name": "other"}, "provisioner": "example.com/nfs"},
}


def claim(**spec: object) -> dict:
    return {
        "metadata": {"name": "data-web-0", "namespace": "ns", "uid": "abc", "resourceVersion": "7"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "2Gi"}},
            **spec,
        },
        "status": {"phase": "Pending"},
    }


def test_storage_class_is_the_default() -> None:
    sc = storage_class()
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert (sc["provisioner"], sc["reclaimPolicy"], sc["volumeBindingMode"]) == (
        PROVISIONER,
        "Delete",
        "WaitForFirstConsumer",  # as kind's local-path class: a volume lives on one node
    )


def chosen(node: str = "olmtool-node2", **spec: object) -> dict:
    made = claim(**spec)
    made["metadata"]["annotations"] = {SELECTED_NODE: node}
    return made


def test_which_claims() -> None:
    assert not wants_volume(claim(storageClassName="standard"), CLASSES)  # no node yet
    assert wants_volume(chosen(storageClassName="standard"), CLASSES)
    immediate = {"standard": {**storage_class(), "volumeBindingMode": "Immediate"}}
    assert wants_volume(claim(storageClassName="standard"), immediate)  # an older cluster's
    assert wants_volume(claim(), CLASSES)  # no class at all
    assert not wants_volume(claim(storageClassName="other"), CLASSES)
    assert not wants_volume(claim(storageClassName="missing"), CLASSES)
    assert not wants_volume(claim(storageClassName="standard", volumeName="pv-1"), CLASSES)
    assert not wants_volume(claim(selector={"matchLabels": {"a": "b"}}), CLASSES)
    bound = claim(storageClassName="standard")
    bound["status"]["phase"] = "Bound"
    assert not wants_volume(bound, CLASSES)


def test_volume_for_a_claim(tmp_path: Path) -> None:
    volume = volume_for(claim(storageClassName="standard"), tmp_path)
    assert volume["metadata"]["name"] == "pvc-abc"
    assert volume["metadata"]["annotations"][PROVISIONED_BY] == PROVISIONER
    spec = volume["spec"]
    assert spec["hostPath"]["path"] == str(tmp_path / "pvc-abc")
    assert spec["capacity"] == {"storage": "2Gi"}
    assert spec["storageClassName"] == "standard"
    assert spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "data-web-0",
        "uid": "abc",
        "resourceVersion": "7",
    }
    assert "storageClassName" not in volume_for(claim(), tmp_path)["spec"]
    assert "nodeAffinity" not in spec


def test_a_volume_lives_on_the_node_the_scheduler_chose(tmp_path: Path) -> None:
    volume = volume_for(chosen(storageClassName="standard"), tmp_path, node="olmtool-node2")
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["olmtool-node2"]}
            ]
        }
    ]
