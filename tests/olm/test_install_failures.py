"""``install`` on failures that do not clear by themselves, and what a failed or
interrupted install leaves: an unreachable CatalogSource, a ``minKubeVersion`` above the
server's and an operator image the registry does not have fail within seconds with
OLM's words (said once); what the install created goes again unless ``keep``, and what
was there before stays. A fake apiserver in memory plays OLM."""

from __future__ import annotations

import copy
import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from olmtool.cli import main
from olmtool.olm.removal import remove_made
from olmtool.olm.subscription import (
    CREATED_BY,
    InstallFailed,
    InstallMode,
    Made,
    Progress,
    SubscriptionSpec,
    explain,
    follow,
)

action = importlib.import_module("olmtool.actions.install")  # the face gives the function
subscribe = importlib.import_module("olmtool.olm.subscription")  # the face's name is the function
JSON = dict[str, Any]
OLM = "/apis/operators.coreos.com"
NS = "etcd"
PACKAGE = "etcd-operator"
CSV = "etcd-operator.v0.2.0"
IMAGE = "localhost:5000/olmtool/catalogs/etcd-operator:abc"
COLLECTIONS = {
    "namespaces",
    "catalogsources",
    "operatorgroups",
    "subscriptions",
    "clusterserviceversions",
    "installplans",
    "pods",
    "events",
    "clusterroles",
    "clusterrolebindings",
    "priorityclasses",
}


def sub_path(name: str = PACKAGE) -> str:
    return f"{OLM}/v1alpha1/namespaces/{NS}/subscriptions/{name}"


def csv_path(name: str = CSV) -> str:
    return f"{OLM}/v1alpha1/namespaces/{NS}/clusterserviceversions/{name}"


def source_path(name: str = f"{PACKAGE}-catalog") -> str:
    return f"{OLM}/v1alpha1/namespaces/{NS}/catalogsources/{name}"


class FakeKube:
    """Objects by REST path; a collection lists the objects right below it (label and
    involvedObject field selectors applied). ``on_create`` plays OLM after a create."""

    def __init__(self, objects: dict[str, JSON] | None = None) -> None:
        self.objects: dict[str, JSON] = objects or {}
        self.deleted: list[str] = []
        self.outage_grace = 60.0
        self.server = "https://127.0.0.1:6443"
        self.kubeconfig = "kc.yaml"
        self.on_create: Callable[[FakeKube, str, JSON], None] | None = None
        self.calls: list[str] = []

    def get(self, path: str, labelSelector: str = "", fieldSelector: str = "", **_: Any) -> JSON:
        self.calls.append(path)
        if path in self.objects:
            return copy.deepcopy(self.objects[path])
        if path.rpartition("/")[2] not in COLLECTIONS:
            raise ApiException(status=404, reason="Not Found")
        labels = dict(item.split("=", 1) for item in labelSelector.split(",") if item)
        fields = dict(item.split("=", 1) for item in fieldSelector.split(",") if item)
        items = []
        for where, obj in self.objects.items():
            if where.rpartition("/")[0] != path:
                continue
            have = obj["metadata"].get("labels") or {}
            involved = obj.get("involvedObject") or {}
            if any(have.get(k) != v for k, v in labels.items()):
                continue
            if any(
                (
                    involved.get(k.split(".", 1)[1])
                    if k.startswith("involvedObject.")
                    else obj.get(k)
                )
                != v
                for k, v in fields.items()
            ):
                continue
            items.append(copy.deepcopy(obj))
        return {"items": items}

    def get_or_none(self, path: str) -> JSON | None:
        try:
            return self.get(path)
        except ApiException:
            return None

    def create(self, path: str, body: JSON) -> JSON:
        name = body["metadata"]["name"]
        stored = copy.deepcopy(body)
        if "/namespaces/" in path:
            stored["metadata"]["namespace"] = path.split("/namespaces/")[1].split("/")[0]
        self.objects[f"{path}/{name}"] = stored
        if self.on_create is not None:
            self.on_create(self, path, stored)
        return copy.deepcopy(stored)

    def patch(self, path: str, body: JSON, *_: Any) -> JSON:
        self.objects[path].setdefault("spec", {}).update(body.get("spec") or {})
        return self.objects[path]

    def delete(self, path: str, body: JSON | None = None) -> JSON:
        if path not in self.objects:
            raise ApiException(status=404, reason="Not Found")
        self.deleted.append(path)
        return self.objects.pop(path)

    def close(self) -> None:
        pass


def _obj(kind: str, name: str, namespace: str = NS, **fields: Any) -> JSON:
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace}, **fields}


