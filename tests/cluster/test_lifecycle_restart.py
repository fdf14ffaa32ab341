"""``cluster up`` on a cluster where some components died restarts only those (the
decisions, without starting processes; tests/e2e/test_cluster_lifecycle.py does it for real)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from olmtool.cluster import lifecycle
from olmtool.cluster.portrecord import PortRecord
from olmtool.cluster.processes import start_time
from olmtool.errors import ArgumentError


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _write_cluster(
    root: Path, components: dict[str, bool], ports: bool = True, **fields: object
) -> Path:
    state = root / "c"
    state.mkdir(parents=True)
    me = os.getpid()
    records = {
        name: {"pid": me, "started": start_time(me)}
        if alive
        else {"pid": _dead_pid(), "started": 1}
        for name, alive in components.items()
    }
    cluster = {
        "name": "c",
        "state_dir": str(state),
        "server": "https://127.0.0.1:6443",
        "kubeconfig": str(state / "admin.kubeconfig"),
        "ca_file": str(state / "pki" / "olmtool-ca.crt"),
        "token": "t",
        "registry": "127.0.0.1:5000",
        "components": records,
        **fields,
    }
    (state / "cluster.json").write_text(json.dumps(cluster))
    if ports:
        (state / "ports.json").write_text(json.dumps({"kube-apiserver": 6443, "registry": 5000}))
    return state


class Started(Exception):
    """The full start began."""


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    made: list[tuple] = []

    def full_start(*args: object) -> None:
        made.append(("full start",))
        raise Started

    monkeypatch.setattr(lifecycle, "_launch_on_network", full_start)
    monkeypatch.setattr(lifecycle, "ensure_assets", lambda: Path("/assets"))
    monkeypatch.setattr(
        lifecycle, "_restart_dead", lambda c, dead, *a: made.append(("restart", dead))
    )
    monkeypatch.setattr(
        lifecycle,
        "stop_components",
        lambda c, *a, **kw: made.append(("stop", sorted(c.components))),
    )
    monkeypatch.setattr(lifecycle, "_healthy", lambda c: True)
    return made


def test_only_the_dead_components_are_restarted(tmp_path: Path, calls: list[tuple]) -> None:
    _write_cluster(
        tmp_path,
        {"etcd": True, "kube-apiserver": True, "kube-scheduler": False, "registry": False},
    )
    cluster = lifecycle.up("c", root=tmp_path, olm_crds=False)
    assert calls == [("restart", ["kube-scheduler", "registry"])]
    assert cluster.server == "https://127.0.0.1:6443"
    assert cluster.notes == ["restarted kube-scheduler, registry"]
    assert "notes" not in json.loads((tmp_path / "c" / "cluster.json").read_text())


def test_a_running_cluster_is_left_alone(tmp_path: Path, calls: list[tuple]) -> None:
    _write_cluster(tmp_path, {"etcd": True, "kube-apiserver": True})
    lifecycle.up("c", root=tmp_path, olm_crds=False)
    assert calls == []


def test_a_stopped_cluster_starts_whole(tmp_path: Path, calls: list[tuple]) -> None:
    _write_cluster(tmp_path, {"etcd": False, "kube-apiserver": False})
    with pytest.raises(Started):
        lifecycle.up("c", root=tmp_path, olm_crds=False)
    assert calls == [("full start",)]


def test_a_cluster_from_before_recorded_ports_restarts_whole(
    tmp_path: Path, calls: list[tuple]
) -> None:
    """Its etcd speaks plain HTTP on a port nobody recorded: nothing can join it."""
    state = _write_cluster(tmp_path, {"etcd": True, "kube-scheduler": False}, ports=False)
    with pytest.raises(Started):
        lifecycle.up("c", root=tmp_path, olm_crds=False)
    assert calls == [("stop", ["etcd", "kube-scheduler"]), ("full start",)]
    # the addresses users hold are kept: the apiserver's and the registry's ports
    assert PortRecord.load(state).ports == {"kube-apiserver": 6443, "registry": 5000}
    assert os.stat(state).st_mode & 0o777 == 0o700


def test_restart_order_and_what_each_component_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _write_cluster(tmp_path, {"etcd": True})
    cluster = lifecycle.read_cluster("c", tmp_path)
    assert cluster is not None
    started: list[str] = []

    class Plane:
        ports = PortRecord(state / "ports.json", {"etcd": 1})
        processes: dict = {}

    monkeypatch.setattr(lifecycle, "claim_network", lambda state_dir: None)
    monkeypatch.setattr(lifecycle, "prepare_plane", lambda state_dir, network, advertise: Plane())
    monkeypatch.setattr(
        lifecycle, "start_component", lambda plane, assets, name, **kw: started.append(name)
    )
    monkeypatch.setattr(lifecycle, "_start_registry", lambda c, s, port: started.append("registry"))
    monkeypatch.setattr(
        lifecycle, "start_node", lambda c, p, a, n, t, say, only: started.append(only)
    )
    monkeypatch.setattr(lifecycle, "wait_nodes_ready", lambda c, t, nodes=None: None)
    monkeypatch.setattr(lifecycle, "_start_engine", lambda c, s, say: started.append("olm-engine"))
    dead = ["olm-engine", "kubelet", "registry", "kube-scheduler", "containerd", "kube-apiserver"]
    lifecycle._restart_dead(cluster, dead, Path("/assets"), 5.0, lambda _m: None, lambda _m: None)
    assert started == [
        "kube-apiserver",
        "kube-scheduler",
        "registry",
        "containerd",
        "kubelet",
        "olm-engine",
    ]


def test_a_dead_component_of_a_second_node_is_restarted_alone(
    tmp_path: Path, calls: list[tuple]
) -> None:
    _write_cluster(
        tmp_path,
        {"etcd": True, "kube-apiserver": True, "kubelet": True, "kubelet@olmtool-node2": False},
        nodes=2,
        runtime="containerd",
    )
    cluster = lifecycle.up("c", root=tmp_path, olm_crds=False)
    assert calls == [("restart", ["kubelet@olmtool-node2"])]
    assert cluster.node_names() == ["olmtool-node", "olmtool-node2"]


def test_a_clusters_node_count_is_fixed_when_it_is_made(tmp_path: Path, calls: list[tuple]) -> None:
    _write_cluster(tmp_path, {"etcd": True, "kube-apiserver": True}, nodes=3)
    lifecycle.up("c", root=tmp_path, olm_crds=False, nodes=3)  # the same: fine
    assert lifecycle.up("c", root=tmp_path, olm_crds=False).nodes == 3  # None: as made
    with pytest.raises(ArgumentError, match=r"has 3 node\(s\).*down --name c --delete"):
        lifecycle.up("c", root=tmp_path, olm_crds=False, nodes=1)
    with pytest.raises(ArgumentError, match="1 to 8 nodes"):
        lifecycle.up("new", root=tmp_path, nodes=9)


def test_node_components_restart_in_start_order_and_stop_in_stop_order() -> None:
    names = ["kubelet@olmtool-node2", "containerd", "kube-proxy@olmtool-node2", "etcd", "kubelet"]
    by_start = sorted(names, key=lambda n: lifecycle.START_ORDER.index(lifecycle.base_component(n)))
    assert by_start == [
        "etcd", "containerd", "kubelet@olmtool-node2", "kubelet", "kube-proxy@olmtool-node2",
    ]  # fmt: skip
    assert sorted(names, key=lifecycle._stop_order)[:3] == [
        "kube-proxy@olmtool-node2", "kubelet@olmtool-node2", "kubelet",
    ]  # fmt: skip
    assert [lifecycle.node_of(n) for n in names] == [
        "olmtool-node2", "olmtool-node", "olmtool-node2", None, "olmtool-node",
    ]  # fmt: skip
