"""One reconcile pass against an in-memory apiserver: an invalid spec is reported as
InvalidSpec (once per problem), nothing is created from it, and nothing raises."""

from __future__ import annotations

import asyncio
from typing import Any

from etcd_operator import backups, maintenance, plan, reconcile
from etcd_operator.kube import ApiError, Invalid
from etcd_operator.refs import ClusterRef

REF = ClusterRef(name="ex", namespace="ns", uid="0123456789abcdef")
JSON = dict[str, Any]


class FakeKube:
    """Creates, lists and deletes in memory; ``refuse`` kinds fail creation with a 422."""

    def __init__(self, refuse: tuple[str, ...] = ()) -> None:
        self.refuse = refuse
        self.objects: dict[tuple[str, str], JSON] = {}
        self.created: list[tuple[str, str]] = []
        self.deleted: list[tuple[str, str, int | None]] = []

    async def served(self, group: str, kind: str, versions: tuple[str, ...]) -> str:
        return f"{group}/{versions[0]}"

    async def create(self, body: JSON) -> JSON:
        kind, name = body["kind"], body["metadata"]["name"]
        if kind in self.refuse:
            raise Invalid(422, "Invalid", f'{kind} "{name}" is invalid: spec: Invalid value')
        self.created.append((kind, name))
        return self.objects.setdefault((kind, name), body)

    async def ensure(self, body: JSON, fields: tuple[str, ...] = ("spec",)) -> JSON:
        return await self.create(body)

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> JSON | None:
        return self.objects.get((kind, name))

    async def list(self, api_version: str, kind: str, namespace: str, selector: str) -> list[JSON]:
        wanted = dict(pair.split("=", 1) for pair in selector.split(","))
        return [
            body
            for (k, _), body in self.objects.items()
            if k == kind and wanted.items() <= (body["metadata"].get("labels") or {}).items()
        ]

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, grace: int | None = None
    ) -> bool:
        self.deleted.append((kind, name, grace))
        return self.objects.pop((kind, name), None) is not None

    def kinds(self) -> set[str]:
        return {kind for kind, _ in self.created}


def cluster(spec: JSON, status: JSON | None = None) -> JSON:
    body: JSON = {
        "apiVersion": "etcd.olmtool.dev/v1beta1",
        "kind": "EtcdCluster",
        "metadata": {"name": "ex", "namespace": "ns", "uid": REF.uid, "generation": 1},
        "spec": {"replicas": 3, "version": "3.5.1", **spec},
    }
    if status is not None:
        body["status"] = status
    return body


def run(kube: FakeKube, body: JSON) -> reconcile.Pass:
    return asyncio.run(reconcile.reconcile(kube, REF, body))  # type: ignore[arg-type]


def conditions(outcome: reconcile.Pass) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in outcome.status["conditions"]}


def test_a_negative_storage_size_is_an_invalid_spec_not_a_retried_422() -> None:
    kube = FakeKube(refuse=("PersistentVolumeClaim",))  # what the apiserver would do
    first = run(kube, cluster({"storageSize": "-1Gi"}))
    message = 'spec.storageSize "-1Gi": must be greater than zero'
    assert isinstance(first.step, plan.Failed) and first.step.reason == "InvalidSpec"
    assert first.problems == [message] and not first.progressing
    # no volume, member or quota from the refused size
    assert not kube.kinds() & {"PersistentVolumeClaim", "Pod", "ConfigMap"}
    # every later pass says the same: never started, so no quorum was lost
    again = run(kube, cluster({"storageSize": "-1Gi"}, first.status))
    for outcome in (first, again):
        assert outcome.status["phase"] == "Failed"
        assert conditions(outcome) == {
            "Available": ("False", "NotStarted"),
            "Progressing": ("False", "InvalidSpec"),
            "Degraded": ("True", "InvalidSpec"),
        }
        degraded = next(c for c in outcome.status["conditions"] if c["type"] == "Degraded")
        assert degraded["message"] == message


