"""Golden CRDs for every feature resource, plus targeted checks of the tricky conversions.

``UPDATE_GOLDEN=1 pytest tests/crd/test_golden.py`` rewrites the golden files (and passes);
review the diff before committing it.
"""

import os
from pathlib import Path
from typing import Any

import pytest

from olmtool import yamlwrite
from olmtool.crd import CustomResource, LoadedResource, check_crd, model_to_openapi, render_crd
from olmtool.crd.markers import (
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    MAP_TYPE,
    PRESERVE_UNKNOWN,
    VALIDATIONS,
)
from olmtool.crd.types import QUANTITY_PATTERN
from tests.crd import features

GOLDEN_DIR = Path(__file__).parent / "golden"
RESOURCES = {
    name: value for name, value in vars(features).items() if isinstance(value, CustomResource)
}


def _loaded(attr: str) -> LoadedResource:
    return LoadedResource(RESOURCES[attr], f"tests.crd.features:{attr}")


def _version(resource: CustomResource, name: str) -> dict[str, Any]:
    (version,) = [v for v in resource.manifest()["spec"]["versions"] if v["name"] == name]
    return version


def _spec(resource: CustomResource, version: str = "v1") -> dict[str, Any]:
    return _version(resource, version)["schema"]["openAPIV3Schema"]["properties"]["spec"]


