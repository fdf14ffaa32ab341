"""``cluster up|down|status|kubeconfig``: named clusters of detached processes.

Their behaviour through the actions in-process; one test runs the real ``olmtool cluster``
commands to check that ``up -o json``, ``kubeconfig``, ``down`` and a user error on stderr
wire together; other CLI wiring in-process. One full cluster (real node, registry, OLM
engine), shared by the tests at the end, shows it locked down: etcd refuses clients
without its certificate, the registry anonymous ones, the controllers' debug endpoints
anonymous ones; tokens and Secrets are 0600; and ``up`` restarts only what died.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import signal
import ssl
import stat
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from olmtool.actions import cluster_down, cluster_kubeconfig, cluster_status, cluster_up
from olmtool.cluster import ClusterNetwork, lifecycle
from olmtool.cluster.network import default_claims_dir
from olmtool.errors import InputError
from olmtool.images import Credentials, ImageTarget, RegistryError, pull, push, save_image
from olmtool.kube import Kube
from tests.catalog.test_cli_validate import cli
from tests.e2e.helpers import service_account_ready, wait_for
from tests.test_cli import olmtool

MISSING = "no cluster named 'nope' (start one: olmtool cluster up)"


@pytest.fixture
def clusters(kube_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Clusters live under ``tmp_path``, with the control plane from ``kube_assets``."""
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
    return tmp_path


def _kubectl(assets: Path, kubeconfig: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(assets / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- the actions ---------------------------------------------------------------------------


def test_up_is_idempotent_down_stops_and_a_restart_keeps_data(
    kube_assets: Path, clusters: Path
) -> None:
    cluster = cluster_up("life", registry_port=0, node=False)
    try:
        assert set(cluster.components) == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "olm-engine",
            "registry",
        }
        assert all(cluster.running().values())
        assert cluster.state_dir == str(clusters / "life")
        again = cluster_up("life", registry_port=0, node=False)
        assert again.server == cluster.server
        assert again.components == cluster.components
        assert cluster_kubeconfig("life") == Path(cluster.kubeconfig)
        assert (
            _kubectl(kube_assets, cluster.kubeconfig, "create", "namespace", "keep").returncode == 0
        )

        stopped = cluster_down("life")
        assert stopped[:2] == ["olm-engine", "kube-scheduler"] and stopped[-1] == "registry"
        assert not any(c.alive() for c in cluster.components.values())
        down = cluster_status("life")
        assert not down.healthy and down.as_dict()["apiserver"] == "down"
        assert not any(down.components.values())

        restarted = cluster_up("life", registry_port=0, node=False)
        assert restarted.kubeconfig == cluster.kubeconfig
        assert restarted.token == cluster.token  # same credentials: old kubeconfigs still work
        assert restarted.network == cluster.network is not None  # the same cluster network
        assert (
            _kubectl(kube_assets, restarted.kubeconfig, "get", "namespace", "keep").returncode == 0
        )
        report = cluster_status("life")
        assert report.healthy and report.as_dict()["apiserver"] == "healthy"
        assert report.node_ready is False and report.as_dict()["nodeReady"] is False
    finally:
        cluster_down("life", delete=True)
    assert not (clusters / "life").exists()


def test_a_missing_cluster_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path / "clusters"))
    with pytest.raises(lifecycle.ClusterError) as status:
        cluster_status("nope")
    assert str(status.value) == MISSING
    with pytest.raises(lifecycle.ClusterError) as kubeconfig:
        cluster_kubeconfig("nope")
    assert str(kubeconfig.value) == MISSING
    with pytest.raises(lifecycle.ClusterError, match="no cluster named 'nope' \\(looked in "):
        cluster_down("nope")
    result = cli("cluster", "status", "--name", "nope")
    assert (result.returncode, result.error) == (1, MISSING)


def test_invalid_names_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    for action in (cluster_up, cluster_status, cluster_down, cluster_kubeconfig):
        with pytest.raises(InputError, match="invalid cluster name"):
            action("../escape")
    assert list(tmp_path.iterdir()) == []


# --- the commands: wiring -------------------------------------------------------------------


