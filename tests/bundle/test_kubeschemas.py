"""The packaged Kubernetes 1.20 schemas: how they are generated from swagger.json, that the
packaged file is what the generator makes of the real source (when it is at hand), and
that validation against them behaves as the apiserver does."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
import yaml

from olmtool.bundle import kubeschemas
from olmtool.bundle.objectschemas import csv_schema, object_problems
from olmtool.crd.validation import compiled, validate_against

REPO = Path(__file__).resolve().parents[2]


def _ref(name: str) -> dict:
    return {"$ref": f"#/definitions/{name}"}


def _swagger() -> dict:
    """A small swagger.json in Kubernetes' shape: a root kind with metadata, status, an
    IntOrString, a Quantity map, an enum field (PodSpec.restartPolicy) and an unenforced
    required field."""
    root = "io.k8s.api.core.v1.Service"
    return {
        "definitions": {
            root: {
                "type": "object",
                "required": ["spec"],
                "x-kubernetes-group-version-kind": [
                    {"group": "", "kind": "Service", "version": "v1"}
                ],
                "properties": {
                    "apiVersion": {"type": "string", "description": "dropped"},
                    "metadata": _ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                    "spec": _ref("io.k8s.api.core.v1.PodSpec"),
                    "status": {"type": "object", "properties": {"x": {"type": "string"}}},
                },
            },
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
            },
            "io.k8s.api.core.v1.PodSpec": {
                "type": "object",
                "required": ["port"],
                "properties": {
                    "port": _ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
                    "limits": {
                        "type": "object",
                        "additionalProperties": _ref(
                            "io.k8s.apimachinery.pkg.api.resource.Quantity"
                        ),
                    },
                    "restartPolicy": {"type": "string"},
                    "raw": _ref("io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"),
                    "data": {
                        "type": "object",
                        "additionalProperties": {"type": "string", "format": "byte"},
                    },
                },
            },
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
                "type": "string",
                "format": "int-or-string",
            },
            "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
            "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"type": "object"},
        }
    }


def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator's tables cut down to the small swagger's definitions."""
    monkeypatch.setattr(kubeschemas, "ROOTS", ("io.k8s.api.core.v1.Service",))
    monkeypatch.setattr(kubeschemas, "DEPLOYMENT_SPEC", "io.k8s.api.core.v1.PodSpec")
    enum = ("io.k8s.api.core.v1.PodSpec", "restartPolicy")
    monkeypatch.setattr(kubeschemas, "ENUMS", {enum: kubeschemas.ENUMS[enum]})


def _generated(monkeypatch: pytest.MonkeyPatch) -> dict:
    _small(monkeypatch)
    document = kubeschemas.generate(_swagger(), "0" * 64)
    return json.loads(kubeschemas.render(document))


def test_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _generated(monkeypatch)
    assert out["kubernetes"] == "1.20.2" and out["source"]["sha256"] == "0" * 64
    assert out["kinds"] == {"io.k8s.api.core.v1.Service": {"apiVersion": "v1", "kind": "Service"}}
    definitions = out["definitions"]
    service = definitions["io.k8s.api.core.v1.Service"]
    assert service["properties"]["metadata"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert service["properties"]["status"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert "description" not in service["properties"]["apiVersion"]
    pod = definitions["io.k8s.api.core.v1.PodSpec"]
    assert pod["properties"]["restartPolicy"]["enum"] == ["", "Always", "OnFailure", "Never"]
    assert pod["properties"]["data"]["additionalProperties"] == {"format": "byte", "type": "string"}
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "x-kubernetes-int-or-string": True
    }
    assert definitions["io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"][
        "x-kubernetes-preserve-unknown-fields"
    ]


def test_a_recursive_definition_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    swagger = _swagger()
    swagger["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["self"] = _ref(
        "io.k8s.api.core.v1.Service"
    )
    monkeypatch.setattr(kubeschemas, "ROOTS", ("io.k8s.api.core.v1.Service",))
    with pytest.raises(ValueError, match="recursive definition"):
        kubeschemas.generate(swagger, "")


def test_the_packaged_file_names_its_source_and_version() -> None:
    head = json.loads(kubeschemas.PACKAGED.read_text().split("\n", 1)[0] + "}}")
    assert head["kubernetes"] == "1.20.2"
    assert head["source"]["file"] == "api/openapi-spec/swagger.json"
    assert "1.20.5+really1.20.2-1.1+deb12u1" in head["source"]["package"]
    assert len(head["source"]["sha256"]) == 64
    kinds = {kind for _, kind in kubeschemas.kinds()}
    assert kinds >= {
        "Service", "ConfigMap", "Secret", "ServiceAccount", "Role", "ClusterRole",
        "RoleBinding", "ClusterRoleBinding", "PodDisruptionBudget", "PriorityClass",
        "NetworkPolicy",
    }  # fmt: skip


def test_package_data_ships_the_schemas() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    data = pyproject["tool"]["setuptools"]["package-data"]
    assert "schemas/*.json" in data["olmtool.bundle"]
    assert kubeschemas.PACKAGED.parent.name == "schemas"


@pytest.mark.skipif(
    not os.environ.get("OLMTOOL_KUBE_SOURCE"),
    reason="set OLMTOOL_KUBE_SOURCE to Kubernetes 1.20.2's swagger.json, source tree or the "
    "Debian source package's orig tarball (apt-get source --download-only "
    "kubernetes=1.20.5+really1.20.2-1.1+deb12u1) to regenerate and compare",
)
def test_the_packaged_file_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert kubeschemas.main(["--check"]) == 0, capsys.readouterr()


def test_check_without_a_source_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OLMTOOL_KUBE_SOURCE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert kubeschemas.main(["--check"]) == 2
    assert "apt-get source --download-only kubernetes=" in capsys.readouterr().err


def test_check_compares_with_a_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small(monkeypatch)
    source = tmp_path / "swagger.json"
    source.write_text(json.dumps(_swagger()))
    output = tmp_path / "out.json"
    args = ["--source", str(source), "--output", str(output)]
    assert kubeschemas.main(["--check", *args]) == 1  # missing: stale
    assert kubeschemas.main(args) == 0
    assert kubeschemas.main(["--check", *args]) == 0


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"spec": {"ports": [{"port": 80, "targetPort": "http"}]}}, []),
        ({"spec": {"ports": [{"port": "80"}]}}, [("error", "spec.ports[0].port")]),
        ({"spec": {"ports": [{"targetPort": 80}]}}, [("error", "spec.ports[0].port")]),
        ({"spec": {"type": "Internal"}}, [("error", "spec.type")]),
        ({"spec": {"type": ""}}, []),  # unset: defaulted
        ({"spec": {"clusterIP": None}}, []),  # null: dropped
        ({"spec": {"selectr": {}}}, [("warning", "spec.selectr")]),
        ({"status": {"loadBalancer": {}}, "metadata": {"x": 1}}, []),
    ],
)
def test_a_service(document: dict, expected: list) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, **document}
    found = [(p.severity, p.path) for p in object_problems(service)]
    assert found == expected


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"kind": "Secret", "data": {"a": "not base64!"}}, "data.a"),
        ({"kind": "ConfigMap", "data": {"a": 1}}, "data.a"),
        (
            {"kind": "ClusterRoleBinding", "roleRef": {"kind": "Role", "name": "r"}},
            "roleRef.apiGroup",
        ),
        ({"kind": "Role", "rules": [{"apiGroups": [""]}]}, "rules[0].verbs"),
    ],
)
def test_other_kinds(document: dict, path: str) -> None:
    group = "rbac.authorization.k8s.io/v1" if "Role" in document["kind"] else "v1"
    found = [(p.severity, p.path) for p in object_problems({"apiVersion": group, **document})]
    assert found == [("error", path)]


