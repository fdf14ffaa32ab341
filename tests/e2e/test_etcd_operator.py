"""The etcd operator on the local cluster: real etcd processes, the operator running as
the Pod OLM would create from the image olmtool builds.

One operator (installed from the newest CSV, 0.5.0: non-root, read-only root filesystem,
``/tmp`` an emptyDir; OwnNamespace-style targeting namespace ``watched``) serves every
test; each test makes its own EtcdCluster there.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from olmtool.kube import Kube
from tests.e2e import etcd_env
from tests.e2e.etcd_env import (
    Installed,
    Writer,
    client_endpoint,
    condition,
    create_cluster,
    get_cluster,
    get_prefix,
    get_prefix_retrying,
    member_pid,
    patch_spec,
    put_keys,
    running,
    wait_running,
)
from tests.e2e.helpers import Cluster, service_account_ready, wait_for

pytest.importorskip(
    "aetcd", reason="the tests talk to etcd through aetcd (pip install '.[operator]')"
)


RELEASE = "0.5.0"  # the bundle the operator is installed from: the newest


@dataclass
class Env:
    kube: Kube
    operator: Installed
    watched: str
    other: str


def _namespace(kube: Kube, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait_for(lambda: service_account_ready(kube, name, "default"), 30, "default SA")
    return name


def push_operator_images(registry: str) -> None:
    """Build the operator image and push it under every released bundle's tag."""
    from olmtool.actions.image_build import image_build

    image_build(
        config=etcd_env.REPO / "olmtool.yaml", bundle_tags=True, push=True, registry=registry
    )


@pytest.fixture(scope="module")
def env(cluster: Cluster) -> Iterator[Env]:
    if cluster.registry is None:
        pytest.skip(
            "docker-registry is not installed (make tools): no registry for the operator image"
        )
    kube = cluster.kube
    push_operator_images(cluster.registry)
    csv, manifests = etcd_env.bundle_manifests(RELEASE)
    etcd_env.install_crds(kube, manifests)
    operator_ns, watched, other = (_namespace(kube, p) for p in ("etcd-op", "watched", "other"))
    installed = etcd_env.install_from_csv(kube, csv, operator_ns, [watched])
    try:
        wait_for(lambda: etcd_env.operator_ready(kube, installed), 90, "operator Ready")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{etcd_env.describe_operator(kube, installed)}") from None
    yield Env(kube, installed, watched, other)
    for namespace in (watched, other, operator_ns):
        with contextlib.suppress(Exception):
            kube.delete(f"/api/v1/namespaces/{namespace}")


@pytest.fixture(autouse=True)
def _clusters_go_after_each_test(env: Env) -> Iterator[None]:
    """Each test's EtcdClusters are deleted when it ends, so the members of earlier
    tests do not load the node (2 cores) while the next one runs."""
    yield
    for namespace in (env.watched, env.other):
        with contextlib.suppress(Exception):
            env.kube.delete(f"{etcd_env.CLUSTERS}/namespaces/{namespace}/etcdclusters")

    def members_gone() -> bool:
        return not any(
            env.kube.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
            for namespace in (env.watched, env.other)
        )

    with contextlib.suppress(AssertionError):  # the next test does not wait for stragglers
        wait_for(members_gone, 60, "the test's etcd members gone")


def _name() -> str:
    return f"e{uuid.uuid4().hex[:5]}"


