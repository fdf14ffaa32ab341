"""The registry pod of an image CatalogSource: OLM v0.18.3's shape, run by the image's own
entrypoint (tests/e2e/test_olm_upgrade_scenarios.py runs it on a cluster)."""

from __future__ import annotations

from olmtool.engine.catalogs import _service, _serving_pod

SOURCE = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "CatalogSource",
    "metadata": {"name": "cat", "namespace": "ns", "uid": "u-1"},
    "spec": {"sourceType": "grpc", "image": "localhost:5000/c:1"},
}


def test_the_pod_runs_the_images_entrypoint_with_olms_probes() -> None:
    pod = _serving_pod(SOURCE, "cat-abcde", "localhost:5000/c:1")
    (container,) = pod["spec"]["containers"]
    assert "command" not in container and "args" not in container
    assert container["name"] == "registry-server"
    assert container["ports"] == [{"name": "grpc", "containerPort": 50051}]
    probe = {"exec": {"command": ["grpc_health_probe", "-addr=:50051"]}}
    assert container["readinessProbe"] == {**probe, "initialDelaySeconds": 5, "timeoutSeconds": 5}
    assert container["livenessProbe"] == {**probe, "initialDelaySeconds": 10}
    assert container["resources"] == {"requests": {"cpu": "10m", "memory": "50Mi"}}
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["metadata"]["labels"] == {"olm.catalogSource": "cat", "olm.managed": "true"}
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_pulled_always_unless_named_by_digest() -> None:
    tagged = _serving_pod(SOURCE, "p", "localhost:5000/c:1")
    assert tagged["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    pinned = _serving_pod(SOURCE, "p", "localhost:5000/c@sha256:" + "a" * 64)
    assert pinned["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_the_service_targets_grpc() -> None:
    service = _service(SOURCE)
    assert service["spec"]["selector"] == {"olm.catalogSource": "cat"}
    assert service["spec"]["ports"] == [{"name": "grpc", "port": 50051, "targetPort": 50051}]
