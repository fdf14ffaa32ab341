"""Recorded ports, and the flags that lock the control plane down (no processes run)."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest

from olmtool.cluster import controlplane
from olmtool.cluster.controlplane import prepare_plane
from olmtool.cluster.portrecord import PortRecord, port_holder, port_in_use
from olmtool.errors import PortTaken


def test_ports_are_picked_once_and_reused(tmp_path: Path) -> None:
    first = PortRecord.load(tmp_path)
    picked = first.assign(["etcd", "kube-apiserver"])
    assert len(set(picked.values())) == 2 and not first.settled("etcd")
    assert json.loads((tmp_path / "ports.json").read_text()) == picked
    again = PortRecord.load(tmp_path)
    assert again.assign(["etcd", "kube-apiserver"]) == picked  # same ports
    assert again.settled("etcd") and again.settled("kube-apiserver")
    # a wanted port is used when none is recorded; recorded ones win
    assert again.assign(["registry"], {"registry": 5000, "etcd": 1})["registry"] == 5000
    assert again["etcd"] == picked["etcd"]
    moved = again.replace("etcd")
    assert moved not in picked.values() and not again.settled("etcd")
    assert PortRecord.load(tmp_path)["etcd"] == moved
    again.forget("registry")
    assert PortRecord.load(tmp_path).get("registry") is None


def test_a_broken_record_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "ports.json").write_text('{"etcd": "x", "kube-apiserver": 70000, "a": 80}')
    assert PortRecord.load(tmp_path).ports == {"a": 80}
    (tmp_path / "ports.json").write_text("[")
    assert PortRecord.load(tmp_path).ports == {}


def test_port_in_use_and_its_holder() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert port_in_use(port)
        holder = port_holder(port)
        assert holder is not None and holder.startswith("pid ")
    assert not port_in_use(port)
    assert port_holder(port) is None


def test_the_plane_keeps_its_ports_and_kubeconfig(tmp_path: Path) -> None:
    plane = prepare_plane(tmp_path)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    assert stat.S_IMODE(plane.kubeconfig.stat().st_mode) == 0o600
    again = prepare_plane(tmp_path)
    assert again.ports.ports == plane.ports.ports and again.server == plane.server
    assert again.kubeconfig.read_text() == plane.kubeconfig.read_text()
    assert set(plane.ports.ports) == {
        "etcd",
        "etcd-peer",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    }


def _flags(args: list[str]) -> dict[str, str]:
    return dict(arg.removeprefix("--").partition("=")[::2] for arg in args)


def test_etcd_requires_client_certificates(tmp_path: Path) -> None:
    plane = prepare_plane(tmp_path)
    assert plane.etcd is not None
    etcd = _flags(controlplane._etcd_args(plane))
    assert etcd["listen-client-urls"] == plane.etcd_url
    assert plane.etcd_url.startswith("https://127.0.0.1:")
    assert etcd["client-cert-auth"] == "true" and etcd["peer-client-cert-auth"] == "true"
    assert etcd["trusted-ca-file"] == etcd["peer-trusted-ca-file"] == str(plane.etcd.ca.cert)
    assert etcd["listen-peer-urls"].startswith("https://127.0.0.1:")
    apiserver = _flags(controlplane._apiserver_args(plane))
    assert apiserver["etcd-servers"] == plane.etcd_url
    assert apiserver["etcd-certfile"] == str(plane.etcd.client.cert)
    assert apiserver["etcd-keyfile"] == str(plane.etcd.client.key)
    assert apiserver["etcd-cafile"] == str(plane.etcd.ca.cert)
    assert apiserver["secure-port"] == str(plane.ports["kube-apiserver"])


@pytest.mark.parametrize("name", ["kube-controller-manager", "kube-scheduler"])
def test_controllers_serve_only_authenticated_https(tmp_path: Path, name: str) -> None:
    plane = prepare_plane(tmp_path)
    args = controlplane._ARGS[name](plane)
    flags = _flags(args)
    assert flags["port"] == "0"  # no insecure HTTP
    assert flags["secure-port"] == str(plane.ports[name])
    assert flags["bind-address"] == "127.0.0.1"
    assert flags["profiling"] == "false"
    assert flags["authorization-always-allow-paths"] == "/healthz"
    assert flags["authentication-kubeconfig"] == flags["authorization-kubeconfig"]
    assert flags["tls-cert-file"].endswith(f"{name}.crt")
    assert "address" not in flags


def test_a_recorded_apiserver_port_never_moves(tmp_path: Path) -> None:
    prepare_plane(tmp_path)  # a first start recorded the ports
    plane = prepare_plane(tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", plane.ports["kube-apiserver"]))
        squatter.listen()
        with pytest.raises(PortTaken, match=r"kube-apiserver cannot start: its port .* is in "):
            controlplane._move(plane, "kube-apiserver", lambda _m: None)
        said: list[str] = []
        old = plane.ports["kube-scheduler"]
        controlplane._move(plane, "kube-scheduler", said.append)  # internal: moves, says so
        assert plane.ports["kube-scheduler"] != old
        assert said == [
            f"kube-scheduler: port {old} is in use by another process; "
            f"using {plane.ports['kube-scheduler']} instead"
        ]
