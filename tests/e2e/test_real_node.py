"""The local cluster's node is a real one: kubelet 1.20 with containerd, as on kind.

Images run as they would anywhere (the stand-ins from Debian packages, pulled under
their upstream names through the registry mirrors); logs, exec and port access go
through the real kubelet API; Services by kube-proxy and names by the cluster DNS;
killed components come back with `cluster up`; two clusters run side by side, and
`cluster down --delete` leaves nothing of a cluster on the host.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.cluster import lifecycle
from olmtool.cluster.assets import find_kubectl
from olmtool.cluster.kubeletnode import RealNode, dns_hosts_file
from olmtool.cluster.kubeletnode.containerd import ContainerdPaths
from olmtool.cluster.network import ClusterNetwork
from olmtool.kube import Kube
from tests.e2e.helpers import Cluster, service_account_ready, wait_for

PYTHON = "docker.io/library/python:3.11"
BUSYBOX = "docker.io/library/busybox:1.35"


def kubectl(cluster: Cluster | lifecycle.Cluster, *args: str, timeout: float = 60) -> str:
    kubeconfig = cluster.kubeconfig
    result = subprocess.run(
        [str(find_kubectl()), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def pod(name: str, image: str, command: list[str], **spec: object) -> dict[str, object]:
    container = {"name": name, "image": image, "command": command}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container], **spec},
    }


def run_pod(kube: Kube, namespace: str, body: dict[str, object]) -> None:
    kube.create(f"/api/v1/namespaces/{namespace}/pods", body)


def phase(kube: Kube, namespace: str, name: str) -> str:
    found = kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return str(found.get("status", {}).get("phase"))


def ready(kube: Kube, namespace: str, name: str) -> bool:
    found = kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    conditions = found.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def web(kube: Kube, namespace: str, name: str = "web") -> str:
    """A Python HTTP server Pod behind a Service of the same name; its ClusterIP."""
    body = pod(name, PYTHON, ["python3", "-m", "http.server", "8080", "-d", "/tmp"])
    body["spec"]["containers"][0]["readinessProbe"] = {  # type: ignore[index]
        "httpGet": {"path": "/", "port": 8080},
        "periodSeconds": 1,
    }
    run_pod(kube, namespace, body)
    service = kube.create(
        f"/api/v1/namespaces/{namespace}/services",
        {
            "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    wait_for(lambda: ready(kube, namespace, name), 60, f"{name} Ready")
    return str(service["spec"]["clusterIP"])


def test_the_node_is_kubelet_1_20_on_containerd(cluster: Cluster) -> None:
    wide = kubectl(cluster, "get", "nodes", "-o", "wide")
    assert "v1.20.2" in wide and "containerd://1.6." in wide, wide
    node = cluster.kube.get("/api/v1/nodes/olmtool-node")
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.20.2"
    assert info["containerRuntimeVersion"].startswith("containerd://1.6.")
    network = ClusterNetwork(cluster.local.network or 1)
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == network.host_address


@pytest.mark.parametrize(("tag", "version"), [("v3.5.1", "3.5.1"), ("v3.4.23", "3.4.23")])
def test_an_etcd_image_runs_its_own_etcd(cluster: Cluster, ns: str, tag: str, version: str) -> None:
    name = f"etcd-{version.replace('.', '-')}"
    body = pod(name, f"quay.io/coreos/etcd:{tag}", ["etcd", "--version"], restartPolicy="Never")
    run_pod(cluster.kube, ns, body)
    wait_for(lambda: phase(cluster.kube, ns, name) == "Succeeded", 60, f"{name} done")
    assert f"etcd Version: {version}" in kubectl(cluster, "logs", "-n", ns, name)


def test_exec_and_logs_follow_go_through_the_kubelet(cluster: Cluster, ns: str) -> None:
    script = "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"
    run_pod(cluster.kube, ns, pod("ticker", BUSYBOX, ["sh", "-c", script]))
    wait_for(lambda: phase(cluster.kube, ns, "ticker") == "Running", 60, "ticker Running")
    assert kubectl(cluster, "exec", "-n", ns, "ticker", "--", "sh", "-c", "echo $((6*7))") == "42\n"
    follow = subprocess.Popen(
        [str(find_kubectl()), f"--kubeconfig={cluster.kubeconfig}", "logs", "-f", "-n", ns,
         "ticker"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert follow.stdout is not None
        lines = [follow.stdout.readline() for _ in range(8)]
    finally:
        follow.kill()
        follow.wait()
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + 8))


def test_a_pod_reaches_another_by_service_name(cluster: Cluster, ns: str) -> None:
    web(cluster.kube, ns)
    names = ["web", f"web.{ns}", f"web.{ns}.svc", f"web.{ns}.svc.cluster.local"]
    # retried for up to 30 s, as any client of a new Service must: kube-proxy programs
    # the Service's rules a moment after its endpoints change
    script = (
        "import sys, time, urllib.request\n"
        "for name in sys.argv[1:]:\n"
        "    deadline = time.monotonic() + 30\n"
        "    while True:\n"
        "        try:\n"
        "            print(name, urllib.request.urlopen(f'http://{name}/', timeout=3).status)\n"
        "            break\n"
        "        except OSError:\n"
        "            if time.monotonic() > deadline:\n"
        "                raise\n"
        "            time.sleep(0.5)\n"
    )
    body = pod("client", PYTHON, ["python3", "-c", script, *names], restartPolicy="Never")
    run_pod(cluster.kube, ns, body)
    wait_for(lambda: phase(cluster.kube, ns, "client") in ("Succeeded", "Failed"), 150, "client")
    output = kubectl(cluster, "logs", "-n", ns, "client")
    assert output.split("\n")[:-1] == [f"{name} 200" for name in names], output


def test_the_host_reaches_service_and_pod_addresses(cluster: Cluster, ns: str) -> None:
    import urllib.request

    cluster_ip = web(cluster.kube, ns)
    pod_ip = cluster.kube.get(f"/api/v1/namespaces/{ns}/pods/web")["status"]["podIP"]

    def status_of(url: str) -> int | None:
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                return int(response.status)
        except OSError:  # the Service's rules come a moment after its endpoints
            return None

    urls = (f"http://{cluster_ip}/", f"http://{pod_ip}:8080/")
    statuses = [wait_for(lambda u=url: status_of(u), 30, url) for url in urls]  # type: ignore[misc]
    assert statuses == [200, 200], statuses


def test_a_claim_is_bound_and_writable_by_a_non_root_pod(cluster: Cluster, ns: str) -> None:
    cluster.kube.create(
        f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Mi"}},
            },
        },
    )
    body = pod(
        "writer", BUSYBOX, ["sh", "-c", "echo kept > /data/file && cat /data/file && id -u"],
        restartPolicy="Never", securityContext={"runAsUser": 65532, "runAsNonRoot": True},
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    )  # fmt: skip
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]  # type: ignore[index]
    run_pod(cluster.kube, ns, body)
    wait_for(lambda: phase(cluster.kube, ns, "writer") == "Succeeded", 90, "writer done")
    assert kubectl(cluster, "logs", "-n", ns, "writer") == "kept\n65532\n"


def test_cluster_load_puts_an_image_on_the_node(cluster: Cluster, ns: str) -> None:
    from olmtool.images.debian import RECIPES, build_recipe

    layout = build_recipe(RECIPES["busybox-1.35"]).layout
    loaded = lifecycle.load_image(
        layout, "example.invalid/mine:1", name=cluster.name, root=cluster.root
    )
    assert loaded == "example.invalid/mine:1"
    body = pod("mine", loaded, ["echo", "loaded"], restartPolicy="Never")
    body["spec"]["containers"][0]["imagePullPolicy"] = "Never"  # type: ignore[index]
    run_pod(cluster.kube, ns, body)
    wait_for(lambda: phase(cluster.kube, ns, "mine") == "Succeeded", 60, "mine done")
    assert kubectl(cluster, "logs", "-n", ns, "mine") == "loaded\n"


# --- a second cluster: side by side, kill -9 of each component, nothing left behind -----


@pytest.fixture(scope="module")
def second(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[lifecycle.Cluster]:
    """A second cluster with the session cluster's name, under another root (as two test
    workers, or two users, have): nothing of the host may be keyed on the name alone."""
    root = tmp_path_factory.mktemp("second")
    made = lifecycle.up(cluster.local.name, root=root, registry_port=0, olm_crds=False)
    try:
        yield made
    finally:
        lifecycle.down(made.name, root=root, delete=True)


def _namespace(kube: Kube, name: str) -> None:
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait_for(lambda: service_account_ready(kube, name, "default"), 30, "default SA")


def test_two_clusters_serve_the_same_names_side_by_side(
    cluster: Cluster, second: lifecycle.Cluster
) -> None:
    import urllib.request

    assert second.network != cluster.local.network
    kubes = [cluster.kube, Kube(Path(second.kubeconfig))]
    addresses = []
    for kube in kubes:
        _namespace(kube, "same")
        addresses.append(web(kube, "same"))
    assert addresses[0] != addresses[1]  # each cluster's Service range is its own
    time.sleep(2)  # both kube-proxies synced at least once since: neither removed the other's
    for address in addresses:
        with urllib.request.urlopen(f"http://{address}/", timeout=5) as response:
            assert response.status == 200
    # each node keeps its Pods' cgroups and logs apart: a kubelet kills the Pods and
    # deletes the log folders of its cgroup root and /var/log/pods that it does not run
    for kube, made in zip(kubes, (cluster.local, second), strict=True):
        uid = kube.get("/api/v1/namespaces/same/pods/web")["metadata"]["uid"]
        node = _node(made)
        assert [p.name for p in (node.directory / "logs" / "pods").glob(f"same_web_{uid}")]
        assert list(Path("/sys/fs/cgroup/memory", node.host_key).rglob(f"pod{uid}"))


@pytest.mark.parametrize(
    "component", ["kubelet", "containerd", "kube-proxy", "cluster-dns", "provisioner"]
)
def test_a_killed_node_component_comes_back_and_pods_run_on(
    second: lifecycle.Cluster, component: str
) -> None:
    kube = Kube(Path(second.kubeconfig))
    if kube.get_or_none("/api/v1/namespaces/default/pods/steady") is None:
        run_pod(kube, "default", pod("steady", BUSYBOX, ["sleep", "3600"]))
    wait_for(lambda: phase(kube, "default", "steady") == "Running", 60, "steady Running")
    before = kube.get("/api/v1/namespaces/default/pods/steady")["status"]["containerStatuses"]
    recorded = lifecycle.read_cluster(second.name, Path(second.state_dir).parent)
    assert recorded is not None
    os.kill(recorded.components[component].pid, signal.SIGKILL)
    wait_for(lambda: not recorded.components[component].alive(), 10, f"{component} gone")
    again = lifecycle.up(second.name, root=Path(second.state_dir).parent, olm_crds=False)
    assert again.running()[component]
    assert f"restarted {component}" in again.notes
    wait_for(lambda: lifecycle.node_ready(again), 60, "node Ready again")
    after = kube.get("/api/v1/namespaces/default/pods/steady")["status"]["containerStatuses"]
    assert after[0]["containerID"] == before[0]["containerID"]  # the same container ran on
    assert after[0]["restartCount"] == before[0]["restartCount"]


def _node(made: lifecycle.Cluster) -> RealNode:
    network = ClusterNetwork(made.network or 1).node(0, 1)
    return RealNode("olmtool-node", made.name, Path(made.state_dir) / "node", network)


def _host_traces(made: lifecycle.Cluster) -> list[str]:
    """What of the cluster ``made`` is on the host: processes, mounts, network, rules."""
    node = _node(made)
    network = node.network
    traces = []
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    hosts = str(dns_hosts_file(network.cluster))
    traces += [line for line in ps.splitlines() if made.state_dir in line or hosts in line]
    mounts = Path("/proc/self/mountinfo").read_text()
    traces += [line for line in mounts.splitlines() if made.state_dir in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    traces += [line for line in links.splitlines() if f" {network.bridge}@" in line]
    if Path("/run/netns", network.netns).exists():
        traces.append(f"netns {network.netns}")
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    prefixes = (network.pod_cidr, network.service_cidr, network.link_cidr)
    traces += [line for line in routes.splitlines() if line.startswith(prefixes)]
    for table in ("nat", "filter"):
        rules = subprocess.run(["iptables-save", "-t", table], capture_output=True, text=True)
        traces += [line for line in rules.stdout.splitlines() if network.pod_cidr in line]
    sockets = ContainerdPaths.under(node.directory).sockets
    traces += [str(path) for path in (*sockets, dns_hosts_file(network.cluster)) if path.exists()]
    traces += [str(node.kubelet.root)] if node.kubelet.root.exists() else []
    cgroups = Path("/sys/fs/cgroup/memory", node.host_key)
    traces += [str(cgroups)] if cgroups.exists() else []
    traces += [str(node.mount_namespace)] if node.mount_namespace.exists() else []
    return traces


def test_down_delete_leaves_nothing_of_the_cluster_behind(cluster: Cluster, tmp_path: Path) -> None:
    made = lifecycle.up("gone", root=tmp_path, registry_port=0, olm_crds=False)
    kube = Kube(Path(made.kubeconfig))
    run_pod(kube, "default", pod("hold", BUSYBOX, ["sleep", "3600"]))
    wait_for(lambda: phase(kube, "default", "hold") == "Running", 60, "hold Running")
    kube.close()
    assert _host_traces(made)  # the check sees a running cluster
    lifecycle.down("gone", root=tmp_path, delete=True)
    assert _host_traces(made) == []
    assert not Path(made.state_dir).exists()
    assert lifecycle.node_ready(cluster.local)  # the session's cluster is untouched
