"""The held-back case: a release whose CRD stops listing a version clusters store.

The etcd operator's 0.1.0 and 0.2.0 stored EtcdClusters as v1alpha1; 0.3.0 to 0.5.0
store v1beta1 and keep v1alpha1 listed. A 0.6.0 that drops v1alpha1 breaks every cluster
that came from 0.1.0 or 0.2.0 (OLM v0: "risk of data loss"), however it got to 0.5.0.
Each surface says so with the edge named: ``catalog validate``, the static ``test
upgrade`` (table and JUnit), ``bundle validate --previous`` and ``bundle release``. The repository's own catalog and bundles pass.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.actions import bundle_release, bundle_validate, catalog_validate, upgrade_test
from olmtool.catalog import load_catalog, render_config, validate_catalog
from olmtool.catalog.declcfg import PROP_BUNDLE_OBJECT
from olmtool.olm import plan_junit_xml

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = "etcd.olmtool.dev_etcdclusters.yaml"
CRD_NAME = "etcdclusters.etcd.olmtool.dev"
DROPPED = (
    f"risk of data loss updating {CRD_NAME}: new CRD removes version v1alpha1 that is "
    "listed as a stored version on the existing CRD"
)


def without_v1alpha1(crd: dict[str, Any]) -> dict[str, Any]:
    crd = json.loads(json.dumps(crd))
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] != "v1alpha1"]
    return crd


def test_the_repository_catalog_and_bundles_pass() -> None:
    assert not [
        f for f in validate_catalog(REPO / "catalog").findings if f.check.startswith("crd-")
    ]
    for older, newer in [("0.4.0", "0.5.0"), ("0.2.0", "0.3.0")]:
        report = bundle_validate(
            REPO / "bundle/etcd-operator" / newer, previous=REPO / "bundle/etcd-operator" / older
        )
        assert report.errors == [], [str(f) for f in report.errors]


def held_back_catalog(root: Path) -> Path:
    """The repository's catalog with 0.5.0's CRD made to drop v1alpha1."""
    config = load_catalog(REPO / "catalog").config
    bundle = next(b for b in config.bundles if b.name == "etcd-operator.v0.5.0")
    for prop in bundle.properties:
        if prop.type != PROP_BUNDLE_OBJECT:
            continue
        manifest = json.loads(base64.b64decode(prop.value["data"]))
        if manifest.get("kind") == "CustomResourceDefinition":
            edited = json.dumps(without_v1alpha1(manifest), separators=(",", ":"), sort_keys=True)
            prop.value = {"data": base64.b64encode(edited.encode()).decode()}
    package = root / "catalog" / "etcd-operator"
    package.mkdir(parents=True)
    (package / "catalog.json").write_text(render_config(config))
    return root / "catalog"


def test_catalog_validate_refuses_the_edge(tmp_path: Path) -> None:
    """The edges into 0.5.0 from 0.1.0 and 0.2.0 (skipRange) break directly, those from
    0.3.0 and 0.4.0 on clusters that came from 0.1.0/0.2.0 (v1alpha1 accumulated along
    the path)."""
    held_back_catalog(tmp_path)
    report = catalog_validate(tmp_path / "catalog")
    (found,) = [f for f in report.findings if f.check == "crd-upgrade/stored-versions"]
    assert found.severity == "error" and found.scope == 'bundle "etcd-operator.v0.5.0"'
    assert found.message.startswith(
        "upgrades from etcd-operator.v0.1.0 (skipRange in channel stable), "
        "etcd-operator.v0.2.0 (skipRange in channel stable), etcd-operator.v0.3.0 "
        "(skipRange in channel stable) and 1 more: OLM v0 and v1 refuse it: "
    )
    assert DROPPED in found.message
    assert found.file.endswith("catalog/etcd-operator/catalog.json") and found.line
    assert not report.passed()


def test_static_test_upgrade_fails_the_hop(tmp_path: Path) -> None:
    plan = upgrade_test(held_back_catalog(tmp_path), "etcd-operator")
    refused = [p for p in plan.problems if p.kind == "crd-stored-versions"]
    assert [p.bundle for p in refused] == ["etcd-operator.v0.2.0", "etcd-operator.v0.1.0"]
    assert refused[0].message == (
        f"hop etcd-operator.v0.2.0 -> etcd-operator.v0.5.0 fails: OLM v0 refuses it: {DROPPED}"
    )
    assert not plan.passed
    xml = plan_junit_xml(plan)
    assert xml.count("<failure ") == 2 and 'name="etcd-operator.v0.1.0"' in xml
    assert upgrade_test(REPO / "catalog", "etcd-operator").passed


def test_bundle_validate_previous_names_the_release(tmp_path: Path) -> None:
    bundle = tmp_path / "0.6.0"
    shutil.copytree(REPO / "bundle/etcd-operator/0.5.0", bundle)
    crd_path = bundle / "manifests" / CRD_FILE
    crd_path.write_text(yaml.safe_dump(without_v1alpha1(yaml.safe_load(crd_path.read_text()))))
    # against 0.2.0, which stores v1alpha1: refused
    report = bundle_validate(bundle, previous=REPO / "bundle/etcd-operator/0.2.0")
    stored = [f for f in report.findings if f.check == "crd-upgrade/stored-versions"]
    assert [f.severity for f in stored] == ["error"]
    assert (
        stored[0].message
        == f"upgrade from etcd-operator.v0.2.0: OLM v0 and v1 refuse it: {DROPPED}"
    )
    assert stored[0].file.endswith(f"manifests/{CRD_FILE}") and stored[0].line
    # against 0.5.0, which lists v1alpha1 but stores v1beta1: a warning, the history named
    report = bundle_validate(bundle, previous=REPO / "bundle/etcd-operator/0.5.0")
    (warned,) = [f for f in report.findings if f.check == "crd-upgrade/stored-versions"]
    assert warned.severity == "warning"
    assert "etcd-operator.v0.5.0 lists v1alpha1 without storing it" in warned.message


def test_bundle_validate_previous_reports_olm_v1_rules(tmp_path: Path) -> None:
    """0.2.0 -> 0.3.0 tightened storageSize: a warning, an error for OLM v1."""
    older, newer = REPO / "bundle/etcd-operator/0.2.0", REPO / "bundle/etcd-operator/0.3.0"
    report = bundle_validate(newer, previous=older)
    assert {(f.check, f.severity) for f in report.findings} == {
        ("crd-upgrade/bounds", "warning"),
        ("crd-upgrade/unhandled", "warning"),
    }
    assert all(".properties.storageSize" in (f.path or "") for f in report.findings)
    strict = bundle_validate(newer, previous=older, select=["olm-v1"])
    assert {f.severity for f in strict.findings if f.check.startswith("crd-upgrade/")} == {"error"}


def test_bundle_release_warns_at_once(tmp_path: Path) -> None:
    for name in ("olmtool.yaml", "operator", "bundle"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        else:
            shutil.copyfile(source, tmp_path / name)
    crd_path = tmp_path / "operator/config/crd" / CRD_FILE
    crd_path.write_text(yaml.safe_dump(without_v1alpha1(yaml.safe_load(crd_path.read_text()))))
    result = bundle_release("0.6.0", config=tmp_path / "olmtool.yaml")
    assert result.notes == [
        f"[crd-upgrade/stored-versions] upgrade from etcd-operator.v0.5.0: OLM v0 and v1 refuse it: {DROPPED}"
    ]


@pytest.mark.parametrize("previous", ["0.4.0", "0.5.0"])
def test_bundle_release_is_quiet_when_the_crds_are_safe(tmp_path: Path, previous: str) -> None:
    for name in ("olmtool.yaml", "operator", "bundle"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, tmp_path / name)
    result = bundle_release("0.6.0", config=tmp_path / "olmtool.yaml", replaces=previous)
    assert result.notes == []
