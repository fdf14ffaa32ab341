"""The etcd operator on the local cluster: real etcd processes, the operator running as
the Pod OLM would create from the image olmtool builds.

One operator (installed from the newest CSV, 0.5.0: non-root, read-only root filesystem,
``/tmp`` an emptyDir; OwnNamespace-style targeting namespace ``watched``) serves every
test; each test makes its own EtcdCluster there.
"""

from __future__ import annotations

import contextlib
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
    member_pid,
    patch_spec,
    put_keys,
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
    assert get_prefix(endpoint, f"{name}/") == {f"{name}/kept": "yes"}


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