def test_operator_pod_is_non_root_with_a_writable_tmp(env: Env) -> None:
    """The Pod runs what the newest CSV declares: a non-root user, no privilege
    escalation, a read-only root filesystem and an emptyDir at /tmp."""
    pods = env.kube.get(f"/api/v1/namespaces/{env.operator.namespace}/pods")["items"]
    running = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert running, "no operator Pod"
    spec = running[0]["spec"]
    (container,) = spec["containers"]
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert spec["securityContext"]["runAsUser"] == 65532
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = {v["name"]: v for v in spec["volumes"]}
    (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert "emptyDir" in volumes[tmp["name"]]


def test_one_and_three_members_serve_keys(env: Env) -> None:
    one, three = _name(), _name()
    create_cluster(env.kube, env.watched, one, replicas=1)
    create_cluster(env.kube, env.watched, three, replicas=3)
    wait_running(env.kube, env.watched, one, 1)
    wait_running(env.kube, env.watched, three, 3)
    for name in (one, three):
        endpoint = client_endpoint(env.kube, env.watched, name)
        put_keys(endpoint, {f"{name}/a": "1", f"{name}/b": "2"})
        assert get_prefix(endpoint, f"{name}/") == {f"{name}/a": "1", f"{name}/b": "2"}
    status = get_cluster(env.kube, env.watched, three)["status"]
    assert sum(m["isLeader"] for m in status["members"]) == 1
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Available": "True",
        "Progressing": "False",
        "Degraded": "False",
    }
    assert status["observedGeneration"] == 1 and status["currentVersion"] == "3.5.1"
    # what the cluster owns: peers, client and metrics Services, config, PDB
    services = env.kube.get(f"/api/v1/namespaces/{env.watched}/services").get("items", [])
    names = {s["metadata"]["name"] for s in services}
    assert {three, f"{three}-client", f"{three}-metrics"} <= names
    pdb = env.kube.get(
        f"/apis/policy/v1beta1/namespaces/{env.watched}/poddisruptionbudgets/{three}"
    )
    assert pdb["spec"]["minAvailable"] == 2


def test_scale_three_five_three_with_writes(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3)
    wait_running(env.kube, env.watched, name, 3)
    writer = Writer(client_endpoint(env.kube, env.watched, name), name)
    writer.start()
    try:
        patch_spec(env.kube, env.watched, name, replicas=5)
        up = wait_running(env.kube, env.watched, name, 5)
        patch_spec(env.kube, env.watched, name, replicas=3)
        down = wait_running(env.kube, env.watched, name, 3)
    finally:
        writer.stop()
    print(f"\nscale 3->5 {up:.1f}s, 5->3 {down:.1f}s, {len(writer.acked)} writes acked")
    stored = get_prefix(client_endpoint(env.kube, env.watched, name), f"{name}/")
    assert set(writer.acked) <= set(stored)
    assert len(writer.acked) > 10
    pods = env.kube.get(
        f"/api/v1/namespaces/{env.watched}/pods", labelSelector=f"app.kubernetes.io/instance={name}"
    )
    assert len([p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]) == 3


def _three_members_with_a_key(env: Env) -> tuple[str, str, dict[str, str]]:
    """A running 3-member cluster holding ``<name>/kept``: name, endpoint, member IDs."""
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3)
    wait_running(env.kube, env.watched, name, 3)
    endpoint = client_endpoint(env.kube, env.watched, name)
    put_keys(endpoint, {f"{name}/kept": "yes"})
    return name, endpoint, _member_ids(env, name)


def _member_ids(env: Env, name: str) -> dict[str, str]:
    members = get_cluster(env.kube, env.watched, name)["status"]["members"]
    return {m["name"]: m["id"] for m in members}


def test_killed_member_comes_back_with_its_data(env: Env) -> None:
    name, endpoint, before = _three_members_with_a_key(env)
    victim = f"{name}-1"
    pid = member_pid(env.watched, name, victim)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: member_pid(env.watched, name, victim) not in (None, pid), 30, "etcd restarted")
    wait_running(env.kube, env.watched, name, 3)
    after = _member_ids(env, name)
    assert after == before  # same member, same ID: it came back with its data
    assert get_prefix_retrying(endpoint, f"{name}/") == {f"{name}/kept": "yes"}


def test_member_that_lost_its_data_is_replaced(env: Env) -> None:
    name, endpoint, before = _three_members_with_a_key(env)
    victim = f"{name}-2"
    env.kube.delete(f"/api/v1/namespaces/{env.watched}/pods/{victim}")
    env.kube.delete(f"/api/v1/namespaces/{env.watched}/persistentvolumeclaims/{victim}-data")
    wait_for(
        lambda: (
            condition(get_cluster(env.kube, env.watched, name), "Degraded").get("status") == "True"
        ),
        30,
        "Degraded while replacing",
    )
    wait_running(env.kube, env.watched, name, 3, timeout=120)
    after = _member_ids(env, name)
    assert before[victim] not in after.values()  # a new member, not the lost one
    assert {k: v for k, v in after.items() if k != victim} == {
        k: v for k, v in before.items() if k != victim
    }
    assert get_prefix(endpoint, f"{name}/") == {f"{name}/kept": "yes"}


