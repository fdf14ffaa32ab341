"""``cluster up|down|status|kubeconfig``: named clusters of detached processes.

Their behaviour through the actions in-process; one test runs the real ``olmtool cluster``
commands to check that ``up -o json``, ``kubeconfig``, ``down`` and a user error on stderr
wire together; other CLI wiring in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from olmtool.actions import cluster_down, cluster_kubeconfig, cluster_status, cluster_up
from olmtool.cluster import ClusterNetwork, local
from olmtool.cluster.network import default_claims_dir
from olmtool.errors import InputError
from tests.catalog.test_cli_validate import cli
from tests.e2e.helpers import wait_for
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
    with pytest.raises(local.ClusterError) as status:
        cluster_status("nope")
    assert str(status.value) == MISSING
    with pytest.raises(local.ClusterError) as kubeconfig:
        cluster_kubeconfig("nope")
    assert str(kubeconfig.value) == MISSING
    with pytest.raises(local.ClusterError, match="no cluster named 'nope' \\(looked in "):
        cluster_down("nope")
    result = cli("cluster", "status", "--name", "nope")
    assert (result.returncode, result.error) == (1, MISSING)


def test_invalid_names_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    for action in (cluster_up, cluster_status, cluster_down, cluster_kubeconfig):
        with pytest.raises(InputError, match="invalid cluster name"):
            action("../escape")
    assert list(tmp_path.iterdir()) == []


def test_up_gives_a_kubeconfig_whose_node_is_ready(kube_assets: Path, clusters: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the node agent's mount namespaces need root")
    try:
        cluster = cluster_up("full", registry_port=0)
        assert cluster.node == local.NODE_NAME
        kubeconfig = cluster_kubeconfig("full")
        nodes = _kubectl(kube_assets, kubeconfig, "get", "nodes")
        assert nodes.returncode == 0, nodes.stderr
        assert " Ready " in nodes.stdout.splitlines()[1] + " "
        status = cluster_status("full")
        assert status.node_ready is True and status.as_dict()["nodeReady"] is True
        assert status.components["node-agent"]
        network = ClusterNetwork(cluster.network or 0)
        assert Path(f"/sys/class/net/{network.bridge}").exists()  # the node's Pod network

        # the agent serves the kubelet API: kubectl logs and exec work
        script = "echo hello from the pod; sleep 3600"
        pod = ("run", "hello", "--image=busybox", "--restart=Never", "--", "sh", "-c", script)
        wait_for(  # once the default service account exists
            lambda: _kubectl(kube_assets, kubeconfig, *pod).returncode == 0, 30, "kubectl run"
        )
        wait_for(
            lambda: (
                "hello from the pod" in _kubectl(kube_assets, kubeconfig, "logs", "hello").stdout
            ),
            60,
            "the pod's log through kubectl",
        )
        done = _kubectl(
            kube_assets, kubeconfig, "exec", "hello", "--", "sh", "-c", "hostname; exit 3"
        )
        assert (done.returncode, done.stdout) == (3, "hello\n"), done.stderr
    finally:
        stopped = cluster_down("full", delete=True)
    assert stopped[:2] == ["olm-engine", "node-agent"]
    assert not (clusters / "full").exists()
    assert not Path(f"/sys/class/net/{network.bridge}").exists()
    assert not (default_claims_dir() / str(network.index)).exists()  # released


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
        path = olmtool("cluster", "kubeconfig", "--name", "cli", cwd=clusters)
        assert path.stdout.strip() == data["kubeconfig"]
        status = cli("cluster", "status", "--name", "cli", "-o", "json")
        assert status.returncode == 0, status.exception
        assert json.loads(status.stdout)["apiserver"] == "healthy"
    finally:
        down = olmtool("cluster", "down", "--name", "cli", "--delete", cwd=clusters)
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("cluster cli: stopped olm-engine, kube-scheduler,")
    assert "and deleted" in down.stdout
    gone = olmtool("cluster", "status", "--name", "cli", cwd=clusters)
    assert gone.returncode == 1
    assert gone.stderr.strip().splitlines() == [
        "error: no cluster named 'cli' (start one: olmtool cluster up)"
    ]
