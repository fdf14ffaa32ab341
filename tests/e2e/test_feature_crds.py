"""Every field feature of the CRD generator, accepted by a real kube-apiserver."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from olmtool.cluster import ControlPlane
from olmtool.crd import CustomResource, Schema, Version
from tests.crd import features
from tests.e2e.test_crd_apiserver import install_crd

RESOURCES = sorted(
    (name, value) for name, value in vars(features).items() if isinstance(value, CustomResource)
)


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(control_plane.kubeconfig))


@pytest.mark.parametrize(("name", "resource"), RESOURCES, ids=[n for n, _ in RESOURCES])
def test_feature_crd_is_accepted(
    api: client.ApiClient, name: str, resource: CustomResource
) -> None:
    install_crd(api, resource.manifest())
    stored = client.ApiextensionsV1Api(api).read_custom_resource_definition(resource.crd_name)
    assert stored.status.accepted_names.kind == resource.kind


def test_apiserver_and_olmtool_agree_on_nullable_enum(api: client.ApiClient) -> None:
    """A nullable enum (``Literal[...] | None``) accepts null, as pydantic does."""

    class ProbeSpec(Schema):
        mode: Literal["quiet", "normal"] | None = None

    resource = CustomResource(
        group="nullable.olmtool.dev",
        kind="Probe",
        versions=(Version(name="v1", spec=ProbeSpec, storage=True),),
    )
    install_crd(api, resource.manifest())
    objects = client.CustomObjectsApi(api)
    body = {"apiVersion": "nullable.olmtool.dev/v1", "kind": "Probe", "metadata": {"name": "p"},
            "spec": {"mode": None}}  # fmt: skip
    created = objects.create_namespaced_custom_object(
        "nullable.olmtool.dev", "v1", "default", "probes", body
    )
    assert created["spec"].get("mode") is None
    body["metadata"]["name"] = "q"
    body["spec"]["mode"] = "loud"
    with pytest.raises(ApiException) as raised:
        objects.create_namespaced_custom_object(
            "nullable.olmtool.dev", "v1", "default", "probes", body
        )
    assert "spec.mode" in json.loads(raised.value.body)["message"]
