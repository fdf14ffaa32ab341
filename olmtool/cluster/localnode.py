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

NODE_NAME = "olmtool-node"  # the first node; kind's way for the others: olmtool-node2, ...
# the node's components, in the order they start: one each per node, then the cluster's
PER_NODE = ("containerd", "kubelet", "kube-proxy")
REAL_NODE = (*PER_NODE, "cluster-dns", "provisioner")
NODE_PORTS = ("kubelet", "kubelet-healthz", "kube-proxy-healthz", "kube-proxy-metrics")


def node_names(count: int) -> list[str]:
    return [NODE_NAME, *(f"{NODE_NAME}{number}" for number in range(2, count + 1))]


def component_name(component: str, node: str) -> str:
    """A node's containerd, kubelet or kube-proxy as ``cluster.json`` records it: the
    first node's under their own names (as a one-node cluster always had them), the
    others' with the node's: ``kubelet@olmtool-node2``."""
    return component if node == NODE_NAME else f"{component}@{node}"


def node_of(component: str) -> str | None:
    """The node a recorded component belongs to (None: the cluster's, not a node's)."""
    base, _, node = component.partition("@")
    return node or (NODE_NAME if base in PER_NODE else None)


def base_component(component: str) -> str:
    """``kubelet@olmtool-node2`` -> ``kubelet``."""
    return component.partition("@")[0]


def real_node(
    cluster: Cluster, network: ClusterNetwork | None = None, name: str = NODE_NAME
) -> RealNode:
    names = node_names(cluster.nodes)
    ordinal = names.index(name)
    network = network or ClusterNetwork(cluster.network or 1)
    directory = Path(cluster.state_dir) / ("node" if ordinal == 0 else f"node{ordinal + 1}")
    return RealNode(name, cluster.name, directory, network.node(ordinal, len(names)))


def running_nodes(cluster: Cluster) -> list[str]:
    """The nodes that run unless someone stopped them (``cluster node stop``)."""
    return [name for name in node_names(cluster.nodes) if name not in cluster.stopped_nodes]


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
    """Every running node's containerd, kubelet and kube-proxy, then the cluster's DNS
    and provisioner (``only``: just that recorded component, ``kubelet@olmtool-node2``
    for instance; the others run on). The host's side of each node (network namespace,
    link, CNI) is checked and mended first."""
    if missing := [b for b in NODE_BINARIES if not os.access(assets / b, os.X_OK)]:
        raise ClusterError(
            f"a real node needs {', '.join(missing)} in {assets}: build them with "
            "`olmtool cluster assets`"
        )
    base = base_component(only) if only else None
    waits: list[Callable[[], None]] = []
    if base in (None, *PER_NODE):
        names = [node_of(only)] if only else running_nodes(cluster)
        for name in names:
            assert name is not None
            node = real_node(cluster, network, name)
            waits += start_node_components(cluster, plane, assets, node, timeout, say, base)
    state_dir = Path(cluster.state_dir)
    if base in (None, "cluster-dns"):
        say("starting the cluster DNS (dnsmasq)")
        argv = [
            sys.executable, "-m", "olmtool.cluster.kubeletnode.dns",
            f"--kubeconfig={cluster.kubeconfig}", f"--network-index={network.index}",
            f"--hosts-file={dns_hosts_file(network)}",
        ]  # fmt: skip
        _start(cluster, "cluster-dns", argv, real_node(cluster, network).directory)
    if base in (None, "provisioner"):
        argv = [
            sys.executable, "-m", "olmtool.cluster.provisioner",
            f"--kubeconfig={cluster.kubeconfig}", f"--state-dir={state_dir}",
        ]  # fmt: skip
        _start(cluster, "provisioner", argv, state_dir)
    for wait in waits:  # the others started meanwhile
        wait()
    cluster.node = NODE_NAME


def _start(cluster: Cluster, component: str, argv: list[str], log_dir: Path) -> None:
    log = log_dir / f"{base_component(component)}.log"
    state_dir = Path(cluster.state_dir)
    cluster.components[component] = detach(argv, log, clusters_dir=state_dir.parent)