def test_upgrade_34_to_35_with_writes(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3, version="3.4.23")
    wait_running(env.kube, env.watched, name, 3, version="3.4.23")
    writer = Writer(client_endpoint(env.kube, env.watched, name), name)
    writer.start()
    try:
        patch_spec(env.kube, env.watched, name, version="3.5.1")
        wait_for(
            lambda: get_cluster(env.kube, env.watched, name)["status"].get("phase") == "Upgrading",
            30,
            "Upgrading",
        )
        # 31 s on a quiet machine; two e2e workers on 2 cores once took over 120 s
        seconds = wait_running(env.kube, env.watched, name, 3, version="3.5.1", timeout=240)
    finally:
        writer.stop()
    print(f"\nupgrade 3.4.23 -> 3.5.1 in {seconds:.1f}s, {len(writer.acked)} writes acked")
    status = get_cluster(env.kube, env.watched, name)["status"]
    assert status["targetVersion"] == "3.5.1"
    assert {m["version"] for m in status["members"]} == {"3.5.1"}
    stored = get_prefix(client_endpoint(env.kube, env.watched, name), f"{name}/")
    assert set(writer.acked) <= set(stored)


def test_invalid_specs_are_refused_clearly(env: Env) -> None:
    with pytest.raises(Exception, match=r"spec.replicas: Unsupported value: 2"):
        create_cluster(env.kube, env.watched, _name(), replicas=2)
    unknown = _name()
    create_cluster(env.kube, env.watched, unknown, replicas=1, version="3.5.99")
    wait_for(
        lambda: (
            get_cluster(env.kube, env.watched, unknown).get("status", {}).get("phase") == "Failed"
        ),
        30,
        "Failed",
    )
    degraded = condition(get_cluster(env.kube, env.watched, unknown), "Degraded")
    assert (
        degraded["reason"] == "InvalidSpec"
        and "3.5.99 is not a known release" in degraded["message"]
    )
    running = _name()
    create_cluster(env.kube, env.watched, running, replicas=1, version="3.5.1")
    wait_running(env.kube, env.watched, running, 1)
    patch_spec(env.kube, env.watched, running, version="3.4.23")
    wait_for(
        lambda: (
            condition(get_cluster(env.kube, env.watched, running), "Degraded").get("reason")
            == "InvalidSpec"
        ),
        30,
        "InvalidSpec",
    )
    message = condition(get_cluster(env.kube, env.watched, running), "Degraded")["message"]
    assert "downgrade from 3.5.1 to 3.4.23 is not supported" in message
    assert get_cluster(env.kube, env.watched, running)["status"]["currentVersion"] == "3.5.1"


def test_backup_delete_restore(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3, backupSchedule="0 3 * * *")
    wait_running(env.kube, env.watched, name, 3)
    endpoint = client_endpoint(env.kube, env.watched, name)
    keys = {f"{name}/{i}": str(i) for i in range(20)}
    put_keys(endpoint, keys)
    cronjob = env.kube.get(f"/apis/batch/v1beta1/namespaces/{env.watched}/cronjobs/{name}-backup")
    assert cronjob["spec"]["schedule"] == "0 3 * * *"
    # on demand
    env.kube.patch(
        f"{etcd_env.CLUSTERS}/namespaces/{env.watched}/etcdclusters/{name}",
        {"metadata": {"annotations": {"etcd.olmtool.dev/backup-request": "now"}}},
    )
    wait_for(
        lambda: (
            (get_cluster(env.kube, env.watched, name)["status"].get("lastBackup") or {}).get(
                "succeeded"
            )
            is True
        ),
        60,
        "on-demand backup",
    )
    # delete: the final snapshot lands in the kept backups volume
    env.kube.delete(f"{etcd_env.CLUSTERS}/namespaces/{env.watched}/etcdclusters/{name}")
    wait_for(
        lambda: (
            env.kube.get_or_none(
                f"{etcd_env.CLUSTERS}/namespaces/{env.watched}/etcdclusters/{name}"
            )
            is None
        ),
        120,
        "deleted",
    )
    assert (
        env.kube.get_or_none(
            f"/api/v1/namespaces/{env.watched}/persistentvolumeclaims/{name}-backups"
        )
        is not None
    )
    restored = _name()
    create_cluster(
        env.kube,
        env.watched,
        restored,
        replicas=3,
        restore={"claimName": f"{name}-backups", "snapshot": f"{name}-final.db"},
    )
    wait_running(env.kube, env.watched, restored, 3, timeout=120)
    assert get_prefix(client_endpoint(env.kube, env.watched, restored), f"{name}/") == keys


