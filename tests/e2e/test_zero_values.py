"""Empty strings, zeros and falses in custom resources are accepted, as on a real cluster.

Kubernetes 1.20 built with Go >= 1.16 takes ``""``, ``0`` and ``false`` for null in its
OpenAPI validators (kubernetes/kubernetes#99804) unless the build applies the upstream
fix (kube-openapi#230), which ``build-kube-assets.sh`` does. Real OLM writes
``status.bundleLookups[].replaces: ""`` into every InstallPlan: without the fix it
cannot install anything. Each write path the apiserver has is tried.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from olmtool.cluster import ControlPlane
from tests.e2e.helpers import established, wait_for

GROUP = "zero.olmtool.dev"
PLURAL = "zeroes"
FIELDS = {"text": {"type": "string"}, "count": {"type": "integer"}, "flag": {"type": "boolean"}}
ZERO = {"text": "", "count": 0, "flag": False}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {"kind": "Zero", "plural": PLURAL, "singular": "zero", "listKind": "ZeroList"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            part: {
                                "type": "object",
                                "properties": {
                                    **FIELDS,
                                    "items": {
                                        "type": "array",
                                        "items": {"type": "object", "properties": FIELDS},
                                    },
                                },
                            }
                            for part in ("spec", "status")
                        },
                    }
                },
            }
        ],
    },
}
BASE = f"/apis/{GROUP}/v1/namespaces/default/{PLURAL}"


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {control_plane.token}"}
    trust = ssl.create_default_context(cafile=str(control_plane.ca_file))
    with httpx.Client(base_url=control_plane.server, headers=headers, verify=trust) as http:
        created = http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD)
        assert created.status_code in (201, 409), created.text
        _wait_established(http)
        yield http


def _wait_established(http: httpx.Client) -> None:
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}"
    wait_for(lambda: established(http.get(path).json()), 30, "the CRD established")


def _zero_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Zero",
        "metadata": {"name": name},
        "spec": {**ZERO, "items": [ZERO]},
    }


def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code < 300, response.text
    return response.json()


def _assert_zero(part: dict[str, Any]) -> None:
    assert {k: part[k] for k in ZERO} == ZERO
    assert part["items"] == [ZERO]


def test_create_and_update_keep_zero_values(api: httpx.Client) -> None:
    created = _ok(api.post(BASE, json=_zero_object("create")))
    _assert_zero(created["spec"])
    created["spec"]["text"] = "x"
    updated = _ok(api.put(f"{BASE}/create", json=created))
    updated["spec"]["text"] = ""
    _assert_zero(_ok(api.put(f"{BASE}/create", json=updated))["spec"])


def test_status_subresource_takes_zero_values(api: httpx.Client) -> None:
    obj = _ok(api.post(BASE, json=_zero_object("status")))
    obj["status"] = {**ZERO, "items": [ZERO]}
    _assert_zero(_ok(api.put(f"{BASE}/status/status", json=obj))["status"])


def test_merge_and_json_patches_take_zero_values(api: httpx.Client) -> None:
    _ok(api.post(BASE, json=_zero_object("patch")))
    merge = {"Content-Type": "application/merge-patch+json"}
    body = json.dumps({"status": {**ZERO, "items": [ZERO]}})
    _assert_zero(_ok(api.patch(f"{BASE}/patch/status", content=body, headers=merge))["status"])
    json_patch = {"Content-Type": "application/json-patch+json"}
    ops = json.dumps([{"op": "replace", "path": f"/spec/{k}", "value": v} for k, v in ZERO.items()])
    _assert_zero(_ok(api.patch(f"{BASE}/patch", content=ops, headers=json_patch))["spec"])


def test_server_side_apply_takes_zero_values(api: httpx.Client) -> None:
    apply = {"Content-Type": "application/apply-patch+yaml"}
    body = json.dumps(_zero_object("applied"))
    params = {"fieldManager": "olmtool-test", "force": "true"}
    applied = _ok(api.patch(f"{BASE}/applied", content=body, headers=apply, params=params))
    _assert_zero(applied["spec"])
    status = json.dumps({**_zero_object("applied"), "status": {**ZERO, "items": [ZERO]}})
    done = _ok(api.patch(f"{BASE}/applied/status", content=status, headers=apply, params=params))
    _assert_zero(done["status"])