def _subscription(csv: str = "", source: str = f"{PACKAGE}-catalog") -> JSON:
    sub = _obj("Subscription", PACKAGE, spec={"source": source, "sourceNamespace": NS})
    if csv:
        sub["status"] = {"currentCSV": csv, "state": "UpgradePending"}
    return sub


def _csv(phase: str, reason: str = "", **status: Any) -> JSON:
    deployment = {
        "name": "etcd-operator",
        "spec": {"selector": {"matchLabels": {"name": "etcd-operator"}}},
    }
    return _obj(
        "ClusterServiceVersion",
        CSV,
        spec={"install": {"spec": {"deployments": [deployment]}}},
        status={"phase": phase, "reason": reason, **status},
    )


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscribe, "CATALOG_GRACE", 0.3)
    monkeypatch.setattr(subscribe, "PULL_GRACE", 0.3)


# -- failures that do not clear by themselves --------------------------------------------


def test_an_unreachable_catalog_fails_after_its_grace_not_the_timeout(fast: None) -> None:
    source = _obj(
        "CatalogSource",
        f"{PACKAGE}-catalog",
        spec={"address": "127.0.0.1:1", "sourceType": "grpc"},
        status={
            "connectionState": {"address": "127.0.0.1:1", "lastObservedState": "TRANSIENT_FAILURE"}
        },
    )
    kube = FakeKube({sub_path(): _subscription(), source_path(): source})
    started = time.monotonic()
    with pytest.raises(InstallFailed) as caught:
        follow(kube, NS, PACKAGE, timeout=30, poll=0.05)
    assert time.monotonic() - started < 5
    assert str(caught.value) == (
        f"{PACKAGE}: catalog source {NS}/{PACKAGE}-catalog is unreachable "
        "(TRANSIENT_FAILURE): 127.0.0.1:1"
    )


