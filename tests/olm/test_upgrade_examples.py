"""``test upgrade``'s alm-examples: created at their kind's scope (discovery) and deleted
there, ``--examples ready|create|none``, and the summary table at 80 columns; on a fake
kube (no cluster; the real runs are in tests/e2e/test_upgrade_olm)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from rich.console import Console
from typer.testing import CliRunner

from olmtool.actions.upgrade_testing import upgrade_test_dynamic
from olmtool.cli import app
from olmtool.cli.output import error_line
from olmtool.cli.testing import print_report
from olmtool.errors import ArgumentError
from olmtool.olm import upgrade_run
from olmtool.olm.resolver.plan import BundlePath, UpgradePlan
from olmtool.olm.upgrade_report import UpgradeReport
from olmtool.olm.upgrade_run import Hop, UpgradeRun, clean_up, run_upgrade

REPO = Path(__file__).resolve().parents[2]
GROUP = "/apis/etcd.olmtool.dev/v1beta1"
START, HEAD = "etcd-operator.v0.2.0", "etcd-operator.v0.3.0"
NS = "ns1"
DISCOVERY = {
    GROUP: {
        "kind": "APIResourceList",
        "groupVersion": "etcd.olmtool.dev/v1beta1",
        "resources": [
            {"name": "etcdclusters", "kind": "EtcdCluster", "namespaced": True},
            {"name": "etcdclusters/status", "kind": "EtcdCluster", "namespaced": True},
            {"name": "etcdbackupstores", "kind": "EtcdBackupStore", "namespaced": False},
        ],
    }
}
CLUSTER_EXAMPLE = {
    "apiVersion": "etcd.olmtool.dev/v1beta1",
    "kind": "EtcdBackupStore",
    # a namespace in a cluster-scoped example: the apiserver would refuse it
    "metadata": {"name": "shared", "namespace": "ignored"},
    "spec": {"bucket": "b"},
}
NAMESPACED_EXAMPLE = {
    "apiVersion": "etcd.olmtool.dev/v1beta1",
    "kind": "EtcdCluster",
    "metadata": {"name": "example"},
    "spec": {"replicas": 3},
}


def _not_found() -> ApiException:
    return ApiException(status=404, reason="Not Found")


class FakeKube:
    """Discovery, the examples by path (each at its kind's scope, as the apiserver
    insists), the run's InstallPlans; ``ready`` gives created objects a Running phase."""

    def __init__(self, ready: bool = True) -> None:
        self.ready = ready
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.plans = [
            {
                "metadata": {"name": "upgrade"},
                "spec": {"clusterServiceVersionNames": [HEAD], "approved": False},
                "status": {"phase": "RequiresApproval"},
            }
        ]

    def _scope_of(self, collection: str) -> tuple[str, bool] | None:
        """(discovery path, namespaced) of a collection path, or None when not served."""
        base, _, rest = collection.partition(GROUP)
        if base or not rest.startswith("/"):
            return None
        parts = rest.strip("/").split("/")
        namespaced = len(parts) == 3 and parts[0] == "namespaces"
        plural = parts[-1]
        for resource in DISCOVERY[GROUP]["resources"]:
            if resource["name"] == plural:
                return GROUP, namespaced
        return None

    def get(self, path: str) -> dict[str, Any]:
        if path in DISCOVERY:
            return DISCOVERY[path]
        if path in self.objects:
            return self.objects[path]
        if path.endswith(f"/namespaces/{NS}/installplans"):
            return {"items": self.plans}
        raise _not_found()

    def get_or_none(self, path: str) -> dict[str, Any] | None:
        try:
            return self.get(path)
        except ApiException:
            return None

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", path))
        kind = body["kind"]
        served = next(r for r in DISCOVERY[GROUP]["resources"] if r["kind"] == kind)
        scope = self._scope_of(path)
        if scope is None or scope[1] != served["namespaced"] or not path.endswith(served["name"]):
            raise _not_found()  # what a real apiserver answers a wrong-scope POST
        namespace = body["metadata"].get("namespace")
        if served["namespaced"] != bool(namespace):
            raise ApiException(status=400, reason="Bad Request")
        stored = json.loads(json.dumps(body))
        if self.ready:
            stored["status"] = {"phase": "Running"}
        self.objects[f"{path}/{body['metadata']['name']}"] = stored
        return stored

    def delete(self, path: str) -> None:
        self.calls.append(("delete", path))
        self.objects.pop(path, None)


