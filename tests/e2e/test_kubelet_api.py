"""The node agent's kubelet API through the real apiserver: ``kubectl logs`` and
``kubectl exec`` (kubectl 1.20: SPDY/3.1) and the Python client's ``stream()``
(WebSocket), against the session's ``cluster`` (tests/e2e/conftest.py)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import JSON, NODE, TIMINGS, Cluster, wait_for


@pytest.fixture(scope="module")
def kubectl(kube_assets: Path) -> str:
    """kubectl 1.20 from the assets (it speaks SPDY to exec, as the apiserver's era did)."""
    path = kube_assets / "kubectl"
    if not path.exists():
        pytest.skip(f"no kubectl in {kube_assets}")
    return str(path)


def run_kubectl(
    kubectl: str, cluster: Cluster, *args: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [kubectl, f"--kubeconfig={cluster.kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def make_pod(name: str, script: str, *, restart: str = "Always", containers: int = 1) -> JSON:
    spec = [
        {
            "name": "main" if i == 0 else f"side{i}",
            "image": "busybox",
            "command": ["sh", "-c", script],
        }
        for i in range(containers)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": spec, "restartPolicy": restart, "terminationGracePeriodSeconds": 1},
    }


def create_running(cluster: Cluster, ns: str, pod: JSON) -> JSON:
    cluster.kube.create(f"/api/v1/namespaces/{ns}/pods", pod)
    name = pod["metadata"]["name"]

    def running() -> JSON | None:
        found = cluster.kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        statuses = found.get("status", {}).get("containerStatuses") or []
        return found if statuses and all("running" in s["state"] for s in statuses) else None

    return wait_for(running, 60, f"pod {name} running")


# -- the API itself ----------------------------------------------------------------------


def healthz(port: int, context: ssl.SSLContext) -> bytes:
    """``GET /healthz`` on the kubelet API: the raw answer (ConnectionError if none)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := tls.recv(4096):
            answer += chunk
    if not answer:
        raise ConnectionError("closed without an answer")
    return answer


def test_node_reports_the_kubelet_port_and_only_ca_clients_get_in(cluster: Cluster) -> None:
    node = cluster.kube.get(f"/api/v1/nodes/{NODE}")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    assert port == cluster.agent.kubelet_port > 0
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]
    serving = cluster.plane.kubelet_serving
    client = cluster.plane.kubelet_client
    assert serving is not None and client is not None

    # a client without a certificate fails the handshake; the apiserver's gets in
    anonymous = ssl.create_default_context(cafile=str(cluster.plane.ca_file))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        healthz(port, anonymous)
    trusted = ssl.create_default_context(cafile=str(cluster.plane.ca_file))
    trusted.load_cert_chain(str(client.cert), str(client.key))
    answer = healthz(port, trusted)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")


# -- kubectl logs ----------------------------------------------------------------------------


def test_kubectl_logs_tail_previous_and_errors(cluster: Cluster, ns: str, kubectl: str) -> None:
    # each run prints its lines and then crashes once (a marker file survives it)
    script = (
        "for i in 1 2 3 4 5; do echo line $i; done; "
        "if [ ! -f /tmp/kapi-$POD_UID ]; then touch /tmp/kapi-$POD_UID; echo first run; exit 1; fi; "
        "echo second run; sleep 3600"
    )
    pod = make_pod("logger", script)
    pod["spec"]["containers"][0]["env"] = [
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}
    ]

    def restarted() -> JSON | None:
        found = cluster.kube.get(f"/api/v1/namespaces/{ns}/pods/logger")
        statuses = found.get("status", {}).get("containerStatuses") or []
        ok = statuses and statuses[0]["restartCount"] == 1 and "running" in statuses[0]["state"]
        return found if ok else None

    cluster.kube.create(f"/api/v1/namespaces/{ns}/pods", pod)
    found = wait_for(restarted, 60, "one restart")
    with contextlib.suppress(FileNotFoundError):
        Path(f"/tmp/kapi-{found['metadata']['uid']}").unlink()
    wait_for(
        lambda: b"second run" in run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger").stdout,
        15,
        "the second run's output",
    )

    current = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger")
    assert current.returncode == 0, current.stderr
    assert current.stdout.decode().splitlines() == [
        *(f"line {i}" for i in range(1, 6)),
        "second run",
    ]

    previous = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger", "--previous")
    assert previous.returncode == 0, previous.stderr
    assert previous.stdout.decode().splitlines()[-1] == "first run"

    tail = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger", "-c", "main", "--tail=2")
    assert tail.stdout.decode().splitlines() == ["line 5", "second run"]

    limited = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger", "--limit-bytes=8")
    assert limited.stdout == b"line 1\nl"

    stamped = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger", "--timestamps", "--tail=1")
    stamp, _, text = stamped.stdout.decode().rstrip("\n").partition(" ")
    assert text == "second run" and stamp.endswith("Z") and stamp.startswith("20")

    recent = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger", "--since=1h")
    assert recent.stdout == current.stdout

    missing = run_kubectl(kubectl, cluster, "-n", ns, "logs", "logger", "-c", "nope")
    assert missing.returncode != 0
    assert b"container nope is not valid for pod logger" in missing.stderr


def test_kubectl_logs_follow_ends_with_the_container(
    cluster: Cluster, ns: str, kubectl: str
) -> None:
    script = "echo start; sleep 2; for i in 1 2 3; do echo tick $i; sleep 0.3; done; echo done"
    create_running(cluster, ns, make_pod("ticker", script, restart="Never"))
    started = time.monotonic()
    followed = run_kubectl(kubectl, cluster, "-n", ns, "logs", "-f", "ticker", timeout=60)
    elapsed = time.monotonic() - started
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.decode().splitlines() == ["start", "tick 1", "tick 2", "tick 3", "done"]
    assert elapsed < 15  # it ended when the container did
    TIMINGS["kubectl logs -f (container of ~3 s)"] = elapsed

    # a finished container: logs, and --previous has nothing
    previous = run_kubectl(kubectl, cluster, "-n", ns, "logs", "ticker", "--previous")
    assert previous.returncode != 0
    assert b'previous terminated container "main" in pod "ticker" not found' in previous.stderr


def test_kubectl_logs_of_a_container_waiting_to_start(
    cluster: Cluster, ns: str, kubectl: str
) -> None:
    pod = make_pod("waiting", "sleep 3600")
    pod["spec"]["containers"][0]["image"] = "registry.invalid/none:1"
    cluster.kube.create(f"/api/v1/namespaces/{ns}/pods", pod)
    wait_for(
        lambda: (
            cluster.kube.get(f"/api/v1/namespaces/{ns}/pods/waiting")
            .get("status", {})
            .get("containerStatuses")
        ),
        30,
        "a container status",
    )
    answer = run_kubectl(kubectl, cluster, "-n", ns, "logs", "waiting")
    assert answer.returncode != 0
    assert b'container "main" in pod "waiting" is waiting to start' in answer.stderr


# -- kubectl exec (SPDY) ---------------------------------------------------------------------


def test_kubectl_exec_stdout_and_exit_code(cluster: Cluster, ns: str, kubectl: str) -> None:
    create_running(cluster, ns, make_pod("target", "sleep 3600"))
    started = time.monotonic()
    answer = run_kubectl(
        kubectl, cluster, "-n", ns, "exec", "target", "--", "sh", "-c", "echo $HOSTNAME; exit 3"
    )
    TIMINGS["kubectl exec round trip"] = time.monotonic() - started
    assert answer.stdout == b"target\n"
    assert answer.returncode == 3, answer.stderr
    assert b"command terminated with exit code 3" in answer.stderr

    # the container's working directory; stderr apart from stdout
    answer = run_kubectl(
        kubectl, cluster, "-n", ns, "exec", "target", "--", "sh", "-c", "echo oops >&2; pwd"
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout == b"/\n"
    assert answer.stderr == b"oops\n"


def test_kubectl_exec_with_stdin(cluster: Cluster, ns: str, kubectl: str) -> None:
    create_running(cluster, ns, make_pod("cat", "sleep 3600"))
    data = b"".join(b"line %d of the input\n" % i for i in range(5000))  # ~110 KB
    answer = run_kubectl(kubectl, cluster, "-n", ns, "exec", "-i", "cat", "--", "cat", stdin=data)
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout == data

    answer = run_kubectl(
        kubectl, cluster, "-n", ns, "exec", "-i", "cat", "--", "sh", "-c", "wc -l; exit 7",
        stdin=b"a\nb\n",
    )  # fmt: skip
    assert answer.stdout.strip() == b"2"
    assert answer.returncode == 7


def test_kubectl_exec_errors(cluster: Cluster, ns: str, kubectl: str) -> None:
    create_running(cluster, ns, make_pod("errs", "sleep 3600"))
    missing = run_kubectl(kubectl, cluster, "-n", ns, "exec", "errs", "--", "no-such-program")
    assert missing.returncode != 0
    assert b"no-such-program" in missing.stderr
    absent = run_kubectl(kubectl, cluster, "-n", ns, "exec", "nopod", "--", "true")
    assert absent.returncode != 0 and b"not found" in absent.stderr


# -- the Python client (WebSocket) -----------------------------------------------------------


def test_python_client_stream_exec(cluster: Cluster, ns: str) -> None:
    from kubernetes import client, config
    from kubernetes.stream import stream

    create_running(cluster, ns, make_pod("wsexec", "sleep 3600"))
    configuration = client.Configuration()
    config.load_kube_config(str(cluster.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        started = time.monotonic()
        output = stream(
            core.connect_get_namespaced_pod_exec,
            "wsexec",
            ns,
            command=["sh", "-c", "echo out $HOSTNAME; echo err >&2"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
        TIMINGS["python client exec round trip (websocket)"] = time.monotonic() - started
        assert "out wsexec" in output

        session = stream(
            core.connect_get_namespaced_pod_exec,
            "wsexec",
            ns,
            command=["sh", "-c", "read line; echo got $line; exit 5"],
            stderr=True,
            stdin=True,
            stdout=True,
            tty=False,
            _preload_content=False,
        )
        session.write_stdin("hello\n")
        session.run_forever(timeout=20)
        assert "got hello" in session.read_stdout()
        assert session.returncode == 5
        session.close()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_kubectl_agnostic_version_on_path_can_exec(cluster: Cluster, ns: str) -> None:
    """Whatever kubectl is on PATH (>= 1.30 speaks WebSocket v5 first) works too."""
    create_running(cluster, ns, make_pod("pathkubectl", "sleep 3600"))
    answer = run_kubectl(
        str(shutil.which("kubectl")),
        cluster,
        "-n",
        ns,
        "exec",
        "-i",
        "pathkubectl",
        "--",
        "sh",
        "-c",
        "cat; exit 4",
        stdin=b"through stdin\n",
    )
    assert answer.stdout == b"through stdin\n", answer.stderr
    assert answer.returncode == 4
