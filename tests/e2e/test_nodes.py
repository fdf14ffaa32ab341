"""``cluster up --nodes 3``: three real nodes (a kubelet and containerd each) under one
control plane, as a kind cluster with workers. Pods spread over them, talk across nodes
under their own addresses, local volumes stay on their node, and a node stopped with
``cluster node stop`` goes NotReady as a switched-off machine does, then comes back.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.cluster import ClusterNetwork, clusterstatus, lifecycle, node_start, node_stop
from olmtool.kube import Kube
from tests.e2e.helpers import Cluster, service_account_ready, wait_for
from tests.e2e.test_real_node import BUSYBOX, PYTHON, kubectl, phase, pod, run_pod

NODES = ["olmtool-node", "olmtool-node2", "olmtool-node3"]


@pytest.fixture(scope="module")
def three(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[lifecycle.Cluster]:
    """A cluster of three nodes beside the session's (no OLM: only nodes are tested)."""
    root = tmp_path_factory.mktemp("three")
    made = lifecycle.up("three", root=root, registry_port=0, olm_crds=False, nodes=3)
    try:
        yield made
    finally:
        lifecycle.down(made.name, root=root, delete=True)
    # every node's namespace and link went, and the host's forward rule with them
    netns = subprocess.run(["ip", "netns"], capture_output=True, text=True).stdout
    assert f"olmtool-{made.network}-" not in netns
    rules = subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True)
    assert ClusterNetwork(made.network or 1).pod_cidr not in rules.stdout


@pytest.fixture(scope="module")
def kube(three: lifecycle.Cluster) -> Iterator[Kube]:
    client = Kube(Path(three.kubeconfig))
    client.create("/api/v1/namespaces", {"metadata": {"name": "spread"}})
    wait_for(lambda: service_account_ready(client, "spread", "default"), 30, "default SA")
    yield client
    client.close()


def root_of(made: lifecycle.Cluster) -> Path:
    return Path(made.state_dir).parent


def node_of_pod(kube: Kube, name: str) -> str:
    return str(kube.get(f"/api/v1/namespaces/spread/pods/{name}")["spec"].get("nodeName") or "")


def on_node(name: str, node: str, image: str, command: list[str], **spec: object) -> dict:
    return pod(name, image, command, nodeSelector={"kubernetes.io/hostname": node}, **spec)


def test_kubectl_get_nodes_shows_three_ready_nodes(three: lifecycle.Cluster) -> None:
    wide = kubectl(three, "get", "nodes", "--no-headers")
    rows = [line.split() for line in wide.splitlines()]
    assert [(row[0], row[1]) for row in rows] == [(name, "Ready") for name in NODES]
    status = clusterstatus.status(three.name, root=root_of(three))
    assert status.nodes == dict.fromkeys(NODES, "Ready")
    assert all(status.components.values()) and len(status.components) == 4 + 1 + 3 * 3 + 2


def test_pods_spread_and_talk_across_nodes_under_their_own_addresses(
    three: lifecycle.Cluster, kube: Kube
) -> None:
    network = ClusterNetwork(three.network or 1)
    server = on_node(
        "server", NODES[2], PYTHON, ["python3", "-m", "http.server", "8080", "-d", "/tmp"]
    )
    server["spec"]["containers"][0]["readinessProbe"] = {  # type: ignore[index]
        "httpGet": {"path": "/", "port": 8080},
        "periodSeconds": 1,
    }
    run_pod(kube, "spread", server)
    wait_for(lambda: phase(kube, "spread", "server") == "Running", 90, "server Running")
    server_ip = wait_for(
        lambda: kube.get("/api/v1/namespaces/spread/pods/server")["status"].get("podIP"),
        30,
        "server's address",
    )
    assert ipaddress.ip_address(server_ip) in ipaddress.ip_network(network.node(2, 3).pod_cidr)
    fetch = f"wget -q -O /dev/null http://{server_ip}:8080/ && echo fetched"
    run_pod(kube, "spread", on_node("client", NODES[1], BUSYBOX, ["sh", "-c", fetch],
                                    restartPolicy="Never"))  # fmt: skip
    wait_for(lambda: phase(kube, "spread", "client") == "Succeeded", 90, "client done")
    client_ip = kube.get("/api/v1/namespaces/spread/pods/client")["status"]["podIP"]
    assert ipaddress.ip_address(client_ip) in ipaddress.ip_network(network.node(1, 3).pod_cidr)
    # the server saw the client's own address, not its node's (no masquerading between
    # nodes: a peer's certificate is checked against it, as etcd does)
    logs = kubectl(three, "logs", "-n", "spread", "server")
    assert f"{client_ip} - - " in logs, logs