def test_cli_up_json_kubeconfig_down(clusters: Path) -> None:
    result = olmtool(
        "cluster", "up", "--name", "cli", "--no-node", "--registry-port", "0", "-o", "json",
        cwd=clusters,
    )  # fmt: skip
    try:
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["name"] == "cli" and "token" not in data
        assert data["docker_config"] == str(clusters / "cli" / "docker" / "config.json")
        path = olmtool("cluster", "kubeconfig", "--name", "cli", cwd=clusters)
        assert path.stdout.strip() == data["kubeconfig"]
        status = cli("cluster", "status", "--name", "cli", "-o", "json")
        assert status.returncode == 0, status.exception
        assert json.loads(status.stdout)["apiserver"] == "healthy"
        assert json.loads(status.stdout)["dockerConfig"] == data["docker_config"]
    finally:
        down = olmtool("cluster", "down", "--name", "cli", "--delete", cwd=clusters)
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("cluster cli: stopped olm-engine, kube-scheduler,")
    assert down.stdout.rstrip().endswith("; its state is deleted")
    gone = olmtool("cluster", "status", "--name", "cli", cwd=clusters)
    assert gone.returncode == 1
    assert gone.stderr.strip().splitlines() == [
        "error: no cluster named 'cli' (start one: olmtool cluster up)"
    ]


# --- one full cluster (real node, registry, OLM engine) for the tests below ---------------
#
# Started once for the module (after the tests above, so two clusters never run at once)
# and checked test by test: the node, the locked-down components, then a restart of
# killed components; the last test takes it down.


@dataclass
class Full:
    cluster: lifecycle.Cluster
    assets: Path
    state: Path
    kube: Kube

    def ports(self) -> dict[str, int]:
        return json.loads((self.state / "ports.json").read_text())

    def pids(self) -> dict[str, int]:
        recorded = lifecycle.read_cluster("full")
        assert recorded is not None
        return {name: component.pid for name, component in recorded.components.items()}


@pytest.fixture(scope="module")
def full(kube_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Full]:
    if os.geteuid() != 0:
        pytest.skip("a real node (containerd, network namespaces) needs root")
    root = tmp_path_factory.mktemp("clusters")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OLMTOOL_CLUSTERS_DIR", str(root))
        patch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
        patch.delenv("REGISTRY_AUTH_FILE", raising=False)
        patch.setenv("DOCKER_CONFIG", str(root / "no-user-docker-config"))
        try:
            started = time.monotonic()
            cluster = cluster_up("full", registry_port=0)
            print(f"\ncluster up (full): {time.monotonic() - started:.1f}s")
            kube = Kube(Path(cluster.kubeconfig))
            yield Full(cluster, kube_assets, root / "full", kube)
            kube.close()
        finally:
            with contextlib.suppress(lifecycle.ClusterError):
                cluster_down("full", delete=True)


def _pod(kube: Kube, name: str, spec: dict[str, Any], namespace: str = "default") -> None:
    wait_for(lambda: service_account_ready(kube, namespace, "default"), 30, "default SA")
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    kube.create(f"/api/v1/namespaces/{namespace}/pods", body)


def _phase(kube: Kube, name: str, *wanted: str) -> dict[str, Any] | None:
    pod = kube.get(f"/api/v1/namespaces/default/pods/{name}")
    return pod if pod["status"].get("phase") in wanted else None