def test_a_fixed_storage_size_creates_the_cluster() -> None:
    kube = FakeKube()
    failed = run(kube, cluster({"storageSize": "0"}))
    fixed = run(kube, cluster({"storageSize": "2Gi"}, failed.status))
    assert isinstance(fixed.step, plan.Bootstrap) and fixed.problems == []
    claim = kube.objects[("PersistentVolumeClaim", "ex-0-data")]
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert fixed.status["phase"] == "Creating"
    assert conditions(fixed)["Available"] == ("False", "Creating")


def test_a_member_the_apiserver_refuses_blocks_the_step_without_raising() -> None:
    kube = FakeKube(refuse=("Pod",))  # e.g. resources.requests above resources.limits
    outcome = run(kube, cluster({"resources": {"requests": {"cpu": "2"}}}))
    assert isinstance(outcome.step, plan.Blocked) and not outcome.progressing
    assert outcome.problems == [
        'the apiserver refused an object made from the spec: Pod "ex-0" is invalid: '
        "spec: Invalid value"
    ]
    assert conditions(outcome)["Degraded"] == ("True", "InvalidSpec")
    assert conditions(outcome)["Available"] == ("False", "NotStarted")


def test_a_refused_backup_schedule_is_reported_and_a_bad_backup_size_not_requested() -> None:
    kube = FakeKube(refuse=("CronJob",))  # "99 * * * *" passes the CRD's pattern
    outcome = run(kube, cluster({"backupSchedule": "99 * * * *", "backupStorageSize": "0"}))
    assert outcome.problems == [
        'spec.backupStorageSize "0": must be greater than zero',
        'the apiserver refused an object made from the spec: CronJob "ex-backup" is invalid: '
        "spec: Invalid value",
    ]
    assert ("PersistentVolumeClaim", "ex-backups") not in kube.created


# -- the daemon: one Warning event per distinct problem, no hot loop -----------------------


class Stopped:
    """kopf's DaemonStopped for ``passes`` passes."""

    def __init__(self, passes: int) -> None:
        self.passes = passes

    def __bool__(self) -> bool:
        self.passes -= 1
        return self.passes < 0

    async def wait(self) -> None:
        await asyncio.sleep(3600)


class StatusKube(FakeKube):
    """Also takes the status patches, into the body the daemon reads (as kopf's watch
    would)."""

    def __init__(self, body: JSON, refuse: tuple[str, ...] = ()) -> None:
        super().__init__(refuse)
        self.body = body

    async def patch(self, *args: Any, status: bool = False) -> JSON:
        patch = args[4]
        self.body["status"] = {**(self.body.get("status") or {}), **patch["status"]}
        return self.body


def run_daemon(
    monkeypatch: Any, body: JSON, passes: int, refuse: tuple[str, ...] = ()
) -> tuple[list[tuple[str, str]], list[float], JSON]:
    import logging
    from types import SimpleNamespace

    from etcd_operator import handlers

    events: list[tuple[str, str]] = []
    sleeps: list[float] = []

    async def no_sleep(wake: Any, stopped: Any, seconds: float) -> None:
        sleeps.append(seconds)

    monkeypatch.setattr(
        handlers.kopf, "warn", lambda obj, reason, message: events.append((reason, message))
    )
    monkeypatch.setattr(handlers, "_sleep", no_sleep)
    kube = StatusKube(body, refuse)
    asyncio.run(
        handlers.run_cluster(
            stopped=Stopped(passes),  # type: ignore[arg-type]
            body=body,  # type: ignore[arg-type]
            uid=REF.uid,
            memo=SimpleNamespace(kube=kube),  # type: ignore[arg-type]
            logger=logging.getLogger("test"),
        )
    )
    return events, sleeps, body


