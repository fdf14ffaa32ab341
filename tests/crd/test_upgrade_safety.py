"""The CRD upgrade safety corpus: one base CRD, one change per case, and the verdict of
OLM v0 (stored versions) and OLM v1 (operator-controller's crdify rules) for each.

Every rule has a case it refuses and a neighbouring change it allows."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.actions import bundle_validate
from olmtool.crd.upgrade import (
    OLM_V0,
    OLM_V1,
    RULE_CHECKS,
    CrdChange,
    compare_crds,
    olm_v0_message,
    storage_versions,
)

CRD = dict[str, Any]
ETCD_BUNDLE = Path(__file__).resolve().parents[2] / "bundle" / "etcd-operator" / "0.5.0"


def base_crd() -> CRD:
    spec_schema = {
        "type": "object",
        "description": "what the user wants",
        "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 7, "default": 3},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "name": {"type": "string", "minLength": 1, "maxLength": 63},
            "tags": {"type": "array", "maxItems": 10, "items": {"type": "string"}},
            "labels": {
                "type": "object",
                "maxProperties": 8,
                "additionalProperties": {"type": "string"},
            },
            "note": {"type": "string"},
            "port": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
                },
                {
                    "name": "v1alpha2",
                    "served": False,
                    "storage": False,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
                },
            ],
        },
    }


def spec_of(crd: CRD, version: int = 0) -> dict[str, Any]:
    return crd["spec"]["versions"][version]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def field(crd: CRD, name: str, version: int = 0) -> dict[str, Any]:
    return spec_of(crd, version)["properties"][name]


def first_version(change: Callable[[CRD, int], object]) -> Callable[[CRD], None]:
    """The change made to v1alpha1 only (v1alpha2 is neither served nor stored)."""

    def apply(crd: CRD) -> None:
        change(crd, 0)

    return apply


@dataclass(frozen=True)
class Case:
    id: str
    change: Callable[[CRD], object]
    rule: str | None  # None: both OLMs allow the upgrade
    version: str = ""
    path: str = ""
    message: str = ""
    olm_v0: bool = False


def _set(name: str, key: str, value: Any) -> Callable[[CRD], None]:
    return first_version(lambda crd, v: field(crd, name, v).__setitem__(key, value))


def _drop(name: str, key: str) -> Callable[[CRD], None]:
    return first_version(lambda crd, v: field(crd, name, v).pop(key))


def _served_v2(crd: CRD, change: Callable[[dict[str, Any]], object]) -> None:
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2.update(name="v1", served=True, storage=False)
    change(v2["schema"]["openAPIV3Schema"]["properties"]["spec"])
    crd["spec"]["versions"].append(v2)


def _remove_stored(crd: CRD) -> None:
    crd["spec"]["versions"] = crd["spec"]["versions"][1:]
    crd["spec"]["versions"][0].update(served=True, storage=True)


def _remove_unstored(crd: CRD) -> None:
    del crd["spec"]["versions"][1]


def _with_conversion(crd: CRD) -> None:
    _served_v2(crd, lambda spec: spec["properties"].pop("note"))
    crd["spec"]["conversion"] = {"strategy": "Webhook"}


V = "v1alpha1"
CASES = [
    Case("identical", lambda crd: None, None),
    Case("scope", lambda crd: crd["spec"].__setitem__("scope", "Cluster"), "scope",
         message='scope changed : "Namespaced" -> "Cluster"'),
    Case("stored-version-removed", _remove_stored, "storedVersionRemoval",
         message="stored versions removed : [v1alpha1]", olm_v0=True),
    Case("unstored-version-removed", _remove_unstored, None),
    Case("version-added", lambda crd: crd["spec"]["versions"].append(
        {**copy.deepcopy(crd["spec"]["versions"][1]), "name": "v2"}), None),
    Case("field-removed", first_version(lambda crd, v: spec_of(crd, v)["properties"].pop("note")),
         "existingFieldRemoval", message="removed field : v1alpha1.^.spec.note"),
    Case("description-added", _set("labels", "description", "free form"), None),
    Case("field-added", first_version(lambda crd, v: spec_of(crd, v)["properties"].__setitem__(
        "color", {"type": "string"})), None),
    Case("required-added", first_version(lambda crd, v: spec_of(crd, v)["required"].append("name")),
         "required", V, "^.spec", "new required fields: [name]"),
    Case("required-dropped", first_version(lambda crd, v: spec_of(crd, v).pop("required")), None),
    Case("enum-added", _set("note", "enum", ["a", "b"]), "enum", V, "^.spec.note",
         'enum constraint added when there was none previously : ["a" "b"]'),
    Case("enum-value-added", _set("mode", "enum", ["fast", "safe", "turbo"]), None),
    Case("enum-value-removed", _set("mode", "enum", ["safe"]), "enum", V, "^.spec.mode",
         'allowed enum values removed : ["fast"]'),
    Case("enum-dropped", _drop("mode", "enum"), "enum", V, "^.spec.mode",
         'allowed enum values removed : ["fast" "safe"]'),
    Case("maximum-lowered", _set("size", "maximum", 5), "maximum", V, "^.spec.size",
         "maximum decreased : 7 -> 5"),
    Case("maximum-raised", _set("size", "maximum", 9), None),
    Case("maximum-new", _set("note", "maxLength", 128), "maxLength", V, "^.spec.note",
         "maxLength constraint added when there was none previously : 128"),
    Case("minimum-raised", _set("size", "minimum", 3), "minimum", V, "^.spec.size",
         "minimum increased : 1 -> 3"),
    Case("minimum-lowered", _set("size", "minimum", 0), None),
    Case("min-length-raised", _set("name", "minLength", 3), "minLength", V, "^.spec.name",
         "minLength increased : 1 -> 3"),
    Case("max-length-lowered", _set("name", "maxLength", 32), "maxLength", V, "^.spec.name",
         "maxLength decreased : 63 -> 32"),
    Case("max-items-lowered", _set("tags", "maxItems", 4), "maxItems", V, "^.spec.tags",
         "maxItems decreased : 10 -> 4"),
    Case("max-properties-lowered", _set("labels", "maxProperties", 2), "maxProperties", V,
         "^.spec.labels", "maxProperties decreased : 8 -> 2"),
    Case("min-items-added", _set("tags", "minItems", 1), "minItems", V, "^.spec.tags",
         "minItems constraint added when there was none previously : 1"),
    Case("bound-removed", _drop("name", "maxLength"), None),
    Case("default-changed", _set("size", "default", 5), "default", V, "^.spec.size",
         'default value changed : "3" -> "5"'),
    Case("default-added", _set("note", "default", "hi"), "default", V, "^.spec.note",
         'default added when there was none previously : "\\"hi\\""'),
    Case("default-removed", _drop("size", "default"), "default", V, "^.spec.size",
         'default value removed : "3"'),
    Case("type-changed", _set("note", "type", "integer"), "type", V, "^.spec.note",
         'type changed : "string" -> "integer"'),
    Case("item-type-changed", first_version(lambda crd, v: field(crd, "tags", v)["items"].__setitem__(
        "type", "integer")), "type", V, "^.spec.tags[*]", 'type changed : "string" -> "integer"'),
    Case("description-changed", _set("size", "description", "how many members"), None),
    Case("format-added", _set("note", "format", "email"), "unhandled", V, "^.spec.note",
         'unhandled changes found (Format "" -> "email")'),
    Case("pattern-changed", _set("name", "pattern", "^[a-z]+$"), "unhandled", V, "^.spec.name",
         'unhandled changes found (Pattern "" -> "^[a-z]+$")'),
    Case("one-of-narrowed", _set("port", "oneOf", [{"type": "integer"}]), "oneOf", V,
         "^.spec.port", 'allowed oneOf schemas removed: [{"type":"string"}]'),
    Case("one-of-added", _set("note", "oneOf", [{"type": "string"}]), "oneOf", V, "^.spec.note",
         "oneOf constraint added when there was none previously"),
    Case("served-pair-field-removed", lambda crd: _served_v2(crd, lambda s: s["properties"].pop("note")),
         "existingFieldRemoval", "v1alpha1 -> v1", "^.spec.note", "removed field : ^.spec.note"),
    Case("served-pair-enum-narrowed",
         lambda crd: _served_v2(crd, lambda s: s["properties"]["mode"].__setitem__("enum", ["fast"])),
         "enum", "v1alpha1 -> v1", "^.spec.mode", 'allowed enum values removed : ["safe"]'),
    Case("served-pair-by-webhook", _with_conversion, None),
    Case("served-pair-compatible", lambda crd: _served_v2(crd, lambda s: None), None),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case) -> None:
    old, new = base_crd(), base_crd()
    case.change(new)
    changes = compare_crds(old, new)
    if case.rule is None:
        assert changes == []
        return
    assert [c.rule for c in changes] == [case.rule], changes
    (change,) = changes
    assert (change.version, change.path, change.message) == (case.version, case.path, case.message)
    assert change.crd == "widgets.example.com"
    assert change.olm_v0 is case.olm_v0
    assert OLM_V1 in change.refused_by


def test_the_corpus_covers_every_rule_both_ways() -> None:
    refused = {c.rule for c in CASES if c.rule}
    assert refused >= {
        "scope", "storedVersionRemoval", "existingFieldRemoval", "required", "enum",
        "maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems",
        "maxProperties", "default", "type", "oneOf", "unhandled",
    }  # fmt: skip
    assert sum(1 for c in CASES if c.rule is None) >= 12
    assert len(CASES) >= 20


def test_served_pairs_ratchet_what_the_old_crd_already_had() -> None:
    old, new = base_crd(), base_crd()
    narrowed = lambda s: s["properties"]["mode"].__setitem__("enum", ["fast"])  # noqa: E731
    _served_v2(old, narrowed)
    _served_v2(new, narrowed)
    assert compare_crds(old, new) == []
    field(new, "size").__setitem__("maximum", 6)
    assert [c.rule for c in compare_crds(old, new)] == ["maximum"]


def test_stored_versions_come_from_status_or_the_path() -> None:
    old, new = base_crd(), base_crd()
    new["spec"]["versions"][0]["storage"] = False
    new["spec"]["versions"][1].update(served=True, storage=True)
    del new["spec"]["versions"][0]
    assert storage_versions(old) == ["v1alpha1"]
    assert [c.rule for c in compare_crds(old, new)] == ["storedVersionRemoval"]
    # an upgrade path that stored v1alpha2 and v1alpha1 along the way
    both = compare_crds(new, new, stored_versions=["v1alpha1", "v1alpha2"])
    assert [c.message for c in both] == ["stored versions removed : [v1alpha1]"]
    old["status"] = {"storedVersions": ["v1alpha2"]}
    assert "storedVersionRemoval" not in {c.rule for c in compare_crds(old, new)}


def test_olm_v0_words_it_as_the_install_plan_does() -> None:
    change = CrdChange("widgets.example.com", "", "", "storedVersionRemoval",
                       "stored versions removed : [v1alpha1 v1beta1]", (OLM_V0, OLM_V1))  # fmt: skip
    assert olm_v0_message(change) == (
        "risk of data loss updating widgets.example.com: new CRD removes version v1alpha1 that is "
        "listed as a stored version on the existing CRD; risk of data loss updating "
        "widgets.example.com: new CRD removes version v1beta1 that is listed as a stored "
        "version on the existing CRD"
    )
    assert change.describe() == (
        'validating upgrade for CRD "widgets.example.com": storedVersionRemoval: '
        "stored versions removed : [v1alpha1 v1beta1]"
    )


def test_v1beta1_crds_get_the_olm_v0_rule_only() -> None:
    old = {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"version": "v1alpha1", "scope": "Namespaced"},
    }
    new = copy.deepcopy(old)
    new["spec"]["version"] = "v1"
    new["spec"]["scope"] = "Cluster"
    (change,) = compare_crds(old, new)
    assert change.rule == "storedVersionRemoval"


def test_messy_crds_give_what_can_be_told_and_never_crash() -> None:
    """Malformed CRDs (others' catalogs): no crash, and only what the data says."""
    v1 = "apiextensions.k8s.io/v1"
    assert compare_crds({}, {}) == []
    assert compare_crds({"apiVersion": v1, "spec": {"versions": "x"}}, {"spec": None}) == []
    # a version named by a number is no name: the stored v1alpha1 is gone, and the
    # missing scope is a changed one
    broken = {"apiVersion": v1, "metadata": {"name": 7}, "spec": {"versions": [{"name": 1}]}}
    changes = compare_crds(base_crd(), broken)
    assert [(c.crd, c.rule, c.message) for c in changes] == [
        ("widgets.example.com", "scope", 'scope changed : "Namespaced" -> ""'),
        ("widgets.example.com", "storedVersionRemoval", "stored versions removed : [v1alpha1]"),
    ]
    # a schema that is not a mapping compares as an empty one: every field is removed
    no_schema = base_crd()
    no_schema["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": "x"}
    removed = {c.message for c in compare_crds(base_crd(), no_schema)}
    assert "removed field : v1alpha1.^.spec.size" in removed


# --- every case through bundle validate --previous: file, line, version and path --------------


def _bundle_with(root: Path, crd: CRD) -> Path:
    shutil.copytree(ETCD_BUNDLE, root)
    (root / "manifests" / "widgets.example.com.crd.yaml").write_text(yaml.safe_dump(crd))
    return root


@pytest.mark.parametrize("case", [c for c in CASES if c.rule], ids=[c.id for c in CASES if c.rule])
def test_case_as_bundle_findings(case: Case, tmp_path: Path) -> None:
    new = base_crd()
    case.change(new)
    previous = _bundle_with(tmp_path / "old", base_crd())
    bundle = _bundle_with(tmp_path / "new", new)
    report = bundle_validate(bundle, previous=previous, select=["olm-v1"])
    found = [f for f in report.findings if f.check.startswith("crd-upgrade/")]
    (finding,) = found
    assert finding.check == RULE_CHECKS[case.rule]
    assert finding.severity == "error"
    assert finding.file.endswith("manifests/widgets.example.com.crd.yaml") and finding.line
    assert finding.message.startswith("upgrade from etcd-operator.v0.5.0: ")
    if case.rule != "storedVersionRemoval":
        where = ": ".join(part for part in (case.version, case.path) if part)
        assert f'validating upgrade for CRD "widgets.example.com": {where}' in finding.message
        assert case.message in finding.message