def _status(
    url: str,
    *,
    context: ssl.SSLContext | None = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> int:
    """The HTTP status of a GET (POST with ``data``), an error status too."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def _answer(url: str, **options: Any) -> int | None:
    """The status of a GET (POST with ``data``), None when the server refuses the
    connection (a TLS alert, a reset, a closed stream)."""
    try:
        return _status(url, **options)
    except (OSError, http.client.HTTPException):
        return None


def _raw(address: str, method: str, path: str) -> int:
    """One request to the registry without credentials: its status."""
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request(method, path, headers={"Content-Length": "0"})
        return connection.getresponse().status
    finally:
        connection.close()


def test_up_gives_a_kubeconfig_whose_node_is_ready(full: Full) -> None:
    kubeconfig = cluster_kubeconfig("full")
    nodes = _kubectl(full.assets, kubeconfig, "get", "nodes")
    assert nodes.returncode == 0, nodes.stderr
    assert " Ready " in nodes.stdout.splitlines()[1] + " "
    status = cluster_status("full")
    assert status.node_ready is True and status.as_dict()["nodeReady"] is True
    assert status.components["kubelet"] and status.components["containerd"]
    network = ClusterNetwork(full.cluster.network or 0)
    assert Path(f"/sys/class/net/{network.bridge}").exists()  # the node's Pod network
    # where the registry's login is, for DOCKER_CONFIG / REGISTRY_AUTH_FILE
    assert status.as_dict()["dockerConfig"] == str(full.state / "docker" / "config.json")
    assert stat.S_IMODE(full.state.stat().st_mode) == 0o700

    # the kubelet serves its API: kubectl logs and exec work
    script = "echo hello from the pod; sleep 3600"
    pod = ("run", "hello", "--image=busybox:1.35", "--restart=Never", "--", "sh", "-c", script)
    wait_for(  # once the default service account exists
        lambda: _kubectl(full.assets, kubeconfig, *pod).returncode == 0, 30, "kubectl run"
    )
    wait_for(
        lambda: "hello from the pod" in _kubectl(full.assets, kubeconfig, "logs", "hello").stdout,
        60,
        "the pod's log through kubectl",
    )
    done = _kubectl(full.assets, kubeconfig, "exec", "hello", "--", "sh", "-c", "hostname; exit 3")
    assert (done.returncode, done.stdout) == (3, "hello\n"), done.stderr


def test_etcd_refuses_clients_without_its_certificate(full: Full) -> None:
    port = full.ports()["etcd"]
    pki = full.state / "pki"
    url = f"https://127.0.0.1:{port}"

    def context(name: str | None) -> ssl.SSLContext:
        made = ssl.create_default_context(cafile=str(pki / "etcd-ca.crt"))
        if name:
            made.load_cert_chain(str(pki / f"{name}.crt"), str(pki / f"{name}.key"))
        return made

    secrets = json.dumps(
        {
            "key": base64.b64encode(b"/registry/secrets/").decode(),
            "range_end": base64.b64encode(b"/registry/secrets0").decode(),
            "keys_only": True,
        }
    ).encode()
    # plain HTTP: no answer (or a 400)
    assert _answer(f"http://127.0.0.1:{port}/v3/kv/range", data=secrets) in (None, 400)
    for anonymous in (None, "kube-apiserver-kubelet-client"):  # none, or the cluster CA's
        assert _answer(f"{url}/v3/kv/range", data=secrets, context=context(anonymous)) is None
        assert _answer(f"{url}/health", context=context(anonymous)) is None
    # the apiserver's client certificate (etcd's CA) reads it
    request = urllib.request.Request(f"{url}/v3/kv/range", data=secrets)
    with urllib.request.urlopen(request, context=context("kube-apiserver-etcd-client")) as answer:
        assert int(json.loads(answer.read()).get("count", 0)) > 0  # service-account tokens
    assert _status(f"{url}/health", context=context("kube-apiserver-etcd-client")) == 200


def test_the_registry_refuses_anonymous_clients(
    full: Full, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cluster.helpers import runnable_operator_image

    registry = full.cluster.registry
    assert registry is not None
    image = runnable_operator_image()
    ref = f"{registry}/olmtool/hello-op:0.1.0"
    # `--push` (save_image) finds the cluster's login on its own
    saved = save_image(
        image, ImageTarget(ref, push=True), default_layout=tmp_path / "oci", default_tag="x"
    )
    assert saved.pushed
    manifest = f"/v2/olmtool/hello-op/manifests/{image.digest}"
    for method, path in (
        ("GET", "/v2/_catalog"),
        ("GET", manifest),
        ("POST", "/v2/evil/op/blobs/uploads/"),
        ("PUT", "/v2/evil/op/manifests/latest"),
        ("DELETE", manifest),
    ):
        assert _raw(registry, method, path) == 401, (method, path)
    with pytest.raises(RegistryError, match="401"):
        push(image, f"{registry}/evil/op:1", auth=Credentials("olmtool", "guessed"))
    # the docker config in the state works on its own (DOCKER_CONFIG / REGISTRY_AUTH_FILE)
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(full.state / "docker" / "config.json"))
    assert pull(f"localhost:{registry.rpartition(':')[2]}/olmtool/hello-op:0.1.0").digest == (
        image.digest
    )
    # the node pulls with it (containerd mirrors localhost:5000 to the cluster's registry)
    _pod(
        full.kube,
        "from-registry",
        {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "localhost:5000/olmtool/hello-op:0.1.0"}],
        },
    )
    done = wait_for(
        lambda: _phase(full.kube, "from-registry", "Succeeded", "Failed"), 60, "the pod ends"
    )
    assert done["status"]["phase"] == "Succeeded", done["status"]


@pytest.mark.parametrize("component", ["kube-controller-manager", "kube-scheduler"])
def test_debug_endpoints_need_authentication(full: Full, component: str) -> None:
    url = f"https://127.0.0.1:{full.ports()[component]}"
    trusted = ssl.create_default_context(cafile=full.cluster.ca_file)
    for path in ("/configz", "/debug/pprof/", "/metrics"):
        assert _status(url + path, context=trusted) in (401, 403), path
    assert _status(f"{url}/healthz", context=trusted) == 200  # what health checks use
    admin = {"Authorization": f"Bearer {full.cluster.token}"}
    assert _status(f"{url}/configz", context=trusted, headers=admin) == 200
    assert _status(f"{url}/debug/pprof/", context=trusted, headers=admin) == 404  # off


def test_tokens_and_secrets_are_readable_by_the_pod_only(full: Full) -> None:
    full.kube.create(
        "/api/v1/namespaces/default/secrets",
        {"metadata": {"name": "creds"}, "stringData": {"password": "hunter2"}},
    )
    _pod(
        full.kube,
        "secretive",
        {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.35",
                    "command": ["sh", "-c", "sleep 3600"],
                    "volumeMounts": [{"name": "creds", "mountPath": "/tmp/creds"}],
                }
            ],
            "volumes": [{"name": "creds", "secret": {"secretName": "creds"}}],
        },
    )
    wait_for(lambda: _phase(full.kube, "secretive", "Running"), 60, "the pod runs")
    token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    inside = _kubectl(
        full.assets,
        full.cluster.kubeconfig,
        "exec",
        "secretive",
        "--",
        "cat",
        "/tmp/creds/password",
    )
    assert inside.stdout == "hunter2", inside.stderr
    mounted = _kubectl(full.assets, full.cluster.kubeconfig, "exec", "secretive", "--", "ls", token)
    assert mounted.returncode == 0, mounted.stderr
    # on the node: the kubelet keeps them on tmpfs (never on disk), below a folder only
    # root may enter; the mounts are in the node's mount namespace, the kubelet's
    uid = full.kube.get("/api/v1/namespaces/default/pods/secretive")["metadata"]["uid"]
    kubelet = full.pids()["kubelet"]
    mounts = [
        line.split()
        for line in Path(f"/proc/{kubelet}/mountinfo").read_text().splitlines()
        if f"/pods/{uid}/volumes/kubernetes.io~secret/" in line
    ]
    assert (
        not [  # and never in the host's
            line for line in Path("/proc/self/mountinfo").read_text().splitlines() if uid in line
        ]
    )
    assert {fields[4].rsplit("/", 1)[1] for fields in mounts} >= {"creds"}
    assert all(fields[fields.index("-") + 1] == "tmpfs" for fields in mounts)
    roots = Path(mounts[0][4]).parents[4]  # .../kubelet/<node>/pods/<uid>/volumes/...
    assert stat.S_IMODE(roots.parent.stat().st_mode) == 0o700, roots.parent


def test_up_restarts_only_what_died(full: Full) -> None:
    sleeper = {"name": "main", "image": "busybox:1.35", "command": ["sh", "-c", "sleep 3600"]}
    _pod(full.kube, "steady", {"containers": [sleeper]})
    wait_for(lambda: _phase(full.kube, "steady", "Running"), 60, "the pod runs")
    before = full.kube.get("/api/v1/namespaces/default/pods/steady")["status"]
    pids, ports = full.pids(), full.ports()
    killed = ("kube-apiserver", "kube-scheduler", "registry")
    for name in killed:
        os.kill(pids[name], signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # `up` ran in this process
            os.waitpid(pids[name], 0)

    started = time.monotonic()
    again = cluster_up("full", registry_port=0)
    print(f"\ncluster up after {', '.join(killed)} were killed: {time.monotonic() - started:.1f}s")
    after = full.pids()
    assert {name for name in pids if after[name] != pids[name]} == set(killed)
    assert set(again.notes[0].removeprefix("restarted ").split(", ")) == set(killed)
    assert all(again.running().values())
    assert (again.server, again.registry) == (full.cluster.server, full.cluster.registry)
    assert full.ports() == ports
    assert _kubectl(full.assets, again.kubeconfig, "get", "nodes").returncode == 0
    # the pod ran on, untouched; the restarted scheduler and registry work
    steady = _phase(full.kube, "steady", "Running")
    assert steady is not None
    assert steady["status"]["containerStatuses"] == before["containerStatuses"]
    _pod(
        full.kube,
        "after-restart",
        {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": f"{again.registry}/olmtool/hello-op:0.1.0",
                    "imagePullPolicy": "Always",
                }
            ],
        },
    )
    done = wait_for(
        lambda: _phase(full.kube, "after-restart", "Succeeded", "Failed"), 60, "the pod ends"
    )
    assert done["status"]["phase"] == "Succeeded", done["status"]


def test_down_stops_the_node_and_releases_its_network(full: Full) -> None:
    network = ClusterNetwork(full.cluster.network or 0)
    stopped = cluster_down("full", delete=True)
    assert stopped[0] == "olm-engine"
    assert stopped.index("kubelet") < stopped.index("containerd") < stopped.index("etcd")
    assert not full.state.exists()
    assert not Path(f"/sys/class/net/{network.bridge}").exists()
    assert not (default_claims_dir() / str(network.index)).exists()  # released
