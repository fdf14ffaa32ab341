"""The local cluster's node as ``up`` and ``down`` run it: containerd, the kubelet,
kube-proxy, the cluster DNS and the volume provisioner started as recorded components,
and the host's side (:mod:`olmtool.cluster.kubeletnode`) prepared and released."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from olmtool.cluster import pki
from olmtool.cluster.controlplane import ControlPlane
from olmtool.cluster.kubeletnode import (
    NODE_BINARIES,
    RealNode,
    containerd_command,
    dns_hosts_file,
    kubelet_command,
    load_pause,
    prepare_host,
    release_host,
    wait_containerd,
    wait_kubelet,
)
from olmtool.cluster.kubeletnode.containerd import import_layout
from olmtool.cluster.kubeletnode.kubeproxy import kube_proxy_command
from olmtool.cluster.network import ClusterNetwork, holds
from olmtool.cluster.planecerts import pki_dir
from olmtool.cluster.portrecord import PortRecord
from olmtool.cluster.processes import ClusterError, detach
from olmtool.cluster.registryauth import read_login
from olmtool.cluster.standins import load

if TYPE_CHECKING:
    from collections.abc import Callable

    from olmtool.cluster.lifecycle import Cluster

NODE_NAME = "olmtool-node"
# the node's components, in the order they start
REAL_NODE = ("containerd", "kubelet", "kube-proxy", "cluster-dns", "provisioner")


def real_node(cluster: Cluster, network: ClusterNetwork | None = None) -> RealNode:
    network = network or ClusterNetwork(cluster.network or 1)
    return RealNode(NODE_NAME, cluster.name, Path(cluster.state_dir) / "node", network)


def start_node(
    cluster: Cluster,
    plane: ControlPlane,
    assets: Path,
    network: ClusterNetwork,
    timeout: float,
    say: Callable[[str], None],
    *,
    only: str | None = None,
) -> None:
    """containerd, the kubelet, kube-proxy, the DNS and the provisioner (``only``: just
    that one; the others run on). The host's side (network namespace, link, CNI) is
    checked and mended first."""
    state_dir = Path(cluster.state_dir)
    node = real_node(cluster, network)
    node.directory.mkdir(parents=True, exist_ok=True)
    if missing := [b for b in NODE_BINARIES if not os.access(assets / b, os.X_OK)]:
        raise ClusterError(
            f"a real node needs {', '.join(missing)} in {assets}: build them with "
            "`olmtool cluster assets`"
        )
    prepare_host(node)
    ca = pki.KeyPair(plane.ca_file, plane.ca_file.with_suffix(".key"))
    ports = PortRecord.load(state_dir).assign(
        ["kubelet", "kubelet-healthz", "kube-proxy-healthz", "kube-proxy-metrics"]
    )

    def start(component: str, argv: list[str], log: Path) -> None:
        cluster.components[component] = detach(argv, log, clusters_dir=state_dir.parent)

    if only in (None, "containerd"):
        say("starting containerd")
        login = read_login(Path(cluster.docker_config)) if cluster.docker_config else None
        argv = containerd_command(node, registry=cluster.registry, login=login)
        start("containerd", argv, node.directory / "containerd.log")
    if only in (None, "containerd", "kubelet"):
        wait_containerd(node, cluster.components["containerd"].alive, timeout)
        load_pause(node, assets)
    if only in (None, "kubelet"):
        say("starting the kubelet")
        argv = kubelet_command(
            node, assets=assets, server=plane.server, ca=ca, pki_dir=pki_dir(state_dir),
            port=ports["kubelet"], healthz_port=ports["kubelet-healthz"],
        )  # fmt: skip
        start("kubelet", argv, node.directory / "kubelet.log")
    if only in (None, "kube-proxy"):
        say("starting kube-proxy")
        argv = kube_proxy_command(
            node.directory / "kube-proxy", binary=assets / "kube-proxy",
            server=f"https://{network.host_address}:{plane.ports['kube-apiserver']}",
            ca=ca, pki_dir=pki_dir(state_dir), network=network, node=NODE_NAME,
            healthz_port=ports["kube-proxy-healthz"], metrics_port=ports["kube-proxy-metrics"],
        )  # fmt: skip
        start("kube-proxy", argv, node.directory / "kube-proxy.log")
    if only in (None, "cluster-dns"):
        say("starting the cluster DNS (dnsmasq)")
        argv = [
            sys.executable, "-m", "olmtool.cluster.kubeletnode.dns",
            f"--kubeconfig={cluster.kubeconfig}", f"--network-index={network.index}",
            f"--hosts-file={dns_hosts_file(network)}",
        ]  # fmt: skip
        start("cluster-dns", argv, node.directory / "cluster-dns.log")
    if only in (None, "provisioner"):
        argv = [
            sys.executable, "-m", "olmtool.cluster.provisioner",
            f"--kubeconfig={cluster.kubeconfig}", f"--state-dir={state_dir}",
        ]  # fmt: skip
        start("provisioner", argv, state_dir / "provisioner.log")
    if only in (None, "kubelet"):  # the others start meanwhile
        alive = cluster.components["kubelet"].alive
        wait_kubelet(node, ports["kubelet-healthz"], alive, timeout)
    cluster.node = NODE_NAME


def release_node(cluster: Cluster, *, delete: bool = False) -> None:
    """A real node's host changes undone once its processes and Pods are stopped."""
    if cluster.runtime != "containerd" or not cluster.network:
        return
    network = holds(Path(cluster.state_dir), cluster.network)
    release_host(real_node(cluster), delete=delete, network=network)


def load_into_node(cluster: Cluster, source: Path, reference: str) -> str:
    """Import the image of ``source`` (an OCI layout or archive) into the node's
    containerd as ``reference``; the name Pods find it under."""
    containerd = cluster.components.get("containerd")
    if cluster.runtime != "containerd" or containerd is None:
        raise ClusterError(
            f"cluster {cluster.name!r} has no node to load images into (it was started with "
            "--no-node, or by an older olmtool: `olmtool cluster down` and `up` again)"
        )
    if not containerd.alive():
        raise ClusterError(
            f"cluster {cluster.name!r}: containerd is not running (olmtool cluster up)"
        )
    node = real_node(cluster)
    return load(source, reference, lambda layout, ref: import_layout(node.containerd, layout, ref))
