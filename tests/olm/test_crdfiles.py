"""The packaged ``operators.coreos.com`` CRDs: current with the schemas, accepted by our
apiserver model, and keeping every field of objects OLM writes."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from olmtool import yamlwrite
from olmtool.crd import check_crd, validate_object
from olmtool.crd.generate import GENERATED_MARK
from olmtool.olm.api import RESOURCES, subscription
from olmtool.olm.api.subscription import SubscriptionSpec
from olmtool.olm.crdfiles import CRD_DIR, main, olm_crds, render_olm_crds

REPO = Path(__file__).resolve().parents[2]
TIME = "2024-05-01T10:00:00Z"


@cache
def _crds() -> dict[str, dict[str, Any]]:
    return {crd["spec"]["names"]["kind"]: crd for crd in olm_crds()}


def _crd(kind: str) -> dict[str, Any]:
    return _crds()[kind]


def test_packaged_files_are_current() -> None:
    """Like ``crd generate --check``: regenerating in memory changes nothing."""
    rendered = {f.name: f.text for f in render_olm_crds()}
    packaged = {p.name: p.read_text(encoding="utf-8") for p in CRD_DIR.glob("*.yaml")}
    assert rendered == packaged
    assert len(rendered) == len(RESOURCES) == 7
    assert all(
        text.startswith(f"# {GENERATED_MARK} from olmtool.olm.api:") for text in packaged.values()
    )


def test_main_check_reports_stale_files_then_writes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--check", "--output", str(tmp_path)]) == 1
    assert "stale: operators.coreos.com_subscriptions.yaml" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    assert main(["--output", str(tmp_path)]) == 0
    assert main(["--check", "--output", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in CRD_DIR.glob("*.yaml")
    )


def test_every_crd_is_accepted_by_the_apiserver_rules() -> None:
    for crd in olm_crds():
        assert [str(v) for v in check_crd(crd)] == [], crd["metadata"]["name"]


def test_names_follow_olm() -> None:
    names = {kind: crd["spec"]["names"] for kind, crd in _crds().items()}
    assert names["ClusterServiceVersion"]["shortNames"] == ["csv", "csvs"]
    assert names["Subscription"]["shortNames"] == ["sub", "subs"]
    assert names["InstallPlan"]["shortNames"] == ["ip"]
    assert names["CatalogSource"]["shortNames"] == ["catsrc"]
    assert names["OperatorGroup"]["shortNames"] == ["og"]
    assert names["OperatorCondition"]["shortNames"] == ["condition"]
    assert "shortNames" not in names["Operator"]
    assert all(n["categories"] == ["olm"] for n in names.values())
    assert _crd("Operator")["spec"]["scope"] == "Cluster"
    versions = {
        v["name"]: (v["served"], v["storage"]) for v in _crd("OperatorGroup")["spec"]["versions"]
    }
    assert versions == {"v1": (True, True), "v1alpha2": (True, False)}
    versions = {
        v["name"]: (v["served"], v["storage"])
        for v in _crd("OperatorCondition")["spec"]["versions"]
    }
    assert versions == {"v1": (True, False), "v2": (True, True)}


def _problems(kind: str, obj: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """(errors, pruned paths) of ``obj`` validated against our CRD for ``kind``."""
    report = validate_object(_crd(kind), obj)
    return list(report.errors), list(report.pruned)


def test_a_field_our_schema_lacks_is_reported_as_pruned() -> None:
    """The check the tests below rely on: a misspelt field (the generator once wrote
    ``startingCsv``) shows up as pruned."""
    sub = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "x"},
        "spec": {"name": "x", "source": "c", "sourceNamespace": "olm", "startingCsv": "y"},
    }
    errors, pruned = _problems("Subscription", sub)
    assert errors == []
    assert pruned, "a field outside the schema must be reported as pruned"


def test_a_subscription_as_olm_writes_it_keeps_every_field() -> None:
    errors, pruned = _problems("Subscription", {
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "etcd"},
        "spec": {
            "source": "cat", "sourceNamespace": "olm", "name": "etcd", "channel": "stable",
            "startingCSV": "etcd.v0.1.0", "installPlanApproval": "Manual",
            "config": {"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                       "resources": {"limits": {"cpu": "1"}}, "nodeSelector": {"a": "b"},
                       "tolerations": [{"key": "k", "operator": "Exists"}]},
        },
        "status": {
            "state": "AtLatestKnown", "currentCSV": "etcd.v0.1.0", "installedCSV": "etcd.v0.1.0",
            "lastUpdated": TIME, "installPlanGeneration": 1,
            "installPlanRef": {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
                               "name": "install-abcde", "namespace": "ns", "uid": "u",
                               "resourceVersion": "1"},
            "installplan": {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
                            "name": "install-abcde", "uuid": "u"},
            "catalogHealth": [{"catalogSourceRef": {"name": "cat"}, "healthy": True,
                               "lastUpdated": TIME}],
            "conditions": [{"type": "CatalogSourcesUnhealthy", "status": "False",
                            "reason": "AllCatalogSourcesHealthy", "lastTransitionTime": TIME}],
        },
    })  # fmt: skip
    assert errors == []
    assert pruned == []


def test_an_installplan_as_olm_writes_it_keeps_every_field() -> None:
    errors, pruned = _problems("InstallPlan", {
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": "install-abcde"},
        "spec": {"clusterServiceVersionNames": ["etcd.v0.1.0"], "approval": "Automatic",
                 "approved": True, "generation": 1},
        "status": {
            "phase": "Complete", "catalogSources": [], "startTime": TIME,
            "conditions": [{"type": "Installed", "status": "True", "lastUpdateTime": TIME,
                            "lastTransitionTime": TIME}],
            "plan": [{"resolving": "etcd.v0.1.0", "status": "Created", "resource": {
                "group": "operators.coreos.com", "version": "v1alpha1",
                "kind": "ClusterServiceVersion", "name": "etcd.v0.1.0", "manifest": "{}",
                "sourceName": "cat", "sourceNamespace": "olm"}}],
            "bundleLookups": [{"path": "img", "identifier": "etcd.v0.1.0", "replaces": "",
                               "catalogSourceRef": {"name": "cat", "namespace": "olm"},
                               "conditions": [{"type": "BundleLookupPending", "status": "True"}]}],
        },
    })  # fmt: skip
    assert errors == []
    assert pruned == []


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0", "0.3.0"])
def test_the_etcd_operator_csvs_keep_every_field(version: str) -> None:
    path = REPO / "bundle" / "etcd-operator" / version / "manifests"
    csv = yamlwrite.plain(yamlwrite.load(path / "etcd-operator.clusterserviceversion.yaml"))
    csv["status"] = {
        "phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed",
        "lastUpdateTime": TIME, "lastTransitionTime": TIME,
        "conditions": [{"phase": "Pending", "reason": "RequirementsUnknown", "message": "m",
                        "lastUpdateTime": TIME, "lastTransitionTime": TIME}],
        "requirementStatus": [{"group": "", "version": "v1", "kind": "ServiceAccount",
                               "name": "etcd-operator", "status": "Present", "message": "",
                               "dependents": [{"group": "rbac.authorization.k8s.io",
                                               "version": "v1", "kind": "PolicyRule",
                                               "status": "Satisfied", "message": "m"}]}],
    }  # fmt: skip
    errors, pruned = _problems("ClusterServiceVersion", csv)
    assert errors == []
    assert pruned == []


def test_operatorgroup_status_and_a_served_old_version() -> None:
    group = {
        "kind": "OperatorGroup", "metadata": {"name": "og"},
        "spec": {"targetNamespaces": ["a"], "serviceAccountName": "sa"},
        "status": {"namespaces": ["a"], "lastUpdated": TIME},
    }  # fmt: skip
    for version in ("v1", "v1alpha2"):
        api_version = f"operators.coreos.com/{version}"
        assert _problems("OperatorGroup", {"apiVersion": api_version, **group}) == ([], [])
    twice = {
        **group,
        "apiVersion": "operators.coreos.com/v1",
        "spec": {"targetNamespaces": ["a", "a"]},
    }
    assert validate_object(_crd("OperatorGroup"), twice).errors  # a set, like real OLM's


def test_the_models_read_what_the_crds_name() -> None:
    """The Python models parse camelCase objects, initialisms included."""
    spec = SubscriptionSpec.model_validate(
        {"source": "c", "sourceNamespace": "olm", "name": "p", "startingCSV": "p.v1"}
    )
    assert spec.starting_csv == "p.v1" and spec.channel is None
    assert subscription.crd_name == "subscriptions.operators.coreos.com"