def test_operator_killed_mid_scale_up_recovers(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=1)
    wait_running(env.kube, env.watched, name, 1)
    patch_spec(env.kube, env.watched, name, replicas=3)

    def learner_added() -> bool:
        members = get_cluster(env.kube, env.watched, name)["status"].get("members") or []
        return len(members) >= 2

    wait_for(learner_added, 30, "a member added", interval=0.05)
    pid = etcd_env.operator_pid(env.watched)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_running(env.kube, env.watched, name, 3, timeout=120)
    members = get_cluster(env.kube, env.watched, name)["status"]["members"]
    assert len(members) == 3 and not any(m["learner"] for m in members)


def test_namespace_scoping(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=1)
    create_cluster(env.kube, env.other, name, replicas=1)
    wait_running(env.kube, env.watched, name, 1)
    time.sleep(3)
    assert not get_cluster(env.kube, env.other, name).get("status")
    pods = env.kube.get(f"/api/v1/namespaces/{env.other}/pods").get("items", [])
    assert pods == []
    account = f"system:serviceaccount:{env.operator.namespace}:{env.operator.service_account}"
    for namespace, allowed in ((env.watched, True), (env.other, False)):
        review = env.kube.create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "spec": {
                    "user": account,
                    "resourceAttributes": {
                        "namespace": namespace,
                        "verb": "create",
                        "resource": "pods",
                    },
                }
            },
        )
        assert review["status"].get("allowed", False) is allowed, namespace


def test_chaos_acknowledged_writes_survive(env: Env) -> None:
    """Kill a random member every few seconds while a client writes; afterwards every
    acknowledged key is there and the cluster is healthy."""
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3)
    wait_running(env.kube, env.watched, name, 3)
    endpoint = client_endpoint(env.kube, env.watched, name)
    writer = Writer(endpoint, name)
    writer.start()
    rng = random.Random(12)
    kills, recoveries = 0, []
    deadline = time.monotonic() + float(os.environ.get("ETCD_CHAOS_SECONDS", "30"))
    try:
        while time.monotonic() < deadline:
            victim = f"{name}-{rng.randrange(3)}"
            pid = member_pid(env.watched, name, victim)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                kills += 1
                started = time.monotonic()
                with contextlib.suppress(AssertionError):
                    wait_running(env.kube, env.watched, name, 3, timeout=30)
                    recoveries.append(time.monotonic() - started)
            time.sleep(rng.uniform(2, 4))
    finally:
        writer.stop()
    wait_running(env.kube, env.watched, name, 3, timeout=90)
    stored = get_prefix(endpoint, f"{name}/")
    lost = [k for k in writer.acked if k not in stored]
    worst = max(recoveries, default=0.0)
    print(
        f"\nchaos: {kills} kills, {len(writer.acked)} writes acknowledged, {len(lost)} lost, "
        f"{writer.failed} failed attempts, recovery median "
        f"{sorted(recoveries)[len(recoveries) // 2] if recoveries else 0:.1f}s max {worst:.1f}s"
    )
    assert kills >= 3
    assert not lost


# -- options and maintenance (issue 29) ---------------------------------------------------