def test_a_deployment_with_anti_affinity_puts_one_pod_on_each_node(
    three: lifecycle.Cluster, kube: Kube
) -> None:
    labels = {"app": "spread"}
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
    kube.create(
        "/apis/apps/v1/namespaces/spread/deployments",
        {
            "metadata": {"name": "spread"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "affinity": {
                            "podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [term]
                            }
                        },
                        "containers": [
                            {"name": "s", "image": BUSYBOX, "command": ["sleep", "3600"]}
                        ],
                    },
                },
            },
        },
    )

    def placed() -> list[str]:
        pods = kube.get("/api/v1/namespaces/spread/pods?labelSelector=app%3Dspread")["items"]
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return sorted(p["spec"]["nodeName"] for p in running) if len(running) == 3 else []

    assert wait_for(placed, 120, "three Pods Running") == NODES


def test_a_claim_is_provisioned_on_its_first_pods_node(
    three: lifecycle.Cluster, kube: Kube
) -> None:
    kube.create(
        "/api/v1/namespaces/spread/persistentvolumeclaims",
        {
            "metadata": {"name": "local"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Mi"}},
            },
        },
    )
    claim = kube.get("/api/v1/namespaces/spread/persistentvolumeclaims/local")
    assert claim["status"]["phase"] == "Pending"  # WaitForFirstConsumer: no Pod yet
    body = on_node("writer", NODES[2], BUSYBOX, ["sh", "-c", "echo kept > /data/f"],
                   restartPolicy="Never",
                   volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "local"}}])  # fmt: skip
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "d", "mountPath": "/data"}]  # type: ignore[index]
    run_pod(kube, "spread", body)
    wait_for(lambda: phase(kube, "spread", "writer") == "Succeeded", 90, "writer done")
    bound = kube.get("/api/v1/namespaces/spread/persistentvolumeclaims/local")
    volume = kube.get(f"/api/v1/persistentvolumes/{bound['spec']['volumeName']}")
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [NODES[2]]
    # a Pod of the claim without a node of its own goes where the volume is
    reader = pod("reader", BUSYBOX, ["cat", "/data/f"], restartPolicy="Never",
                 volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "local"}}])  # fmt: skip
    reader["spec"]["containers"][0]["volumeMounts"] = [{"name": "d", "mountPath": "/data"}]  # type: ignore[index]
    run_pod(kube, "spread", reader)
    wait_for(lambda: phase(kube, "spread", "reader") == "Succeeded", 90, "reader done")
    assert node_of_pod(kube, "reader") == NODES[2]
    assert kubectl(three, "logs", "-n", "spread", "reader") == "kept\n"


def _condition(kube: Kube, node: str) -> str:
    conditions = kube.get(f"/api/v1/nodes/{node}")["status"]["conditions"]
    return next(c["status"] for c in conditions if c["type"] == "Ready")


def test_a_stopped_node_goes_not_ready_and_comes_back(three: lifecycle.Cluster, kube: Kube) -> None:
    run_pod(kube, "spread", on_node("steady", NODES[2], BUSYBOX, ["sleep", "3600"]))
    wait_for(lambda: phase(kube, "spread", "steady") == "Running", 90, "steady Running")
    stopped = node_stop(NODES[2], name=three.name, root=root_of(three))
    assert sorted(stopped) == sorted(
        f"{c}@{NODES[2]}" for c in ("containerd", "kubelet", "kube-proxy")
    )
    recorded = lifecycle.read_cluster(three.name, root_of(three))
    assert recorded is not None and recorded.stopped_nodes == [NODES[2]]
    # its containers went with it, as with a machine switched off
    network = ClusterNetwork(three.network or 1).node(2, 3)
    cgroups = Path("/sys/fs/cgroup/memory", network.netns)  # the node's Pods' cgroup root
    assert not [p for p in cgroups.rglob("cgroup.procs") if p.read_text().strip()]
    # the node-lifecycle controller sees its Lease expire (40 s grace)
    wait_for(lambda: _condition(kube, NODES[2]) == "Unknown", 90, "node3 NotReady", interval=1)
    assert clusterstatus.status(three.name, root=root_of(three)).nodes[NODES[2]] == "stopped"
    # `up` keeps a stopped node stopped: only `node start` brings it back
    assert lifecycle.up(three.name, root=root_of(three), olm_crds=False).notes == []
    assert _condition(kube, NODES[0]) == "True"
    started = node_start(NODES[2], name=three.name, root=root_of(three))
    assert len(started) == 3
    assert _condition(kube, NODES[2]) == "True"
    wait_for(lambda: phase(kube, "spread", "steady") == "Running", 90, "steady Running again")


