"""``olmtool cluster`` commands that need no running cluster: the kubectl of the cluster's
version, the registry address, ``down`` of a stopped cluster and ``assets``' messages (a
recorded cluster state and a stand-in kubectl; tests/e2e/test_readme.py runs them for real).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from olmtool.cluster import assets
from tests.test_cli import olmtool

FAKE_KUBECTL = """#!/bin/sh
echo "args: $*"
echo "kubeconfig: $KUBECONFIG"
exit 7
"""


def _record_cluster(root: Path, name: str, *, registry: str | None = "127.0.0.1:5000") -> Path:
    """A cluster as ``up`` records it, with no process running."""
    state = root / name
    state.mkdir(parents=True)
    kubeconfig = state / "admin.kubeconfig"
    record = {
        "name": name,
        "state_dir": str(state),
        "server": "https://127.0.0.1:6443",
        "kubeconfig": str(kubeconfig),
        "ca_file": str(state / "ca.crt"),
        "token": "t",
        "registry": registry,
        "components": {},
    }
    (state / "cluster.json").write_text(json.dumps(record))
    return kubeconfig


@pytest.fixture
def clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "clusters"
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(root))
    return root


@pytest.fixture
def binaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A KUBEBUILDER_ASSETS folder whose kubectl prints what it was given."""
    folder = tmp_path / "assets"
    folder.mkdir()
    kubectl = folder / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(folder))
    return folder


def test_kubectl_runs_the_clusters_version_with_its_kubeconfig(
    clusters: Path, binaries: Path, tmp_path: Path
) -> None:
    kubeconfig = _record_cluster(clusters, "ci")
    # kubectl's own -n and --help pass through; only options before them are olmtool's
    run = olmtool(
        "cluster", "kubectl", "--name", "ci", "get", "pods", "-n", "x", "--help", cwd=tmp_path
    )
    assert run.returncode == 7  # kubectl's own exit code
    assert run.stdout.splitlines() == ["args: get pods -n x --help", f"kubeconfig: {kubeconfig}"]
    separated = olmtool("cluster", "kubectl", "--name", "ci", "--", "--name", "y", cwd=tmp_path)
    assert separated.stdout.splitlines()[0] == "args: --name y"
    path = olmtool("cluster", "kubectl-path", cwd=tmp_path)
    assert path.returncode == 0 and path.stdout == f"{binaries / 'kubectl'}\n"


def test_kubectl_without_the_binaries_says_how_to_get_them(
    clusters: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_cluster(clusters, "olmtool")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = olmtool("cluster", "kubectl", "get", "nodes", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.startswith("error: no kubectl 1.20.2 among the control-plane binaries (")
    assert run.stderr.rstrip().endswith("`make assets` (olmtool cluster assets) puts it there")


def test_registry_prints_the_address_to_push_to(clusters: Path, tmp_path: Path) -> None:
    _record_cluster(clusters, "olmtool", registry="127.0.0.1:41234")
    _record_cluster(clusters, "bare", registry=None)
    assert olmtool("cluster", "registry", cwd=tmp_path).stdout == "127.0.0.1:41234\n"
    bare = olmtool("cluster", "registry", "--name", "bare", cwd=tmp_path)
    assert bare.returncode == 1
    assert bare.stderr.strip() == (
        "error: cluster 'bare' runs no image registry (it was started with --no-registry)"
    )
    missing = olmtool("cluster", "registry", "--name", "gone", cwd=tmp_path)
    assert "no cluster named 'gone' (start one: olmtool cluster up)" in missing.stderr


def test_down_of_a_stopped_cluster_says_it_was_not_running(clusters: Path, tmp_path: Path) -> None:
    _record_cluster(clusters, "olmtool")
    first = olmtool("cluster", "down", cwd=tmp_path)
    again = olmtool("cluster", "down", "--delete", cwd=tmp_path)
    assert first.stdout == "cluster olmtool: not running (nothing to stop)\n"
    assert again.stdout == "cluster olmtool: not running (nothing to stop); its state is deleted\n"
    assert not (clusters / "olmtool").exists()


def test_assets_prints_the_folder_it_found(binaries: Path, tmp_path: Path) -> None:
    for name in assets.EVERYTHING:
        (binaries / name).write_text("#!/bin/sh\n")
        (binaries / name).chmod(0o755)
    found = olmtool("cluster", "assets", cwd=tmp_path)
    assert found.returncode == 0 and found.stdout == f"{binaries}\n" and found.stderr == ""


def test_assets_optional_skips_where_they_cannot_be_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make test`` outside CI on a machine without apt-get: the e2e tests skip."""
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no apt-get, no sudo
    monkeypatch.delenv("CI", raising=False)
    run = olmtool("cluster", "assets", "--optional", cwd=tmp_path)
    assert run.returncode == 0 and run.stdout == ""
    assert run.stderr.strip() == (
        "no Kubernetes binaries, and they cannot be built here: not a Debian system (no apt-get)"
    )