def test_a_catalog_that_recovers_within_the_grace_is_waited_for(
    fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _obj(
        "CatalogSource",
        f"{PACKAGE}-catalog",
        status={"connectionState": {"lastObservedState": "TRANSIENT_FAILURE"}},
    )
    kube = FakeKube({sub_path(): _subscription(), source_path(): source})
    polls = 0

    def refresh(*args: Any) -> None:
        nonlocal polls
        polls += 1
        state = "TRANSIENT_FAILURE" if polls % 4 else "READY"  # never 0.3 s in a row
        kube.objects[source_path()]["status"]["connectionState"]["lastObservedState"] = state
        real_refresh(*args)

    real_refresh = subscribe._refresh
    monkeypatch.setattr(subscribe, "_refresh", refresh)
    with pytest.raises(InstallFailed, match="not installed after 1s"):
        follow(kube, NS, PACKAGE, timeout=1, poll=0.05)


def test_a_kube_version_below_min_kube_version_fails_at_once() -> None:
    message = "CSV version requirement not met: minKubeVersion (1.25.0) > server version (v1.20.2)"
    csv = _csv(
        "Pending",
        "RequirementsNotMet",
        message="one or more requirements couldn't be found",
        requirementStatus=[
            {
                "group": "operators.coreos.com",
                "version": "v1alpha1",
                "kind": "ClusterServiceVersion",
                "name": CSV,
                "status": "PresentNotSatisfied",
                "message": message,
            }
        ],
    )
    kube = FakeKube({sub_path(): _subscription(CSV), csv_path(): csv})
    started = time.monotonic()
    with pytest.raises(InstallFailed) as caught:
        follow(kube, NS, PACKAGE, timeout=30, poll=0.05)
    assert time.monotonic() - started < 2
    assert str(caught.value) == f"{PACKAGE}: {CSV} cannot install: RequirementsNotMet: {message}"


def test_other_unmet_requirements_are_waited_for() -> None:
    csv = _csv(
        "Pending",
        "RequirementsNotMet",
        requirementStatus=[
            {"kind": "ClusterServiceVersion", "name": CSV, "status": "Present"},
            {"kind": "CustomResourceDefinition", "name": "x", "status": "NotPresent"},
        ],
    )
    kube = FakeKube({sub_path(): _subscription(CSV), csv_path(): csv})
    with pytest.raises(InstallFailed, match="not installed after"):
        follow(kube, NS, PACKAGE, timeout=0.5, poll=0.05)


def _pod(reason: str, message: str) -> JSON:
    pod = _obj(
        "Pod",
        "etcd-operator-abc",
        status={
            "containerStatuses": [
                {
                    "name": "operator",
                    "image": "quay.io/x/etcd-operator:0.2.O",
                    "state": {"waiting": {"reason": reason, "message": message}},
                }
            ]
        },
    )
    pod["metadata"]["labels"] = {"name": "etcd-operator"}
    return pod


def test_an_image_the_registry_does_not_have_fails_with_the_event_said_once(
    fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulled = (
        'Failed to pull image "quay.io/x/etcd-operator:0.2.O": rpc error: code = NotFound '
        "desc = manifest unknown"
    )
    pod = _pod("ErrImagePull", "rpc error: code = NotFound desc = manifest unknown")
    events = {
        f"/api/v1/namespaces/{NS}/events/e{n}": {
            "kind": "Event",
            "metadata": {"name": f"e{n}", "namespace": NS, "labels": {}},
            "type": "Warning",
            "reason": "Failed",
            "message": pulled,
            "lastTimestamp": f"2024-01-01T00:00:0{n}Z",
            "involvedObject": {"kind": "Pod", "name": "etcd-operator-abc"},
        }
        for n in range(3)
    }
    kube = FakeKube(
        {
            sub_path(): _subscription(CSV),
            csv_path(): _csv("Installing", "InstallWaiting"),
            f"/api/v1/namespaces/{NS}/pods/etcd-operator-abc": pod,
            **events,
        }
    )
    polls = 0

    def back_off(*args: Any) -> None:  # kubelet alternates; the back-off hides the reason
        nonlocal polls
        polls += 1
        state = kube.objects[f"/api/v1/namespaces/{NS}/pods/etcd-operator-abc"]["status"]
        waiting = state["containerStatuses"][0]["state"]["waiting"]
        if polls > 1:
            waiting.update(reason="ImagePullBackOff", message='Back-off pulling image "x"')
        real_refresh(*args)

    real_refresh = subscribe._refresh
    monkeypatch.setattr(subscribe, "_refresh", back_off)
    started = time.monotonic()
    with pytest.raises(InstallFailed) as caught:
        follow(kube, NS, PACKAGE, timeout=30, poll=0.05)
    assert time.monotonic() - started < 5
    text = str(caught.value)
    assert text == (
        f"{PACKAGE}: {CSV} cannot start: pod {NS}/etcd-operator-abc, container operator: {pulled}"
    )
    assert text.count("manifest unknown") == 1


def test_a_pull_that_is_only_slow_is_waited_for(fast: None) -> None:
    pod = _pod("ErrImagePull", "pull quay.io/x: connection reset by peer")
    kube = FakeKube(
        {
            sub_path(): _subscription(CSV),
            csv_path(): _csv("Installing", "InstallWaiting"),
            f"/api/v1/namespaces/{NS}/pods/etcd-operator-abc": pod,
        }
    )
    with pytest.raises(InstallFailed, match="not installed after"):
        follow(kube, NS, PACKAGE, timeout=0.8, poll=0.05)


def test_a_timeout_names_each_warning_once() -> None:
    events = {
        f"/api/v1/namespaces/{NS}/events/e{n}": {
            "kind": "Event",
            "metadata": {"name": f"e{n}"},
            "type": "Warning",
            "reason": "Failed",
            "message": "Failed to pull image x: timeout",
            "lastTimestamp": f"2024-01-01T00:00:0{n}Z",
        }
        for n in range(3)
    }
    kube = FakeKube(events)
    assert explain(kube, NS, Progress()) == ["Failed: Failed to pull image x: timeout"]


# -- what a failed install leaves --------------------------------------------------------


def _made_by(kube: FakeKube) -> list[Made]:
    made: list[Made] = []
    spec = SubscriptionSpec(PACKAGE, f"{PACKAGE}-catalog", NS, "stable", CSV)
    subscribe.subscribe(kube, NS, spec, InstallMode("OwnNamespace", (NS,)), image=IMAGE, made=made)
    return made


def test_subscribe_records_what_it_created_and_not_what_it_found() -> None:
    theirs = _obj("CatalogSource", f"{PACKAGE}-catalog", spec={"image": IMAGE})
    theirs["metadata"]["labels"] = dict(CREATED_BY)  # an earlier install's
    kube = FakeKube({f"/api/v1/namespaces/{NS}": _obj("Namespace", NS, ""), source_path(): theirs})
    made = _made_by(kube)
    assert [str(m) for m in made] == [
        f"OperatorGroup {NS}/{NS}-og",
        f"Subscription {NS}/{PACKAGE}",
    ]


def test_remove_made_removes_only_what_was_made_and_the_csv_it_brought() -> None:
    kube = FakeKube({csv_path("older.v0.1.0"): _obj("ClusterServiceVersion", "older.v0.1.0")})
    made = _made_by(kube)
    kube.objects[sub_path()]["status"] = {"currentCSV": CSV}
    kube.objects[csv_path()] = _csv("Installing")
    removed, failed = remove_made(kube, NS, PACKAGE, made, {"older.v0.1.0"})
    assert failed == []
    assert removed == [
        f"Subscription {NS}/{PACKAGE}",
        f"ClusterServiceVersion {NS}/{CSV}",
        f"OperatorGroup {NS}/{NS}-og",
        f"CatalogSource {NS}/{PACKAGE}-catalog",
        f"Namespace {NS}",
    ]
    assert csv_path("older.v0.1.0") in kube.objects


def test_a_csv_that_was_there_before_stays() -> None:
    kube = FakeKube({csv_path(): _csv("Succeeded")})
    made = _made_by(kube)
    kube.objects[sub_path()]["status"] = {"installedCSV": CSV}
    removed, _ = remove_made(kube, NS, PACKAGE, made, {CSV})
    assert csv_path() in kube.objects
    assert f"ClusterServiceVersion {NS}/{CSV}" not in removed


def test_what_cannot_be_removed_is_said_with_why() -> None:
    kube = FakeKube()
    made = _made_by(kube)
    real_delete = kube.delete

    def refuse(path: str, body: JSON | None = None) -> JSON:
        if "operatorgroups" in path:
            raise ApiException(status=403, reason="Forbidden")
        return real_delete(path)

    kube.delete = refuse  # type: ignore[method-assign]
    removed, failed = remove_made(kube, NS, PACKAGE, made, set())
    assert failed == [f"OperatorGroup {NS}/{NS}-og (403 Forbidden)"]
    assert f"Namespace {NS}" in removed


# -- through the action and the CLI ------------------------------------------------------


def _unmet(kube: FakeKube, path: str, body: JSON) -> None:
    """OLM after a Subscription: a CSV that needs a newer Kubernetes."""
    if body["kind"] != "Subscription":
        return
    kube.objects[sub_path()]["status"] = {"currentCSV": CSV}
    kube.objects[csv_path()] = _csv(
        "Pending",
        "RequirementsNotMet",
        requirementStatus=[
            {
                "kind": "ClusterServiceVersion",
                "status": "PresentNotSatisfied",
                "message": "CSV version requirement not met: minKubeVersion (1.25.0) > "
                "server version (v1.20.2)",
            }
        ],
    )


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> FakeKube:
    kube = FakeKube()
    kube.on_create = _unmet
    monkeypatch.setattr(action, "resolve_target", lambda *_: action.Target(tmp_path / "kc"))
    monkeypatch.setattr(action, "connect_olm", lambda *_, **__: kube)
    return kube


def test_a_failed_install_removes_what_it_created(cluster: FakeKube) -> None:
    with pytest.raises(InstallFailed) as caught:
        action.install(PACKAGE, catalog=IMAGE, namespace=NS, channel="stable", timeout=10)
    assert str(caught.value).endswith(
        f"; removed what this install created: Subscription {NS}/{PACKAGE}, "
        f"ClusterServiceVersion {NS}/{CSV}, OperatorGroup {NS}/{NS}-og, "
        f"CatalogSource {NS}/{PACKAGE}-catalog, Namespace {NS}"
    )
    assert "minKubeVersion (1.25.0) > server version (v1.20.2)" in str(caught.value)
    assert cluster.objects == {}


def test_keep_keeps_it_and_says_so(cluster: FakeKube) -> None:
    with pytest.raises(InstallFailed) as caught:
        action.install(PACKAGE, catalog=IMAGE, namespace=NS, channel="stable", keep=True)
    assert str(caught.value).endswith(
        f"; kept what this install created: Namespace {NS}, CatalogSource {NS}/{PACKAGE}-catalog, "
        f"OperatorGroup {NS}/{NS}-og, Subscription {NS}/{PACKAGE}"
    )
    assert sub_path() in cluster.objects


def test_an_interrupted_install_removes_what_it_created_and_exits_130(
    cluster: FakeKube, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupt(*_: Any, **__: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(action, "follow", interrupt)
    monkeypatch.setattr(
        sys, "argv", ["olmtool", "install", PACKAGE, "--catalog", IMAGE, "--namespace", NS]
    )
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 130
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: interrupted; removed what this install created: Subscription")
    assert cluster.objects == {}
