"""The real node's configuration, as pure data: containerd's config and mirrors, the CNI
network, the kubelet's and kube-proxy's configurations, the sysctl baseline."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from olmtool.cluster import kubeletnode, pki
from olmtool.cluster.kubeletnode import RealNode, containerd, hostnet, kubelet, kubeproxy
from olmtool.cluster.kubeletnode.pause import PAUSE_IMAGE, pause_image
from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.registryauth import RegistryLogin
from olmtool.cluster.standins import layout_of, mirror_path
from olmtool.errors import InputError

NETWORK = ClusterNetwork(7).node(0, 1)


def node(tmp_path: Path) -> RealNode:
    return RealNode("olmtool-node", "demo", tmp_path / "node", NETWORK)


def test_containerd_keeps_everything_under_the_node_and_pulls_through_mirrors(
    tmp_path: Path,
) -> None:
    made = node(tmp_path)
    paths = made.containerd
    containerd.write_config(
        paths, cni_conf_dir=made.cni_conf_dir, cni_bin_dir=made.cni_bin_dir,
        sandbox_image=PAUSE_IMAGE, registry="127.0.0.1:5001",
        login=RegistryLogin("olmtool", "secret"),
    )  # fmt: skip
    config = tomllib.loads(paths.config.read_text())
    assert config["root"].startswith(str(tmp_path)) and config["state"].startswith(str(tmp_path))
    assert config["grpc"]["address"] == str(paths.socket)
    assert len(str(paths.socket)) < 108  # a unix socket path's limit, whatever the state dir
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True  # no CAP_SYS_RESOURCE here
    assert cri["sandbox_image"] == PAUSE_IMAGE
    runc = cri["containerd"]["runtimes"]["runc"]["options"]
    assert runc == {"SystemdCgroup": False, "Root": str(paths.runc_root)}
    assert cri["cni"]["bin_dir"] == str(made.cni_bin_dir)
    auth = cri["registry"]["configs"]["127.0.0.1:5001"]["auth"]
    assert auth == {"username": "olmtool", "password": "secret"}
    assert oct(paths.config.stat().st_mode & 0o777) == "0o600"  # it holds the login
    quay = tomllib.loads((paths.hosts_dir / "quay.io" / "hosts.toml").read_text())
    # the registry is the only endpoint: no fallback to an upstream the node cannot reach
    assert quay == {
        "server": "http://127.0.0.1:5001",
        "host": {"http://127.0.0.1:5001": {"capabilities": ["pull", "resolve"]}},
    }
    local = tomllib.loads((paths.hosts_dir / "localhost:5000" / "hosts.toml").read_text())
    assert local == quay


def test_two_nodes_never_share_a_socket(tmp_path: Path) -> None:
    first = containerd.ContainerdPaths.under(tmp_path / "a" / "node")
    second = containerd.ContainerdPaths.under(tmp_path / "b" / "node")
    assert first.socket != second.socket


def test_two_clusters_of_one_name_never_share_a_cgroup_root_or_mount_namespace(
    tmp_path: Path,
) -> None:
    # two state folders may each hold a cluster "e2e" (two test workers); their networks'
    # indexes are claimed machine-wide, so they name what the host shares
    first = RealNode("olmtool-node", "e2e", tmp_path / "a" / "node", ClusterNetwork(2).node(0, 1))
    second = RealNode("olmtool-node", "e2e", tmp_path / "b" / "node", ClusterNetwork(3).node(0, 1))
    assert kubelet.cgroup_root(first.host_key) == "/olmtool-2"
    assert kubelet.cgroup_root(second.host_key) == "/olmtool-3"
    assert first.mount_namespace != second.mount_namespace


def test_containerd_and_the_kubelet_run_in_the_nodes_mount_namespace(tmp_path: Path) -> None:
    argv = kubeletnode.containerd_command(node(tmp_path), registry=None, login=None)
    assert argv[:3] == ["nsenter", "--mount=/run/olmtool/mnt/olmtool-7", "--"]
    assert argv[3] == "containerd"


def test_the_pod_network_is_the_clusters(tmp_path: Path) -> None:
    conflist = hostnet.cni_conflist(NETWORK, tmp_path / "ipam")
    bridge, portmap = conflist["plugins"]  # type: ignore[misc]
    assert bridge["bridge"] == hostnet.POD_BRIDGE and bridge["isGateway"] is True
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.7.0/24", "gateway": "10.244.7.1"}]]
    assert bridge["ipam"]["dataDir"] == str(tmp_path / "ipam")  # never /var/lib/cni
    assert portmap == {"type": "portmap", "capabilities": {"portMappings": True}}
    assert bridge["ipMasq"] is False  # hostnet.masquerade_rule instead


def test_a_second_nodes_pods_keep_their_address_towards_other_nodes(tmp_path: Path) -> None:
    second = ClusterNetwork(7).node(1, 3)
    bridge, _ = hostnet.cni_conflist(second, tmp_path / "ipam")["plugins"]  # type: ignore[misc]
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.7.64/26", "gateway": "10.244.7.65"}]]
    rule = hostnet.masquerade_rule(second)
    assert rule[:5] == ["POSTROUTING", "-s", "10.244.7.64/26", "!", "-d"]
    assert rule[5] == "10.244.7.0/24" and rule[-2:] == ["-j", "MASQUERADE"]
    config = kubeproxy.proxy_config(
        kubeconfig=tmp_path / "k", network=second, node="olmtool-node2", healthz_port=1,
        metrics_port=2,
    )  # fmt: skip
    assert config["clusterCIDR"] == "10.244.7.0/24"  # other nodes' Pods are not masqueraded
    assert config["bindAddress"] == "10.243.7.6"
    assert config["nodePortAddresses"] == ["10.243.7.6/32"]


def test_each_node_has_its_own_kubelet_identity(tmp_path: Path) -> None:
    ca = pki.create_ca(tmp_path)
    first = kubelet.node_identity(tmp_path, ca, "olmtool-node")
    second = kubelet.node_identity(tmp_path, ca, "olmtool-node2")
    assert first != second
    assert kubelet.node_identity(tmp_path, ca, "olmtool-node2") == second  # reused


def test_cni_plugins_run_inside_the_nodes_namespace(tmp_path: Path) -> None:
    hostnet.write_cni_wrappers(NETWORK, tmp_path)
    script = (tmp_path / "bridge").read_text()
    assert script == '#!/bin/sh\nexec ip netns exec olmtool-7 /usr/lib/cni/bridge "$@"\n'
    assert (tmp_path / "host-local").stat().st_mode & 0o111


def test_the_kubelet_serves_on_the_nodes_address_and_trusts_the_cluster_ca(
    tmp_path: Path,
) -> None:
    ca = pki.create_ca(tmp_path)
    serving = kubelet.serving_cert(tmp_path, ca, "olmtool-node", NETWORK.host_address)
    assert pki.certificate_ips(serving.cert) == {"10.243.7.1"}
    assert kubelet.serving_cert(tmp_path, ca, "olmtool-node", "10.243.7.1") == serving  # reused
    identity = kubelet.node_identity(tmp_path, ca, "olmtool-node")
    assert pki.issued_by(identity, ca)
    config = kubelet.kubelet_config(
        address=NETWORK.host_address, port=10250, healthz_port=10248, ca_file=ca.cert,
        serving=serving, network=NETWORK, cgroup_root="/olmtool-7", resolv_conf=tmp_path / "r",
    )  # fmt: skip
    assert config["authentication"] == {
        "anonymous": {"enabled": False},
        "webhook": {"enabled": True},
        "x509": {"clientCAFile": str(ca.cert)},
    }
    assert config["authorization"] == {"mode": "Webhook"}
    assert config["clusterDNS"] == ["10.96.7.10"] and config["cgroupRoot"] == "/olmtool-7"
    assert config["cgroupDriver"] == "cgroupfs" and config["readOnlyPort"] == 0


def test_the_kubelets_root_is_short_and_its_own(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 120) / "node"
    paths = node(tmp_path).kubelet
    other = RealNode("olmtool-node", "other", deep, NETWORK).kubelet
    assert paths.root != other.root
    assert len(str(other.root / "pod-resources" / "1234567890")) < 100


def test_kube_proxy_rules_stay_in_the_nodes_namespace(tmp_path: Path) -> None:
    config = kubeproxy.proxy_config(
        kubeconfig=tmp_path / "k", network=NETWORK, node="olmtool-node", healthz_port=1,
        metrics_port=2,
    )  # fmt: skip
    assert config["mode"] == "iptables" and config["clusterCIDR"] == "10.244.7.0/24"
    assert config["conntrack"]["maxPerCore"] == 0  # the host's conntrack table untouched
    assert config["nodePortAddresses"] == ["10.243.7.2/32"]
    ca = pki.create_ca(tmp_path)
    argv = kubeproxy.kube_proxy_command(
        tmp_path / "kp", binary=Path("/x/kube-proxy"), server="https://10.243.7.1:6443",
        ca=ca, pki_dir=tmp_path, network=NETWORK, node="olmtool-node", healthz_port=1,
        metrics_port=2,
    )  # fmt: skip
    assert argv[:5] == ["ip", "netns", "exec", "olmtool-7", "/x/kube-proxy"]


def test_the_sysctl_baseline_is_recorded_once_and_written_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = {"vm.overcommit_memory": "0", "kernel.panic": "1", "kernel.panic_on_oops": "0"}
    monkeypatch.setattr(hostnet, "read_sysctl", lambda name: values.get(name))
    monkeypatch.setattr(
        hostnet, "write_sysctl", lambda name, value: values.__setitem__(name, value)
    )
    baseline = tmp_path / "baseline.json"
    hostnet.record_baseline(baseline)
    values.update({"vm.overcommit_memory": "1", "kernel.panic": "10"})  # what kubelet does
    hostnet.record_baseline(baseline)  # a second node: the first record stays
    assert json.loads(baseline.read_text())["kernel.panic"] == "1"
    changed = hostnet.restore_baseline(baseline)
    assert changed == {"kernel.panic": "1", "vm.overcommit_memory": "0"}
    assert values == {"vm.overcommit_memory": "0", "kernel.panic": "1", "kernel.panic_on_oops": "0"}
    assert not baseline.exists()


def test_network_addresses_of_a_cluster() -> None:
    assert (NETWORK.host_address, NETWORK.node_netns_address) == ("10.243.7.1", "10.243.7.2")
    assert NETWORK.netns == "olmtool-7" and NETWORK.dns_ip == "10.96.7.10"


@pytest.mark.parametrize(
    ("reference", "path"),
    [
        ("quay.io/coreos/etcd:v3.5.1", "coreos/etcd:v3.5.1"),
        ("docker.io/library/busybox:1.35", "library/busybox:1.35"),
        ("busybox", "library/busybox:latest"),
        ("localhost:5000/olmtool/etcd-operator:0.4.0", "olmtool/etcd-operator:0.4.0"),
    ],
)
def test_upstream_names_map_to_the_registrys_paths(reference: str, path: str) -> None:
    assert mirror_path(reference) == path


def test_load_takes_layouts_and_names_what_it_cannot(tmp_path: Path) -> None:
    pause = tmp_path / "pause"
    pause.write_bytes(b"\x7fELF...")
    image = pause_image(pause)
    assert image.config_json["config"] == {"Entrypoint": ["/pause"], "User": "65535:65535"}
    assert set(image.files()) == {"pause"}
    (tmp_path / "docker.tar").write_bytes(b"")
    with pytest.raises(InputError, match="not an OCI image layout"):
        layout_of(tmp_path / "docker.tar", tmp_path / "scratch")