def _walk(node: Any, path: str = "$"):
    """Every schema node (dict) with its path, descending through all sub-schemas."""
    yield path, node
    for name, child in (node.get("properties") or {}).items():
        yield from _walk(child, f"{path}.{name}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            yield from _walk(node[key], f"{path}.{key}")
    for junctor in ("anyOf", "oneOf", "allOf"):
        for index, branch in enumerate(node.get(junctor) or []):
            yield from _walk(branch, f"{path}.{junctor}[{index}]")


def test_every_feature_group_is_declared():
    assert set(RESOURCES) == {
        "scalars",
        "strings",
        "collections",
        "unions",
        "embedded",
        "kubernetes_markers",
        "versions",
    }


@pytest.mark.parametrize("attr", sorted(RESOURCES))
def test_golden(attr):
    generated = render_crd(_loaded(attr))
    golden = GOLDEN_DIR / generated.name
    assert generated.name == f"{features.GROUP}_{RESOURCES[attr].plural_name}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(generated.text, encoding="utf-8")
        return
    assert golden.exists(), f"missing {golden}; run with UPDATE_GOLDEN=1"
    assert generated.text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("attr", sorted(RESOURCES))
def test_no_violations(attr):
    manifest = RESOURCES[attr].manifest()
    assert check_crd(manifest) == []


@pytest.mark.parametrize("attr", sorted(RESOURCES))
def test_golden_is_structural(attr):
    """Independent of olmtool's own checker: the properties a structural schema must have."""
    manifest = yamlwrite.loads(
        (GOLDEN_DIR / f"{features.GROUP}_{RESOURCES[attr].plural_name}.yaml").read_text()
    )
    for version in manifest["spec"]["versions"]:
        root = version["schema"]["openAPIV3Schema"]
        for path, node in _walk(root):
            in_junctor = any(j in path.rsplit(".", 1)[-1] for j in ("anyOf", "oneOf", "allOf"))
            assert not {"$ref", "$defs", "definitions", "const", "title", "prefixItems"} & set(
                node
            ), path
            assert node.get("uniqueItems") is not True, path
            assert node.get("type") != "null", path
            for bound in ("exclusiveMinimum", "exclusiveMaximum"):
                if bound in node:
                    assert node[bound] is True, path
                    assert bound.replace("exclusiveM", "m") in node, path
            if in_junctor:
                continue
            if "anyOf" in node:
                # The only anyOf left is int-or-string's; nullable is never an anyOf branch.
                assert node[INT_OR_STRING] is True, path
                assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
                assert "type" not in node, path
            elif not node.get(PRESERVE_UNKNOWN):
                assert node.get("type") in (
                    "object",
                    "array",
                    "string",
                    "integer",
                    "number",
                    "boolean",
                ), path
            if node.get("type") == "object":
                assert not ("properties" in node and "additionalProperties" in node), path


# --- targeted checks of the conversions most likely to go wrong --------------------------


def test_descriptions():
    spec = model_to_openapi(features.ScalarsSpec)
    # class docstring (multi-line, dedented)
    assert spec["description"] == (
        "ScalarsSpec covers numbers, booleans and enums.\n\n"
        "Its description comes from this (multi-line) class docstring."
    )
    # attribute docstring
    assert spec["properties"]["enabled"]["description"] == "A boolean with a default."
    # Field(description=)
    assert spec["properties"]["percent"]["description"] == "Description from Field(description=)."
    # the field docstring wins over the Enum's class docstring
    assert spec["properties"]["color"]["description"].startswith("A Python str Enum")


def test_field_description_overrides_model_docstring():
    props = model_to_openapi(features.MarkersSpec)["properties"]
    assert props["autoscaling"]["description"].startswith("A field rule merged after")
    assert props["selector"]["description"] == "Field(description=) wins."
    # The model's own docstring is used where the field has none: inside a map.
    volumes = model_to_openapi(features.CollectionsSpec)["properties"]["volumes"]
    assert volumes["additionalProperties"]["description"] == features.Volume.__doc__
    # ...and the shared definition is not modified by the field-level override.
    assert model_to_openapi(features.Autoscaling)["description"] == features.Autoscaling.__doc__


def test_required_and_optional():
    scalars = model_to_openapi(features.ScalarsSpec)
    assert scalars["required"] == ["budget", "replicas"]
    assert "default" not in scalars["properties"]["replicas"]
    # A spec with required fields makes spec required; one without gets `default: {}`.
    root = _version(features.scalars, "v1")["schema"]["openAPIV3Schema"]
    assert root["required"] == ["spec"]
    assert "default" not in root["properties"]["spec"]
    collections_root = _version(features.collections, "v1")["schema"]["openAPIV3Schema"]
    assert "required" not in collections_root
    assert collections_root["properties"]["spec"]["default"] == {}


def test_defaults():
    props = model_to_openapi(features.CollectionsSpec)["properties"]
    assert props["args"]["default"] == ["--serve"]
    assert props["tags"]["default"] == []
    assert props["annotations"]["default"] == {"owner": "features"}
    # Model defaults are serialised by alias, so they survive the apiserver's pruning.
    assert props["limits"]["default"] == {"cpu": "500m", "memory": "1Gi"}
    assert props["ports"]["default"] == [{"name": "client", "port": 2379, "protocol": "TCP"}]
    scalars = model_to_openapi(features.ScalarsSpec)["properties"]
    assert scalars["color"]["default"] == "green"
    assert scalars["ratio"]["default"] == 0.5
    # default_factory without a static default emits no default
    assert "default" not in model_to_openapi(features.MarkersSpec)["properties"]["selector"]


def test_nullable():
    props = model_to_openapi(features.UnionsSpec)["properties"]
    assert props["nickname"] == {
        "description": "Nullable string.",
        "type": "string",
        "nullable": True,
    }
    tls = props["tls"]
    assert tls["type"] == "object" and tls["nullable"] is True and "anyOf" not in tls
    assert tls["properties"]["secretName"]["nullable"] is True
    assert "default" not in tls  # default None is dropped
    assert props["timeout"] == {
        "default": 2.5,
        "description": "Nullable number with a non-null default.",
        "nullable": True,
        "type": "number",
    }
    assert props["items"]["type"] == "array" and props["items"]["nullable"] is True
    assert props["sparse"]["items"] == {"type": "string", "nullable": True}
    assert props["weights"]["additionalProperties"] == {"type": "integer", "nullable": True}
    scalars = model_to_openapi(features.ScalarsSpec)["properties"]
    # the constraint of the non-null branch survives
    assert scalars["weight"]["minimum"] == 0 and scalars["weight"]["nullable"] is True
    # A nullable enum would still reject null on the apiserver (enum is checked first);
    # without nullable the apiserver prunes a null, so the field reads as unset (None).
    assert scalars["priority"]["enum"] == ["low", "high"] and "nullable" not in scalars["priority"]


def test_exclusive_bounds():
    props = model_to_openapi(features.ScalarsSpec)["properties"]
    ratio = props["ratio"]
    assert (ratio["minimum"], ratio["exclusiveMinimum"]) == (0, True)
    assert (ratio["maximum"], ratio["exclusiveMaximum"]) == (1, True)
    port = props["port"]
    assert (port["minimum"], port["exclusiveMinimum"]) == (1024, True)
    assert port["maximum"] == 65535 and "exclusiveMaximum" not in port
    replicas = props["replicas"]
    assert (replicas["minimum"], replicas["maximum"]) == (1, 9)
    assert "exclusiveMinimum" not in replicas and "exclusiveMaximum" not in replicas
    assert props["step"]["multipleOf"] == 0.5


def test_set_becomes_list_type_set():
    props = model_to_openapi(features.CollectionsSpec)["properties"]
    assert props["tags"] == {
        "default": [],
        "description": "A Python set: x-kubernetes-list-type set (never uniqueItems).",
        "items": {"type": "string"},
        "type": "array",
        LIST_TYPE: "set",
    }
    assert props["zones"][LIST_TYPE] == "set" and props["zones"]["maxItems"] == 3
    assert props["order"][LIST_TYPE] == "atomic"
    assert props["ports"][LIST_TYPE] == "map"
    assert props["ports"][LIST_MAP_KEYS] == ["name"]
    assert props["ports"]["items"]["required"] == ["name", "port"]
    assert props["selector"][MAP_TYPE] == "atomic"
    assert props["limits"][MAP_TYPE] == "granular"


def test_const_becomes_enum():
    mode = model_to_openapi(features.ScalarsSpec)["properties"]["mode"]
    assert mode["enum"] == ["Managed"] and mode["type"] == "string" and "const" not in mode
    props = model_to_openapi(features.ScalarsSpec)["properties"]
    assert props["size"]["enum"] == [1, 3, 5] and props["size"]["type"] == "integer"
    assert props["color"]["enum"] == ["red", "green", "blue"] and props["color"]["type"] == "string"


def test_int_or_string():
    props = model_to_openapi(features.UnionsSpec)["properties"]
    assert props["targetPort"] == {
        "description": "Required int-or-string.",
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        INT_OR_STRING: True,
    }
    assert props["maxUnavailable"]["nullable"] is True
    assert props["maxUnavailable"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    memory = props["memory"]
    assert memory[INT_OR_STRING] is True and "type" not in memory
    assert memory["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert memory["pattern"] == QUANTITY_PATTERN
    assert memory["default"] == "1Gi"
    requests = model_to_openapi(features.CollectionsSpec)["properties"]["requests"]
    assert requests["additionalProperties"][INT_OR_STRING] is True


def test_embedded_and_preserve_unknown():
    props = model_to_openapi(features.EmbeddedSpec)["properties"]
    template = props["template"]
    assert template["x-kubernetes-embedded-resource"] is True
    assert template["type"] == "object"
    assert set(template["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    obj = props["object"]
    assert obj == {
        "description": "Any Kubernetes object (EmbeddedObject), nullable.",
        "type": "object",
        "nullable": True,
        "x-kubernetes-embedded-resource": True,
        PRESERVE_UNKNOWN: True,
    }
    assert props["config"]["type"] == "object" and props["config"][PRESERVE_UNKNOWN] is True
    assert "additionalProperties" not in props["config"]
    assert props["value"] == {"description": "Any JSON value: no type, preserve-unknown-fields.",
                              PRESERVE_UNKNOWN: True}  # fmt: skip


def test_field_rule_merged_with_model_rule_on_ref():
    props = model_to_openapi(features.MarkersSpec)["properties"]
    assert props["autoscaling"][VALIDATIONS] == [
        {
            "rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas must not exceed maxReplicas",
        },
        {
            "rule": "self.maxReplicas <= 50",
            "messageExpression": "'maxReplicas is ' + string(self.maxReplicas)",
            "fieldPath": ".maxReplicas",
        },
    ]
    # the field rule stays on the field: the other use of the model only has its own rule
    assert props["fallback"][VALIDATIONS] == [
        {
            "rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas must not exceed maxReplicas",
        }
    ]
    assert props["replicas"][VALIDATIONS] == [{"rule": "self % 2 == 1", "message": "must be odd"}]
    assert props["clusterName"][VALIDATIONS] == [
        {"rule": "self == oldSelf", "message": "is immutable", "reason": "FieldValueForbidden"}
    ]
    assert props["selector"][MAP_TYPE] == "atomic"


def test_names_and_scope():
    spec = features.kubernetes_markers.manifest()["spec"]
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {
        "kind": "ClusterWidget",
        "listKind": "ClusterWidgetList",
        "plural": "clusterwidgets",
        "singular": "clusterwidget",
        "shortNames": ["cw", "cwidget"],
        "categories": ["all", "features"],
    }
    assert features.scalars.manifest()["spec"]["scope"] == "Namespaced"


def test_versions_and_subresources():
    manifest = features.versions.manifest()
    versions = manifest["spec"]["versions"]
    assert [v["name"] for v in versions] == ["v1", "v1beta1", "v1alpha1"]
    v1, v1beta1, v1alpha1 = versions
    assert (v1["served"], v1["storage"]) == (True, True)
    assert v1["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    assert v1beta1["deprecated"] is True and v1beta1["served"] is True
    assert v1beta1["deprecationWarning"].endswith("use features.olmtool.dev/v1")
    assert "subresources" not in v1beta1  # status_subresource=False despite a status model
    assert "status" in v1beta1["schema"]["openAPIV3Schema"]["properties"]
    assert (v1alpha1["served"], v1alpha1["storage"], v1alpha1["deprecated"]) == (False, False, True)
    assert "deprecationWarning" not in v1alpha1
    assert v1["additionalPrinterColumns"] == [
        {"name": "Replicas", "jsonPath": ".spec.replicas", "type": "integer",
         "description": "Desired widgets", "format": "int32"},
        {"name": "Ready", "jsonPath": ".status.readyReplicas", "type": "integer", "priority": 1},
        {"name": "Updated", "jsonPath": ".status.lastUpdate", "type": "string",
         "format": "date-time", "priority": 1},
        {"name": "Age", "jsonPath": ".metadata.creationTimestamp", "type": "date"},
    ]  # fmt: skip


def test_formats():
    props = model_to_openapi(features.StringsSpec)["properties"]
    assert props["host"]["format"] == "hostname"
    assert props["address"] == {
        "description": "Nullable string with a format.",
        "format": "ipv4",
        "type": "string",
        "nullable": True,
    }
    assert props["createdAt"]["format"] == "date-time"
    assert props["expiresAt"]["format"] == "date-time" and props["expiresAt"]["nullable"] is True
    assert props["name"]["minLength"] == 1 and props["name"]["maxLength"] == 63
    assert props["code"]["pattern"] == "^[A-Z]+$" and props["code"]["nullable"] is True
