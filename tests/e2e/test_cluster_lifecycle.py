"""``olmtool cluster up|down|status``: named clusters of detached processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from olmtool.cluster import local
from tests.test_cli import olmtool


def _kubectl(assets: Path, cluster: local.Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(assets / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_up_is_idempotent_down_stops_and_a_restart_keeps_data(
    kube_assets: Path, tmp_path: Path
) -> None:
    cluster = local.up("life", root=tmp_path, assets=kube_assets, registry_port=0, node=False)
    try:
        assert set(cluster.components) == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "registry",
        }
        assert all(cluster.running().values())
        again = local.up("life", root=tmp_path, assets=kube_assets, registry_port=0, node=False)
        assert again.server == cluster.server
        assert again.components == cluster.components
        assert _kubectl(kube_assets, cluster, "create", "namespace", "keep").returncode == 0

        stopped = local.down("life", root=tmp_path)
        assert stopped[0] == "kube-scheduler" and stopped[-1] == "registry"
        assert not any(c.alive() for c in cluster.components.values())
        assert local.status("life", root=tmp_path)["apiserver"] == "down"

        restarted = local.up("life", root=tmp_path, assets=kube_assets, registry_port=0, node=False)
        assert restarted.kubeconfig == cluster.kubeconfig
        assert restarted.token == cluster.token  # same credentials: old kubeconfigs still work
        assert _kubectl(kube_assets, restarted, "get", "namespace", "keep").returncode == 0
        report = local.status("life", root=tmp_path)
        assert report["apiserver"] == "healthy"
        assert report["nodeReady"] is False
    finally:
        local.down("life", root=tmp_path, delete=True)
    assert not (tmp_path / "life").exists()


def test_cli_status_of_a_missing_cluster_is_one_line(tmp_path: Path) -> None:
    env_root = tmp_path / "clusters"
    result = subprocess.run(
        [sys.executable, "-m", "olmtool", "cluster", "status", "--name", "nope"],
        capture_output=True,
        text=True,
        env={**os.environ, "OLMTOOL_CLUSTERS_DIR": str(env_root)},
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: no cluster named 'nope' (start one: olmtool cluster up)"
    ]


def test_invalid_names_are_refused() -> None:
    with pytest.raises(local.InputError, match="invalid cluster name"):
        local.cluster_dir("../escape")


def test_cli_up_json_then_down(
    kube_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
    result = olmtool(
        "cluster", "up", "--name", "cli", "--no-node", "--registry-port", "0", "-o", "json",
        cwd=tmp_path,
    )  # fmt: skip
    try:
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["name"] == "cli" and "token" not in data
        path = olmtool("cluster", "kubeconfig", "--name", "cli", cwd=tmp_path)
        assert path.stdout.strip() == data["kubeconfig"]
    finally:
        down = olmtool("cluster", "down", "--name", "cli", "--delete", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert "and deleted" in down.stdout


def test_cli_up_gives_a_kubeconfig_whose_node_is_ready(
    kube_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the node agent's mount namespaces need root")
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
    result = olmtool("cluster", "up", "--name", "full", "--registry-port", "0", cwd=tmp_path)
    try:
        assert result.returncode == 0, result.stderr
        kubeconfig = olmtool("cluster", "kubeconfig", "--name", "full", cwd=tmp_path)
        nodes = subprocess.run(
            [
                str(kube_assets / "kubectl"),
                f"--kubeconfig={kubeconfig.stdout.strip()}",
                "get",
                "nodes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert nodes.returncode == 0, nodes.stderr
        assert " Ready " in nodes.stdout.splitlines()[1] + " "
        status = olmtool("cluster", "status", "--name", "full", "-o", "json", cwd=tmp_path)
        assert json.loads(status.stdout)["nodeReady"] is True
    finally:
        down = olmtool("cluster", "down", "--name", "full", "--delete", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("cluster full: stopped node-agent,")