def test_the_cli_stops_only_a_node_that_exists_and_not_the_first(three: lifecycle.Cluster) -> None:
    env_root = {"OLMTOOL_CLUSTERS_DIR": str(root_of(three))}
    for node, expected in (
        ("olmtool-node", "is the cluster's first node"),
        ("olmtool-node9", "no node 'olmtool-node9'; its nodes: olmtool-node, olmtool-node2,"),
    ):
        result = _cli(["cluster", "node", "stop", node, "--name", three.name], env_root)
        assert result.returncode == 1, result.stderr
        assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1
    status = _cli(["cluster", "status", "--name", three.name, "-o", "json"], env_root)
    assert json.loads(status.stdout)["nodes"] == dict.fromkeys(NODES, "Ready")


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "olmtool", *args],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def etcd_operator(three: lifecycle.Cluster, kube: Kube) -> None:
    """The etcd operator from the newest CSV, as OLM installs it, watching ``spread``."""
    from tests.e2e import etcd_env
    from tests.e2e.test_etcd_operator import RELEASE, push_operator_images

    assert three.registry is not None
    push_operator_images(three.registry)
    csv, manifests = etcd_env.bundle_manifests(RELEASE)
    etcd_env.install_crds(kube, manifests)
    kube.create("/api/v1/namespaces", {"metadata": {"name": "etcd-op"}})
    wait_for(lambda: service_account_ready(kube, "etcd-op", "default"), 30, "default SA")
    installed = etcd_env.install_from_csv(kube, csv, "etcd-op", ["spread"])
    wait_for(lambda: etcd_env.operator_ready(kube, installed), 120, "operator Ready")


def members_by_node(kube: Kube, name: str) -> dict[str, str]:
    """Each member's node, from the cluster's status."""
    from tests.e2e import etcd_env

    status = etcd_env.get_cluster(kube, "spread", name).get("status") or {}
    return {m["name"]: m.get("node") for m in status.get("members") or []}