def test_an_invalid_spec_gets_one_warning_event_not_one_per_pass(monkeypatch: Any) -> None:
    events, sleeps, body = run_daemon(monkeypatch, cluster({"storageSize": "0"}), passes=3)
    assert events == [("InvalidSpec", 'spec.storageSize "0": must be greater than zero')]
    assert sleeps == [15.0] * 3  # idle: woken by the fix, not retried every few seconds
    assert body["status"]["phase"] == "Failed"


def test_a_refusal_outside_the_plan_is_invalid_spec_too(monkeypatch: Any) -> None:
    # an object every cluster needs, refused (a name too long for a Service, say)
    events, sleeps, body = run_daemon(monkeypatch, cluster({}), passes=3, refuse=("Service",))
    message = (
        'the apiserver refused an object made from the spec: Service "ex" is invalid: '
        "spec: Invalid value"
    )
    assert events == [("InvalidSpec", message)]
    assert sleeps == [15.0] * 3
    degraded = body["status"]["conditions"][-1]
    assert (degraded["reason"], degraded["message"]) == ("InvalidSpec", message)


class NodesForbidden(FakeKube):
    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> JSON | None:
        if kind == "Node":
            raise ApiError(403, "Forbidden", 'nodes "n1" is forbidden')
        return await super().get(api_version, kind, namespace, name)


def _node(name: str, ready: str, since: str) -> JSON:
    condition = {"type": "Ready", "status": ready, "lastTransitionTime": since}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"conditions": [condition]}}


def test_how_long_each_members_node_has_not_been_ready() -> None:
    kube = FakeKube()
    kube.objects[("Node", "up")] = _node("up", "True", "2026-01-01T00:00:00Z")
    kube.objects[("Node", "down")] = _node("down", "Unknown", "2000-01-01T00:00:00Z")
    lost = asyncio.run(reconcile._lost_nodes(kube, {"up", "down", "deleted"}))  # type: ignore[arg-type]
    assert set(lost) == {"down", "deleted"}
    assert lost["down"] > 20 * 365 * 86400 and lost["deleted"] == float("inf")
    # a release whose RBAC reads no Nodes (before 0.5.0) knows of no lost node
    forbidden = NodesForbidden()
    assert asyncio.run(reconcile._lost_nodes(forbidden, {"n1"})) == {}  # type: ignore[arg-type]


def test_a_member_on_a_lost_node_is_deleted_at_once_its_volume_after() -> None:
    kube = FakeKube()
    lost = plan.MemberPod("ex-2", node="n3", node_lost_for=90.0)
    alive = plan.MemberPod("ex-1", node="n2")
    for pod in (lost, alive):
        asyncio.run(reconcile._delete_member_objects(kube, REF, pod.name, pod))  # type: ignore[arg-type]
    assert kube.deleted == [
        ("Pod", "ex-2", 0),
        ("PersistentVolumeClaim", "ex-2-data", None),
        ("Secret", "ex-2-tls", None),  # its certificates (spec.tls mode auto), if any
        ("Pod", "ex-1", None),
        ("PersistentVolumeClaim", "ex-1-data", None),
        ("Secret", "ex-1-tls", None),
    ]


def test_the_seed_runs_with_spec_options_and_says_so_in_its_config_annotation() -> None:
    kube = FakeKube()
    outcome = run(kube, cluster({"options": {"snapshotCount": 5000}}))
    assert isinstance(outcome.step, plan.Bootstrap)
    pod = kube.objects[("Pod", "ex-0")]
    assert {"name": "ETCD_SNAPSHOT_COUNT", "value": "5000"} in pod["spec"]["containers"][0]["env"]
    state = reconcile._pod_state("ex-0", pod, None)
    assert (
        state.config and state.config == pod["metadata"]["annotations"]["etcd.olmtool.dev/config"]
    )