def start_node_components(
    cluster: Cluster,
    plane: ControlPlane,
    assets: Path,
    node: RealNode,
    timeout: float,
    say: Callable[[str], None],
    only: str | None = None,
) -> list[Callable[[], None]]:
    """One node's containerd, kubelet and kube-proxy (``only``: that one); returns what
    is left to wait for (the kubelet's health)."""
    node.directory.mkdir(parents=True, exist_ok=True)
    prepare_host(node)
    state_dir = Path(cluster.state_dir)
    ca = pki.KeyPair(plane.ca_file, plane.ca_file.with_suffix(".key"))
    keys = {name: component_name(name, node.name) for name in NODE_PORTS}
    ports = PortRecord.load(state_dir).assign(list(keys.values()))
    port = {name: ports[key] for name, key in keys.items()}
    on = "" if node.name == NODE_NAME else f" on {node.name}"
    containerd, kubelet = (component_name(c, node.name) for c in ("containerd", "kubelet"))
    if only in (None, "containerd"):
        say(f"starting containerd{on}")
        login = read_login(Path(cluster.docker_config)) if cluster.docker_config else None
        argv = containerd_command(node, registry=cluster.registry, login=login)
        _start(cluster, containerd, argv, node.directory)
    if only in (None, "containerd", "kubelet"):
        wait_containerd(node, cluster.components[containerd].alive, timeout)
        load_pause(node, assets)
    if only in (None, "kubelet"):
        say(f"starting the kubelet{on}")
        argv = kubelet_command(
            node, assets=assets, server=plane.server, ca=ca, pki_dir=pki_dir(state_dir),
            port=port["kubelet"], healthz_port=port["kubelet-healthz"],
        )  # fmt: skip
        _start(cluster, kubelet, argv, node.directory)
    if only in (None, "kube-proxy"):
        say(f"starting kube-proxy{on}")
        argv = kube_proxy_command(
            node.directory / "kube-proxy", binary=assets / "kube-proxy",
            server=f"https://{node.network.cluster.host_address}:{plane.ports['kube-apiserver']}",
            ca=ca, pki_dir=pki_dir(state_dir), network=node.network, node=node.name,
            healthz_port=port["kube-proxy-healthz"], metrics_port=port["kube-proxy-metrics"],
        )  # fmt: skip
        _start(cluster, component_name("kube-proxy", node.name), argv, node.directory)
    if only not in (None, "kubelet"):
        return []
    alive = cluster.components[kubelet].alive
    return [lambda: wait_kubelet(node, port["kubelet-healthz"], alive, timeout)]


def release_node(cluster: Cluster, *, delete: bool = False, name: str | None = None) -> None:
    """The nodes' host changes undone once their processes and Pods are stopped
    (``name``: that node's only)."""
    if cluster.runtime != "containerd" or not cluster.network:
        return
    network = holds(Path(cluster.state_dir), cluster.network)
    for node_name in [name] if name else reversed(node_names(cluster.nodes)):
        release_host(real_node(cluster, name=node_name), delete=delete, network=network)


def load_into_node(cluster: Cluster, source: Path, reference: str) -> str:
    """Import the image of ``source`` (an OCI layout or archive) into every running
    node's containerd as ``reference`` (as ``kind load`` does); the name Pods find it
    under."""
    if cluster.runtime != "containerd" or "containerd" not in cluster.components:
        raise ClusterError(
            f"cluster {cluster.name!r} has no node to load images into (it was started with "
            "--no-node, or by an older olmtool: `olmtool cluster down` and `up` again)"
        )
    nodes = [real_node(cluster, name=name) for name in running_nodes(cluster)]
    for node in nodes:
        containerd = cluster.components.get(component_name("containerd", node.name))
        if containerd is None or not containerd.alive():
            raise ClusterError(
                f"cluster {cluster.name!r}: containerd of {node.name} is not running "
                "(olmtool cluster up)"
            )

    def into_nodes(layout: Path, ref: str) -> None:
        for node in nodes:
            import_layout(node.containerd, layout, ref)

    return load(source, reference, into_nodes)