def test_a_tls_clusters_members_spread_one_per_node_and_renew_their_certificates(
    kube: Kube, etcd_operator: None
) -> None:
    """A 3-member TLS cluster (mode auto) lands on three nodes: its members prefer nodes
    without another member of theirs; status names each member's node. Plain HTTP gets
    nothing from a member. Certificates of a 240 s lifetime are renewed in their last
    third while a writer runs over TLS: every member serves a new certificate before the
    first ones expire, new handshakes work after that, and no acknowledged write is lost."""
    pytest.importorskip("aetcd", reason="the writer talks to etcd with aetcd's stubs")
    import datetime
    import time

    from tests.e2e import etcd_env

    name = "spread"
    tls = {"mode": "auto", "certificateLifetimeSeconds": 240}
    etcd_env.create_cluster(kube, "spread", name, replicas=3, version="3.5.1", tls=tls)
    etcd_env.wait_running(kube, "spread", name, 3, timeout=180)
    pods = kube.get(
        "/api/v1/namespaces/spread/pods?labelSelector=app.kubernetes.io%2Finstance%3Dspread,"
        "app.kubernetes.io%2Fcomponent%3Dmember"
    )["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == NODES
    nodes = wait_for(lambda: members_by_node(kube, name), 30, "members' nodes")
    assert sorted(nodes.values()) == NODES
    status = etcd_env.get_cluster(kube, "spread", name)["status"]
    assert status["tls"]["caSecret"] == "spread-ca" and status["tls"]["expiry"]
    members = etcd_env.member_endpoints(kube, "spread", name)
    for address in members.values():
        assert etcd_env.plain_refused(address), f"{address} answered plain HTTP"

    def served() -> dict[str, object]:
        return {
            member: etcd_env.served_certificate(
                etcd_env.tls_endpoint(kube, "spread", name, f"{member}@{address}")
            )
            for member, address in members.items()
        }

    first = served()
    expiry = min(c.not_valid_after_utc for c in first.values())  # type: ignore[attr-defined]
    writer = etcd_env.TlsWriter(lambda: etcd_env.tls_endpoint(kube, "spread", name), name)
    writer.start()
    try:

        def renewed() -> bool:
            now = served()
            return all(
                now[m].serial_number != first[m].serial_number  # type: ignore[attr-defined]
                for m in members
            )

        wait_for(renewed, 300, "every member serving a renewed certificate", interval=2)
        renewed_at = datetime.datetime.now(datetime.UTC)
        print(f"renewed {(expiry - renewed_at).total_seconds():.0f}s before the first expiry")
        assert renewed_at < expiry, "a member served an expired certificate"
        time.sleep(max((expiry - renewed_at).total_seconds(), 0) + 5)
        acked_at_expiry = len(writer.acked)
        # new handshakes, past the first certificates' expiry
        assert sorted(served()) == sorted(members)
        wait_for(lambda: len(writer.acked) > acked_at_expiry + 10, 60, "writes after expiry")
        assert etcd_env.running(kube, "spread", name, 3)
    finally:
        writer.stop()
    stored = etcd_env.tls_get_prefix(etcd_env.tls_endpoint(kube, "spread", name), f"{name}/")
    assert set(writer.acked) <= set(stored), "an acknowledged write was lost"


def test_a_member_on_a_stopped_node_is_replaced_on_a_surviving_node(
    three: lifecycle.Cluster, kube: Kube, etcd_operator: None
) -> None:
    """Stopping the node of one member: the cluster stays Available with two; once the
    node has been gone past nodeLossTimeoutSeconds, a new member on a surviving node
    takes its place, and no acknowledged write is lost."""
    pytest.importorskip("aetcd", reason="the writer talks to etcd through aetcd")
    from tests.e2e import etcd_env

    name = "survivor"
    etcd_env.create_cluster(
        kube, "spread", name, replicas=3, version="3.5.1", nodeLossTimeoutSeconds=20
    )
    etcd_env.wait_running(kube, "spread", name, 3, timeout=180)
    nodes = wait_for(lambda: members_by_node(kube, name), 30, "members' nodes")
    # not the first node (it cannot be stopped), nor the operator's: an operator that
    # goes down with a node waits for Kubernetes to move it (300 s), which is not what
    # this test is about
    operator_pods = kube.get("/api/v1/namespaces/etcd-op/pods")["items"]
    keep = {NODES[0], *(p["spec"].get("nodeName") for p in operator_pods)}
    victim, lost_node = next((m, n) for m, n in sorted(nodes.items()) if n not in keep)
    endpoint = etcd_env.client_endpoint(kube, "spread", name)
    writer = etcd_env.Writer(endpoint, name)
    writer.start()
    try:
        node_stop(lost_node, name=three.name, root=root_of(three))
        try:

            def two_left() -> bool:
                cluster = etcd_env.get_cluster(kube, "spread", name)
                available = etcd_env.condition(cluster, "Available")
                ready = cluster["status"].get("readyMembers")
                if ready == 2 and available.get("status") == "True":
                    return True
                raise AssertionError(f"readyMembers {ready}, Available {available}")

            wait_for(two_left, 150, "Available with 2 members", interval=1)

            def replaced() -> bool:
                placed = members_by_node(kube, name)
                if (
                    victim not in placed
                    and len(placed) == 3
                    and lost_node not in placed.values()
                    and etcd_env.running(kube, "spread", name, 3)
                ):
                    return True
                status = etcd_env.get_cluster(kube, "spread", name).get("status") or {}
                conditions = {c["type"]: c.get("message") for c in status.get("conditions") or []}
                raise AssertionError(f"{status.get('phase')}: members {placed}; {conditions}")

            # 40 s for the node to be NotReady, 20 s of timeout, then a new member: about a
            # minute on a quiet machine; two e2e workers on 2 cores take much longer
            wait_for(replaced, 480, "a member replaced on a surviving node", interval=1)
        finally:
            node_start(lost_node, name=three.name, root=root_of(three))
    finally:
        writer.stop()
    stored = etcd_env.get_prefix(endpoint, f"{name}/")
    assert set(writer.acked) <= set(stored)
    assert len(writer.acked) > 10
    events = kube.get("/api/v1/namespaces/spread/events")["items"]
    said = [(e.get("reason"), str(e.get("message"))) for e in events]
    assert any(
        reason == "ReplacingMember" and victim in message and lost_node in message
        for reason, message in said
    ), said