def _member_pods(env: Env, name: str) -> list[dict]:
    pods = env.kube.get(
        f"/api/v1/namespaces/{env.watched}/pods",
        labelSelector=f"app.kubernetes.io/instance={name},app.kubernetes.io/component=member",
    )["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _ready_since(pod: dict) -> str:
    ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    return str(ready["lastTransitionTime"])


def test_options_roll_one_member_at_a_time_and_out_of_range_is_refused(env: Env) -> None:
    with pytest.raises(Exception, match=r"spec.options.electionTimeoutMs"):
        create_cluster(env.kube, env.watched, _name(), options={"electionTimeoutMs": 10})
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3)
    wait_running(env.kube, env.watched, name, 3)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in _member_pods(env, name)}
    writer = Writer(client_endpoint(env.kube, env.watched, name), f"{name}/w")
    writer.start()
    try:
        options = {"snapshotCount": 5000, "heartbeatIntervalMs": 150, "electionTimeoutMs": 1500}
        patch_spec(env.kube, env.watched, name, options=options)

        def rolled() -> bool:
            pods = _member_pods(env, name)
            return (
                len(pods) == 3
                and all(p["metadata"]["uid"] != before.get(p["metadata"]["name"]) for p in pods)
                and running(env.kube, env.watched, name, 3)
            )

        started = time.monotonic()
        wait_for(rolled, 300, f"{name}: every member restarted with the options")
        print(f"options rolled over 3 members in {time.monotonic() - started:.1f}s")
    finally:
        writer.stop()
    pods = sorted(_member_pods(env, name), key=lambda p: p["metadata"]["creationTimestamp"])
    for pod in pods:
        env_vars = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env_vars["ETCD_SNAPSHOT_COUNT"] == "5000"
        assert env_vars["ETCD_ELECTION_TIMEOUT"] == "1500"
    # one at a time: each member's new Pod was made after the one before it was Ready
    for earlier, later in itertools.pairwise(pods):
        assert later["metadata"]["creationTimestamp"] >= _ready_since(earlier), (
            f"{later['metadata']['name']} restarted before {earlier['metadata']['name']} "
            "was Ready again"
        )
    found = get_prefix(client_endpoint(env.kube, env.watched, name), f"{name}/w/")
    assert set(writer.acked) <= set(found), "an acknowledged write was lost"


def test_defragmentation_goes_member_by_member_and_shrinks_the_databases(env: Env) -> None:
    name = _name()
    create_cluster(
        env.kube, env.watched, name, replicas=3, storageSize="256Mi",
        maintenance={"defragmentAbovePercent": 0},
    )  # fmt: skip
    wait_running(env.kube, env.watched, name, 3)
    endpoint = client_endpoint(env.kube, env.watched, name)
    assert etcd_env.fill_history(endpoint, f"{name}/big", 24) == 24
    etcd_env.compact(endpoint)
    members = etcd_env.member_endpoints(env.kube, env.watched, name)
    before = {m: etcd_env.db_size(e) for m, e in members.items()}
    env.kube.patch(
        f"{etcd_env.CLUSTERS}/namespaces/{env.watched}/etcdclusters/{name}",
        {"metadata": {"annotations": {"etcd.olmtool.dev/defragment-request": "1"}}},
    )
    started = time.monotonic()
    wait_for(
        lambda: (
            (get_cluster(env.kube, env.watched, name).get("status") or {})
            .get("lastDefragmentation", {})
            .get("request")
            == "1"
        ),
        120,
        "the defragmentation request answered",
    )
    seconds = time.monotonic() - started
    after = {m: etcd_env.db_size(e) for m, e in members.items()}
    mib = 1024 * 1024
    print(
        f"defragmented 3 members in {seconds:.1f}s: "
        + ", ".join(
            f"{m} {before[m] / mib:.1f} -> {after[m] / mib:.1f} MiB" for m in sorted(before)
        )
    )
    for member in members:
        assert after[member] < before[member] / 2, (member, before[member], after[member])
    defragmented = [
        e["message"] for e in etcd_env.events(env.kube, env.watched, name)
        if e["reason"] == "Defragmenting"
    ]  # fmt: skip
    assert sorted(m.split(":")[0].split()[-1] for m in defragmented) == sorted(members)
    assert running(env.kube, env.watched, name, 3)


