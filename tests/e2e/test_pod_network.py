"""Pod networking against a real control plane: network namespaces, Services, hostPorts.

The session's ``cluster`` runs on a cluster network of its own (tests/e2e/conftest.py):
its Pods have network namespaces on the cluster's bridge and the node agent proxies
Service ClusterIPs. The last test starts a second cluster (control plane + node agent on
another claimed network) beside it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.cluster import claim_network, release_network
from olmtool.cluster.controlplane import start_control_plane
from olmtool.cluster.node import NodeAgent, read_logs
from olmtool.cluster.node.kube import Kube
from olmtool.cluster.node.netns import leftover_sandboxes, remove_node_network
from olmtool.ports import free_port
from tests.e2e.helpers import JSON, TIMINGS, Cluster, node_ready, service_account_ready, wait_for
from tests.e2e.test_node_agent import (
    create_pod,
    get_pod,
    is_ready,
    make_pod,
    phase,
    pods,
)

NAME_SERVER = textwrap.dedent(
    """
    import http.server, os
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = os.environ.get("ANSWER", os.environ["POD_NAME"]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    http.server.ThreadingHTTPServer(("0.0.0.0", 8080), Handler).serve_forever()
    """
)

# Prints "url body" for each URL, retrying (TRIES times) while a name does not resolve
# or nothing serves the address yet.
FETCH = textwrap.dedent(
    """
    import os, sys, time, urllib.request
    for url in sys.argv[1:]:
        for attempt in range(int(os.environ.get("TRIES", "100"))):
            try:
                body = urllib.request.urlopen(url, timeout=5).read().decode()
                break
            except OSError as exc:
                error = exc
                time.sleep(0.3)
        else:
            body = f"ERROR {error}"
        print(url, body, flush=True)
    """
)


def server_container(**extra: object) -> JSON:
    """Serves its Pod's name on 0.0.0.0:8080 (every server Pod binds the same port). A
    fixed port is safe only here: each Pod has a network namespace of its own (the tests
    assert it), so no host process can hold it; what listens on the host (hostPorts,
    Service ClusterIPs) takes free ports."""
    return {
        "name": "web",
        "image": "python:3",
        "command": ["python3", "-c", NAME_SERVER],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "http", "containerPort": 8080, **extra}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1},
    }


def fetch_pod(
    name: str, urls: list[str], script: str = "", tries: int = 100, **spec: object
) -> JSON:
    """A Pod that prints what ``urls`` answer (after ``script``, a shell snippet)."""
    container = {
        "name": "main",
        "image": "python:3",
        "command": ["sh", "-c", f'{script} exec python3 -c "$0" "$@"', FETCH, *urls],
        "env": [{"name": "TRIES", "value": str(tries)}],
    }
    return make_pod(name, [container], restartPolicy="Never", **spec)


def run_to_end(kube: Kube, cluster: Cluster, namespace: str, pod: JSON) -> str:
    create_pod(kube, namespace, pod)
    name = pod["metadata"]["name"]
    done = wait_for(lambda: phase(kube, namespace, name, "Succeeded", "Failed"), 90, name)
    output = read_logs(cluster.state_dir, namespace, name)
    assert done["status"]["phase"] == "Succeeded", output
    return output


def ready_pod(kube: Kube, namespace: str, name: str) -> JSON:
    return wait_for(lambda: is_ready(p := get_pod(kube, namespace, name)) and p, 60, name)


def http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


# -- tests -------------------------------------------------------------------------------


def test_pods_bind_the_same_port_and_reach_each_other(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    network = cluster.agent.network
    assert network is not None and cluster.agent.net.namespaces
    started = time.monotonic()
    create_pod(kube, ns, make_pod("web-a", [server_container()]))
    # an exec probe runs in the Pod's namespace: its 127.0.0.1:8080 is the Pod's server
    inside = ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 8080))"]
    probe = {"exec": {"command": inside}, "periodSeconds": 1}
    probed = {**server_container(), "readinessProbe": probe}
    create_pod(kube, ns, make_pod("web-b", [probed]))
    a, b = ready_pod(kube, ns, "web-a"), ready_pod(kube, ns, "web-b")
    TIMINGS["two Pods create -> Ready (network namespaces)"] = time.monotonic() - started
    ip_a, ip_b = a["status"]["podIP"], b["status"]["podIP"]
    pod_cidr = ipaddress.IPv4Network(network.pod_cidr)
    assert ip_a != ip_b and {ipaddress.IPv4Address(ip_a), ipaddress.IPv4Address(ip_b)} <= set(
        pod_cidr
    )
    assert network.gateway not in (ip_a, ip_b)
    # from the host, through the bridge
    assert http_get(f"http://{ip_a}:8080/") == "web-a"
    assert http_get(f"http://{ip_b}:8080/") == "web-b"
    # from Pod to Pod; and the Pod's own localhost is its own, not the host's
    output = run_to_end(
        kube,
        cluster,
        ns,
        fetch_pod("client", [f"http://{ip_a}:8080/", f"http://{ip_b}:8080/"]),
    )
    assert output.splitlines() == [f"http://{ip_a}:8080/ web-a", f"http://{ip_b}:8080/ web-b"]
    inside = run_to_end(kube, cluster, ns, fetch_pod("local", ["http://127.0.0.1:8080/"], tries=1))
    assert "ERROR" in inside  # nothing serves 8080 in the client's own namespace


def test_services_by_name_cluster_ip_and_variables(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    # A Service port is a listener on the host (ClusterIP:port, the node agent's proxy): a
    # host process holding the port on every address (*:80) would block it, so a free one.
    port = free_port("0.0.0.0")
    template = {
        "metadata": {"labels": {"app": "echo"}},
        "spec": {"terminationGracePeriodSeconds": 2, "containers": [server_container()]},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "echo"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "echo"}}, "template": template},
    }
    # a client started before the Service exists: its hosts file gets the name later
    early = fetch_pod("early", [f"http://echo.{ns}.svc:{port}/"])
    create_pod(kube, ns, early)
    kube.create(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment)
    service = kube.create(
        f"/api/v1/namespaces/{ns}/services",
        {
            "metadata": {"name": "echo"},
            "spec": {
                "selector": {"app": "echo"},
                "ports": [{"name": "http", "port": port, "targetPort": "http"}],
            },
        },
    )
    cluster_ip = service["spec"]["clusterIP"]
    assert ipaddress.IPv4Address(cluster_ip) in ipaddress.IPv4Network(
        cluster.agent.network.service_cidr  # type: ignore[union-attr]
    )
    wait_for(lambda: len([p for p in pods(kube, ns, "app=echo") if is_ready(p)]) == 2, 60, "echo")
    names = {p["metadata"]["name"] for p in pods(kube, ns, "app=echo")}

    variables = (
        f'echo "vars $ECHO_SERVICE_HOST $ECHO_SERVICE_PORT_HTTP $ECHO_PORT_{port}_TCP_ADDR";'
    )
    urls = [
        f"http://echo:{port}/",
        f"http://echo.{ns}.svc.cluster.local:{port}/",
        *[f"http://{cluster_ip}:{port}/"] * 4,
    ]
    output = run_to_end(
        kube, cluster, ns, fetch_pod("client", urls, script=variables + " echo;")
    ).splitlines()
    assert output[0] == f"vars {cluster_ip} {port} {cluster_ip}"
    answers = [line.split(" ", 1)[1] for line in output[1:] if line]
    assert set(answers) == names, output  # round robin reaches both Pods
    assert "$ECHO_SERVICE_HOST" not in output

    # enableServiceLinks: false keeps only the kubernetes Service's variables
    quiet = fetch_pod(
        "quiet",
        [f"http://echo:{port}/"],
        script='echo "vars [$ECHO_SERVICE_HOST] $KUBERNETES_SERVICE_HOST";',
        enableServiceLinks=False,
    )
    network = cluster.agent.network
    assert network is not None
    lines = run_to_end(kube, cluster, ns, quiet).splitlines()
    assert lines[0] == f"vars [] {network.apiserver_service_ip}"
    assert lines[1].split(" ", 1)[1] in names

    done = wait_for(lambda: phase(kube, ns, "early", "Succeeded", "Failed"), 60, "early")
    early_output = read_logs(cluster.state_dir, ns, "early")
    assert done["status"]["phase"] == "Succeeded", early_output
    assert early_output.split(" ", 1)[1].strip() in names


IN_CLUSTER = textwrap.dedent(
    """
    from kubernetes import client, config
    config.load_incluster_config()
    print("host", client.Configuration.get_default_copy().host, flush=True)
    print("version", client.VersionApi().get_code().git_version, flush=True)
    configuration = client.Configuration.get_default_copy()
    configuration.host = "https://kubernetes.default.svc"
    api = client.VersionApi(client.ApiClient(configuration))
    print("by name", api.get_code().git_version, flush=True)
    """
)


def test_in_cluster_client_reaches_the_apiserver_through_its_service(
    cluster: Cluster, ns: str
) -> None:
    kube = cluster.kube
    network = cluster.agent.network
    assert network is not None
    container = {"name": "main", "image": "python:3", "command": ["python3", "-c", IN_CLUSTER]}
    create_pod(kube, ns, make_pod("incluster", [container], restartPolicy="Never"))
    done = wait_for(lambda: phase(kube, ns, "incluster", "Succeeded", "Failed"), 60, "ends")
    output = read_logs(cluster.state_dir, ns, "incluster")
    assert done["status"]["phase"] == "Succeeded", output
    assert output.splitlines() == [
        f"host https://{network.apiserver_service_ip}:443",
        "version v1.20.2",
        "by name v1.20.2",
    ]


def test_host_port_is_forwarded_and_a_clash_is_an_event(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    port = free_port("0.0.0.0")
    create_pod(kube, ns, make_pod("published", [server_container(hostPort=port)]))
    ready_pod(kube, ns, "published")
    assert wait_for(lambda: http_get(f"http://127.0.0.1:{port}/"), 15, "hostPort") == "published"

    with socket.socket() as taken:  # a host process holds the port the next Pod asks for
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        clash = taken.getsockname()[1]
        create_pod(kube, ns, make_pod("clashing", [server_container(hostPort=clash)]))

        def conflict() -> JSON | None:
            events = kube.get(f"/api/v1/namespaces/{ns}/events")["items"]
            return next(
                (
                    e
                    for e in events
                    if e["reason"] == "HostPortConflict"
                    and e["involvedObject"]["name"] == "clashing"
                ),
                None,
            )

        event = wait_for(conflict, 30, "HostPortConflict event")
        assert event["type"] == "Warning" and str(clash) in event["message"]
        assert is_ready(ready_pod(kube, ns, "clashing"))  # the Pod itself runs
    assert cluster.agent.started


@pytest.fixture
def second_cluster(kube_assets: Path, tmp_path: Path) -> Iterator[Cluster]:
    """Another control plane and node agent on a network of their own."""
    network = claim_network(tmp_path)
    with contextlib.ExitStack() as stack:
        stack.callback(release_network, tmp_path)
        plane = stack.enter_context(
            start_control_plane(kube_assets, tmp_path / "control-plane", network=network)
        )
        agent = NodeAgent(
            plane.kubeconfig, tmp_path / "node", backoff_base=0.5, stop_grace=5, network=network
        )
        agent.start()
        stack.callback(agent.stop)
        kube = Kube(plane.kubeconfig)
        stack.callback(kube.close)
        wait_for(lambda: node_ready(kube), 30, "second node Ready")
        yield Cluster(plane, agent, kube, tmp_path / "node")


def test_two_clusters_run_the_same_workload_side_by_side(
    cluster: Cluster, second_cluster: Cluster
) -> None:
    first, second = cluster.agent.network, second_cluster.agent.network
    assert first is not None and second is not None and first.index != second.index
    port = free_port("0.0.0.0")  # the Services' port is a host listener: a free one
    answers = []
    for each in (cluster, second_cluster):
        kube = each.kube
        kube.create("/api/v1/namespaces", {"metadata": {"name": "same"}})
        wait_for(lambda k=kube: service_account_ready(k, "same", "default"), 30, "default SA")
        container = server_container()
        container["env"] = [*container["env"], {"name": "ANSWER", "value": str(each.kubeconfig)}]
        create_pod(kube, "same", make_pod("web", [container], metadata={"labels": {"app": "w"}}))
        service = kube.create(
            "/api/v1/namespaces/same/services",
            {
                "metadata": {"name": "web"},
                "spec": {"selector": {"app": "w"}, "ports": [{"port": port, "targetPort": 8080}]},
            },
        )
        pod = ready_pod(kube, "same", "web")
        answers.append((pod["status"]["podIP"], service["spec"]["clusterIP"]))
    try:
        (ip_one, svc_one), (ip_two, svc_two) = answers
        assert ip_one != ip_two and svc_one != svc_two
        assert http_get(f"http://{ip_one}:8080/") == str(cluster.kubeconfig)
        assert http_get(f"http://{ip_two}:8080/") == str(second_cluster.kubeconfig)
        for svc, each in ((svc_one, cluster), (svc_two, second_cluster)):
            text = wait_for(lambda s=svc: http_get(f"http://{s}:{port}/"), 30, f"Service {svc}")
            assert text == str(each.kubeconfig)
    finally:
        cluster.kube.delete("/api/v1/namespaces/same")


def test_a_killed_agent_is_cleaned_up_by_the_next_one(
    cluster: Cluster, ns: str, tmp_path: Path
) -> None:
    """A second node on a network of its own: SIGKILL leaves its bridge and namespaces,
    the restarted agent removes them, runs the Pod again at the same address, and its
    stop leaves nothing behind."""
    kube, network = cluster.kube, claim_network(tmp_path / "claim")
    state = tmp_path / "node"
    bridge = Path(f"/sys/class/net/{network.bridge}")
    command = [
        sys.executable, "-m", "olmtool.cluster.node", "--kubeconfig", str(cluster.kubeconfig),
        "--state-dir", str(state), "--node-name", "net-node", "--network-index",
        str(network.index), "--stop-grace", "5",
    ]  # fmt: skip
    try:
        with (tmp_path / "agent.log").open("wb") as log:
            killed = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: node_ready(kube, "net-node"), 30, "net-node Ready")
        create_pod(kube, ns, make_pod("pinned", [server_container()], nodeName="net-node"))
        pod = ready_pod(kube, ns, "pinned")
        ip = pod["status"]["podIP"]
        assert ipaddress.IPv4Address(ip) in ipaddress.IPv4Network(network.pod_cidr)
        assert http_get(f"http://{ip}:8080/") == "pinned"
        killed.kill()
        killed.wait(10)
        assert bridge.exists() and leftover_sandboxes(network.index)

        again = NodeAgent(cluster.kubeconfig, state, node_name="net-node", network=network)
        again.start()
        try:
            assert len(leftover_sandboxes(network.index)) <= 1  # the old one went

            def rerun() -> JSON | None:
                current = get_pod(kube, ns, "pinned")
                status = current["status"]["containerStatuses"][0]
                return current if status["restartCount"] == 1 and is_ready(current) else None

            assert wait_for(rerun, 30, "Pod run again")["status"]["podIP"] == ip
            assert http_get(f"http://{ip}:8080/") == "pinned"
        finally:
            again.stop()
        assert not bridge.exists() and not leftover_sandboxes(network.index)
        routes = subprocess.run(
            ["ip", "route", "show", "table", "local"], capture_output=True, text=True
        ).stdout
        assert network.service_cidr not in routes
    finally:
        with contextlib.suppress(Exception):
            kube.delete(f"/api/v1/namespaces/{ns}/pods/pinned", {"gracePeriodSeconds": 0})
        with contextlib.suppress(Exception):
            kube.delete("/api/v1/nodes/net-node")
        remove_node_network(network)  # what `cluster down` does after a killed agent
        release_network(tmp_path / "claim")