def test_options_etcd_would_refuse_create_nothing() -> None:
    kube = FakeKube()
    options = {"heartbeatIntervalMs": 200, "electionTimeoutMs": 600}
    outcome = run(kube, cluster({"options": options}))
    assert isinstance(outcome.step, plan.Failed) and outcome.step.reason == "InvalidSpec"
    assert "at least 5 times heartbeatIntervalMs 200" in outcome.problems[0]
    assert "Pod" not in kube.kinds()


def test_a_defragment_request_is_pending_until_a_pass_settles_with_it() -> None:
    annotations = {"etcd.olmtool.dev/defragment-request": "1"}
    assert maintenance.defrag_request(annotations, {}) == "1"
    done = {"lastDefragmentation": {"request": "1", "completionTime": "2026-11-28T00:00:00Z"}}
    assert maintenance.defrag_request(annotations, done) is None
    assert maintenance.defrag_request({}, {}) is None


def test_the_quota_is_the_option_or_95_percent_of_the_volume() -> None:
    assert maintenance.quota_bytes({"options": {"quotaBackendBytes": 33554432}}) == 33554432
    assert maintenance.quota_bytes({"storageSize": "1Gi"}) == 1073741824 * 95 // 100
    assert maintenance.quota_bytes({"storageSize": "-1"}) == 0


def _backup_job(name: str, created: str, succeeded: bool) -> JSON:
    return {
        "kind": "Job",
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "labels": REF.labels("backup"),
        },
        "spec": {"template": {"spec": {"containers": [{"args": [f"/backups/{name}.db"]}]}}},
        "status": {"succeeded": 1} if succeeded else {},
    }


def test_the_newest_snapshot_is_this_clusters_newest_successful_one() -> None:
    kube = FakeKube()
    for job in (
        _backup_job("ex-final", "2026-11-01T00:00:00Z", True),  # a deleted namesake's
        _backup_job("ex-backup-a", "2026-11-28T10:00:00Z", True),
        _backup_job("ex-backup-b", "2026-11-28T11:00:00Z", False),
    ):
        kube.objects[("Job", job["metadata"]["name"])] = job
    newest = backups.newest_snapshot(kube, REF, "2026-11-28T09:00:00Z")  # type: ignore[arg-type]
    assert asyncio.run(newest) == "ex-backup-a.db"
    too_early = backups.newest_snapshot(kube, REF, "2026-11-28T10:30:00Z")  # type: ignore[arg-type]
    assert asyncio.run(too_early) is None


def test_a_rebuild_deletes_every_member_and_restores_a_new_seed() -> None:
    kube = FakeKube()
    members = [{"name": f"ex-{i}", "id": str(i), "learner": False} for i in range(3)]
    old = {
        "phase": "Degraded",
        "members": members,
        "quorumLostForGoodSince": "2026-01-01T00:00:00Z",
    }
    kube.objects[("Job", "ex-backup-a")] = _backup_job("ex-backup-a", "2026-11-28T10:00:00Z", True)
    body = cluster({"recovery": {"fromLatestBackup": True, "afterSeconds": 0}}, old)
    body["metadata"]["creationTimestamp"] = "2026-11-28T09:00:00Z"
    survivor = {
        "kind": "Pod",
        "metadata": {"name": "ex-0", "labels": {**REF.labels(), "etcd.olmtool.dev/member": "ex-0"}},
    }
    kube.objects[("Pod", "ex-0")] = survivor
    outcome = run(kube, body)
    assert isinstance(outcome.step, plan.RebuildFromBackup)
    assert ("Pod", "ex-0", None) in kube.deleted
    seed = kube.objects[("Pod", "ex-3")]
    assert seed["spec"]["initContainers"][0]["args"][2] == "/backups/ex-backup-a.db"
    assert outcome.status["lastRecovery"]["snapshot"] == "ex-backup-a.db"
    assert outcome.status["members"] == [] and "quorumLostForGoodSince" not in outcome.status
    assert outcome.status["phase"] == "Degraded"