def _csv(name: str, *examples: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": {"alm-examples": json.dumps(list(examples))}},
        "spec": {"install": {"spec": {"deployments": []}}},
    }


@pytest.fixture
def olm(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """subscribe/follow as OLM would answer them: each CSV Succeeded at once. The
    examples of both CSVs are the list this returns (a test fills it)."""
    examples: list[dict[str, Any]] = []
    monkeypatch.setattr(upgrade_run, "subscribe", lambda *args, **kwargs: {})

    def follow(kube: Any, namespace: str, package: str, *, target_csv: str, **_: Any) -> Any:
        return SimpleNamespace(csv=_csv(target_csv, *examples))

    monkeypatch.setattr(upgrade_run, "follow", follow)
    return examples


def _run(kube: FakeKube, examples: str = "ready", timeout: float = 1.0) -> UpgradeRun:
    return run_upgrade(
        kube,
        catalog_address="127.0.0.1:50051",
        package="etcd-operator",
        start_csv=START,
        head_csv=HEAD,
        namespace=NS,
        channel="stable",
        timeout=timeout,
        examples=examples,
    )


# -- scope -------------------------------------------------------------------------------


def test_examples_are_created_and_deleted_at_their_kinds_scope(olm: list[Any]) -> None:
    olm += [CLUSTER_EXAMPLE, NAMESPACED_EXAMPLE]
    kube = FakeKube()
    run = _run(kube)
    assert run.passed, run.failure
    assert run.reached == HEAD
    cluster_item = f"{GROUP}/etcdbackupstores/shared"
    namespaced_item = f"{GROUP}/namespaces/{NS}/etcdclusters/example"
    assert run.created == [cluster_item, namespaced_item]
    assert [c for c in kube.calls if c[0] == "create"] == [
        ("create", f"{GROUP}/etcdbackupstores"),
        ("create", f"{GROUP}/namespaces/{NS}/etcdclusters"),
    ]
    assert "namespace" not in kube.objects[cluster_item]["metadata"]
    assert kube.objects[namespaced_item]["metadata"]["namespace"] == NS

    assert clean_up(kube, run, timeout=1.0)
    assert kube.calls[-3:] == [
        ("delete", cluster_item),  # not deleted with the namespace: deleted itself
        ("delete", namespaced_item),
        ("delete", f"/api/v1/namespaces/{NS}"),
    ]
    assert not kube.objects


def test_a_kind_the_cluster_does_not_serve_fails_the_run_saying_so(olm: list[Any]) -> None:
    olm.append({**NAMESPACED_EXAMPLE, "kind": "EtcdRestore"})
    run = _run(FakeKube())
    assert not run.passed
    assert run.failure is not None
    assert run.failure.startswith(
        "alm-example EtcdRestore example: the cluster serves no kind EtcdRestore in "
        "etcd.olmtool.dev/v1beta1"
    )


# -- --examples --------------------------------------------------------------------------


def test_examples_ready_waits_for_each_to_be_ready(olm: list[Any]) -> None:
    olm.append(NAMESPACED_EXAMPLE)
    run = _run(FakeKube(ready=False))
    assert not run.passed
    assert run.failure is not None
    assert "waiting for EtcdCluster example ready" in run.failure
    assert run.examples == "ready" and run.as_dict()["examples"] == "ready"


def test_examples_create_creates_them_and_does_not_wait(olm: list[Any]) -> None:
    olm += [CLUSTER_EXAMPLE, NAMESPACED_EXAMPLE]
    kube = FakeKube(ready=False)  # never Ready: waiting would time out
    run = _run(kube, "create")
    assert run.passed, run.failure
    assert run.reached == HEAD and len(run.hops) == 1
    assert len(run.created) == 2 and set(run.created) <= set(kube.objects)
    assert run.as_dict()["examples"] == "create"


def test_examples_none_creates_nothing(olm: list[Any]) -> None:
    olm += [CLUSTER_EXAMPLE, NAMESPACED_EXAMPLE]
    kube = FakeKube()
    run = _run(kube, "none")
    assert run.passed, run.failure
    assert run.created == [] and not kube.objects
    assert not [c for c in kube.calls if c[0] == "create"]


def test_the_action_refuses_an_unknown_examples_mode_naming_the_argument() -> None:
    with pytest.raises(ArgumentError) as caught:
        upgrade_test_dynamic(REPO / "catalog", "etcd-operator", every=True, examples="all")
    assert caught.value.argument == "examples"
    assert "'all' is not one of ready, create, none" in str(caught.value)


runner = CliRunner()
DYNAMIC = ["test", "upgrade", "--catalog", str(REPO / "catalog"), "--package", "etcd-operator"]


def test_the_cli_passes_examples_and_names_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    result = runner.invoke(app, [*DYNAMIC, "--all", "--examples", "all"])
    assert isinstance(result.exception, ArgumentError)
    assert error_line(result.exception) == "--examples 'all' is not one of ready, create, none"

    seen: dict[str, Any] = {}
    report = UpgradeReport(_plan("etcd-operator", ["0.2.0", "0.3.0"]), "catalog")

    def fake(**arguments: Any) -> UpgradeReport:
        seen.update(arguments)
        return report

    monkeypatch.setattr("olmtool.actions.upgrade_test_dynamic", fake)
    runner.invoke(app, [*DYNAMIC, "--from", "0.2.0", "--examples", "create"])
    assert seen["examples"] == "create"
    runner.invoke(app, [*DYNAMIC, "--from", "0.2.0"])
    assert seen["examples"] == "ready"


# -- the summary at 80 columns -----------------------------------------------------------


def _plan(package: str, versions: list[str]) -> UpgradePlan:
    """A channel of ``<package>.v<version>`` bundles, each upgrading straight to the head."""
    names = [f"{package}.v{v}" for v in versions]
    head = names[-1]
    paths = [BundlePath(head, versions[-1], "at-head")]
    paths += [
        BundlePath(n, v, "reaches-head", [head])
        for n, v in zip(names[:-1], versions[:-1], strict=True)
    ]
    return UpgradePlan(package, "stable-v1", head, paths, [])


def test_the_summary_is_readable_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    package = "observability-pipeline-operator"
    versions = ["1.0.0", "1.1.0-rc.1", "1.2.3", "1.10.0-beta.2", "2.0.0"]
    names = [f"{package}.v{v}" for v in versions]
    report = UpgradeReport(_plan(package, versions), "quay.example.com/org/catalog:latest")
    walked = UpgradeRun(package, names[0], names[-1], 41.25)
    for previous, target in itertools.pairwise(names):
        walked.hops.append(Hop(previous, target, 12.5, 3.0))  # unlike the plan: flagged
    direct = UpgradeRun(package, names[3], names[-1], 20.0, [Hop(names[3], names[-1], 9.0)])
    failed = UpgradeRun(package, names[2], names[2], 5.0, failure="timed out after 300s")
    report.runs = [walked, direct, failed]
    report.seconds = 123.0

    console = Console(record=True, width=80)
    monkeypatch.setattr("olmtool.cli.testing.stdout", console)
    print_report(report)
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    for run in report.runs:
        for hop in run.hops:
            version = report.version_of(hop.to_csv)
            assert any(f"-> {version} " in line for line in lines), (version, text)
        assert any(f"│ {report.version_of(run.start)} " in line for line in lines), text
    assert any(f"(static plan: {versions[-1]})" in line for line in lines), text
    # the title names the head CSV (wrapped at a space, the name whole)
    assert any(line.strip() == names[-1] for line in lines), text
    assert f"failed {names[2]}: timed out after 300s" in text


def test_a_csv_outside_the_plan_is_shown_by_its_name() -> None:
    report = UpgradeReport(_plan("op", ["1.0.0", "2.0.0"]), "c")
    assert report.version_of("op.v2.0.0") == "2.0.0"
    assert report.version_of("op.v3.0.0") == "3.0.0"  # <package>.v stripped
    assert report.version_of("other-name") == "other-name"