def test_kinds_without_a_schema_are_skipped() -> None:
    assert object_problems({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget"}) == []
    assert object_problems({"apiVersion": "example.com/v1", "kind": "Widget", "x": 1}) == []
    assert object_problems({"kind": "Service"}) == []


def test_compiled_validators_are_cached_per_schema() -> None:
    schema = kubeschemas.deployment_spec_schema()
    assert schema is kubeschemas.deployment_spec_schema()
    assert compiled(schema) is compiled(schema)
    assert compiled(csv_schema()) is compiled(csv_schema())


def test_every_violation_with_its_path() -> None:
    report = validate_against(
        {"replicas": "x", "template": {"spec": {"containers": [{}, {"name": 1}]}}},
        kubeschemas.deployment_spec_schema(),
        "spec",
    )
    assert sorted((v.keyword, v.path) for v in report.violations) == [
        ("required", "spec.selector"),
        ("required", "spec.template.spec.containers[0].name"),
        ("type", "spec.replicas"),
        ("type", "spec.template.spec.containers[1].name"),
    ]


# -- differential: the CSV's Deployment spec as real OLM v0.18.3's CRD types it --------------

PEERS = Path(os.environ.get("OLMTOOL_PEERS", REPO.parent / "shared" / "peers"))
REAL_CSV_CRD = PEERS / "olm-crds" / "0000_50_olm_00-clusterserviceversions.crd.yaml"


def _constraints(node: dict) -> tuple:
    kind = node.get("type")
    if node.get("x-kubernetes-int-or-string"):
        kind = "int-or-string"
    return kind, sorted(node.get("required") or []), node.get("pattern")


def _differences(ours: dict, real: dict, path: str = "") -> list[str]:
    """Paths where both type a node and disagree (type, required, pattern)."""
    if real.get("x-kubernetes-preserve-unknown-fields") and "properties" not in real:
        return []  # real keeps it whole (ObjectMeta): ours is stricter by Go's types only
    found = [path] if _constraints(ours) != _constraints(real) else []
    ours_props, real_props = ours.get("properties") or {}, real.get("properties") or {}
    for name in sorted(set(ours_props) & set(real_props)):
        found += _differences(ours_props[name], real_props[name], f"{path}.{name}")
    assert set(real_props) <= set(ours_props), (path, set(real_props) - set(ours_props))
    for key, step in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(ours.get(key), dict) and isinstance(real.get(key), dict):
            found += _differences(ours[key], real[key], f"{path}{step}")
    return found


@pytest.mark.skipif(not REAL_CSV_CRD.is_file(), reason=f"no real OLM CRDs in {PEERS}")
def test_deployment_spec_matches_real_olms_crd() -> None:
    crd = yaml.load(REAL_CSV_CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for step in ("spec", "install", "spec", "deployments"):
        schema = schema["properties"][step]
    real = schema["items"]["properties"]["spec"]
    assert _differences(kubeschemas.deployment_spec_schema(), real) == []


def test_unenforced_required_fields_count_only_in_the_csv() -> None:
    header = "io.k8s.api.core.v1.HTTPHeader"
    assert kubeschemas.resolved(header)["required"] == ["name"]
    assert kubeschemas.resolved(header, in_crd=True)["required"] == ["name", "value"]