def test_a_full_database_is_reported_and_recovered_after_compaction(env: Env) -> None:
    name = _name()
    create_cluster(
        env.kube, env.watched, name, replicas=1, storageSize="128Mi",
        options={"quotaBackendBytes": 16 * 1024 * 1024},
        maintenance={"defragmentAbovePercent": 0},
    )  # fmt: skip
    wait_running(env.kube, env.watched, name, 1)
    (member,) = etcd_env.member_endpoints(env.kube, env.watched, name).values()
    # overwrites of one key: history a compaction frees, past the 16 MiB quota
    acked = etcd_env.fill_history(member, f"{name}/big", 40)
    assert acked < 40, "etcd never refused a write past its quota"

    def warned() -> bool:
        return any(
            e["reason"] == "NoSpace" and e["type"] == "Warning"
            for e in etcd_env.events(env.kube, env.watched, name)
        )

    wait_for(warned, 60, "a NoSpace warning event")
    wait_running(env.kube, env.watched, name, 1, timeout=120)
    put_keys(member, {f"{name}/after": "ok"})  # writes are accepted again
    assert get_prefix(member, f"{name}/after") == {f"{name}/after": "ok"}
    assert etcd_env.db_size(member) < 16 * 1024 * 1024


def test_a_majority_without_data_is_rebuilt_from_the_newest_backup_when_allowed(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3, backupSchedule="0 3 * * *")
    wait_running(env.kube, env.watched, name, 3)
    endpoint = client_endpoint(env.kube, env.watched, name)
    before = {f"{name}/before/{i}": str(i) for i in range(20)}
    put_keys(endpoint, before)
    path = f"{etcd_env.CLUSTERS}/namespaces/{env.watched}/etcdclusters/{name}"
    env.kube.patch(path, {"metadata": {"annotations": {"etcd.olmtool.dev/backup-request": "dr"}}})
    wait_for(
        lambda: (
            (get_cluster(env.kube, env.watched, name)["status"].get("lastBackup") or {}).get(
                "succeeded"
            )
            is True
        ),
        90,
        "on-demand backup",
    )
    snapshot = get_cluster(env.kube, env.watched, name)["status"]["lastBackup"]["snapshot"]
    put_keys(endpoint, {f"{name}/after/x": "written after the snapshot"})
    for victim in (f"{name}-1", f"{name}-2"):  # a majority loses its data
        env.kube.delete(f"/api/v1/namespaces/{env.watched}/pods/{victim}")
        env.kube.delete(f"/api/v1/namespaces/{env.watched}/persistentvolumeclaims/{victim}-data")

    def says_how_to_recover() -> bool:
        degraded = condition(get_cluster(env.kube, env.watched, name), "Degraded")
        return degraded.get("status") == "True" and "set spec.recovery.fromLatestBackup" in str(
            degraded.get("message")
        )

    wait_for(says_how_to_recover, 120, "Degraded, with how to recover by hand")
    degraded = condition(get_cluster(env.kube, env.watched, name), "Degraded")
    assert f"snapshot: {snapshot}" in degraded["message"], degraded["message"]
    time.sleep(5)  # still nothing rebuilt without spec.recovery
    assert "lastRecovery" not in get_cluster(env.kube, env.watched, name)["status"]
    assert get_cluster(env.kube, env.watched, name)["status"]["phase"] == "Degraded"

    patch_spec(env.kube, env.watched, name, recovery={"fromLatestBackup": True, "afterSeconds": 5})
    started = time.monotonic()
    wait_for(
        lambda: (
            (get_cluster(env.kube, env.watched, name)["status"].get("lastRecovery") or {}).get(
                "snapshot"
            )
            == snapshot
        ),
        90,
        "a rebuild from the snapshot",
    )
    wait_running(env.kube, env.watched, name, 3, timeout=240)
    print(f"rebuilt from {snapshot} to 3 members in {time.monotonic() - started:.1f}s")
    assert get_prefix(endpoint, f"{name}/before/") == before
    warned = [e for e in etcd_env.events(env.kube, env.watched, name) if e["type"] == "Warning"]
    assert any(e["reason"] == "RestoringFromBackup" for e in warned), warned


def _user_tls_secrets(env: Env, name: str) -> dict[str, str]:
    """What cert-manager would write for the cluster: a CA, and Secrets of type
    kubernetes.io/tls (tls.crt, tls.key, ca.crt) with wildcard names."""
    import base64
    import datetime

    etcd_env._operator_package()
    from etcd_operator import certs

    day = datetime.timedelta(days=1)
    ca = certs.new_ca("user CA", day)
    # etcd checks a peer's certificate against the reverse DNS name of its address, which
    # is under the cluster domain
    members = [f"*.{name}.{env.watched}.svc", f"*.{name}.{env.watched}.svc.cluster.local"]
    client_service = f"{name}-client.{env.watched}.svc"
    issued = {
        "server": certs.issue(ca, "server", day, [*members, client_service]),
        "peer": certs.issue(ca, "peer", day, members, server=True, client=True),
        "client": certs.issue(ca, "client", day, server=False, client=True),
    }
    refs = {}
    for role, pair in issued.items():
        secret = f"{name}-user-{role}"
        values = {"tls.crt": pair.cert, "tls.key": pair.key, "ca.crt": ca.cert}
        env.kube.create(
            f"/api/v1/namespaces/{env.watched}/secrets",
            {
                "metadata": {"name": secret},
                "type": "kubernetes.io/tls",
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()},
            },
        )
        refs[role] = secret
    return refs


def test_tls_turned_on_for_a_running_cluster_with_the_users_secrets(env: Env) -> None:
    name = _name()
    create_cluster(env.kube, env.watched, name, replicas=3, backupSchedule="0 3 * * *")
    wait_running(env.kube, env.watched, name, 3)
    keys = {f"{name}/k/{i}": str(i) for i in range(20)}
    put_keys(client_endpoint(env.kube, env.watched, name), keys)
    refs = _user_tls_secrets(env, name)
    lost_quorum: list[str] = []
    started = time.monotonic()
    patch_spec(env.kube, env.watched, name, tls={"mode": "secretRefs", "secretRefs": refs})

    def all_tls() -> bool:
        available = condition(get_cluster(env.kube, env.watched, name), "Available")
        if available.get("status") != "True":
            lost_quorum.append(str(available.get("message")))
        pods = _member_pods(env, name)
        return (
            len(pods) == 3
            and all(
                p["metadata"].get("annotations", {}).get("etcd.olmtool.dev/tls") == "on"
                for p in pods
            )
            and running(env.kube, env.watched, name, 3)
        )

    wait_for(all_tls, 420, f"{name}: every member serving TLS", interval=0.5)
    print(f"TLS turned on over 3 members (two rolls) in {time.monotonic() - started:.1f}s")
    assert not lost_quorum, f"Available went False while TLS was turned on: {lost_quorum[:3]}"
    status = get_cluster(env.kube, env.watched, name)["status"]
    assert status["tls"]["clientSecret"] == refs["client"] and status["tls"]["mode"] == "secretRefs"
    assert all(m["clientURL"].startswith("https://") for m in status["members"])
    endpoint = etcd_env.tls_endpoint(env.kube, env.watched, name)
    assert etcd_env.tls_get_prefix(endpoint, f"{name}/k/") == keys
    assert etcd_env.plain_refused(client_endpoint(env.kube, env.watched, name))
    # a backup over TLS with the user's client certificate
    env.kube.patch(
        f"{etcd_env.CLUSTERS}/namespaces/{env.watched}/etcdclusters/{name}",
        {"metadata": {"annotations": {"etcd.olmtool.dev/backup-request": "tls"}}},
    )
    wait_for(
        lambda: (
            (get_cluster(env.kube, env.watched, name)["status"].get("lastBackup") or {}).get(
                "succeeded"
            )
            is True
        ),
        90,
        "a backup over TLS",
    )
