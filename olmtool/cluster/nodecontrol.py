"""``cluster node stop`` and ``start``: one node of a running cluster fails and comes back.

Stopping a node ends its kubelet, kube-proxy and containerd and every container it runs,
as when its machine is switched off: nothing tells the apiserver. The node-lifecycle
controller marks it NotReady once its kubelet's Lease is older than the grace period
(kube-controller-manager's ``--node-monitor-grace-period``, 40 s), taints it
``node.kubernetes.io/unreachable``, and evicts its Pods when their toleration ends
(300 s unless they say otherwise), as on any cluster. Its Pods' local volumes stay with
it (:mod:`olmtool.cluster.provisioner` binds each to its node). ``start`` brings the
same node back with its state; its kubelet starts its Pods again.

The first node cannot be stopped: the cluster's DNS and the host's route to Services go
through it (kind's control-plane node is not stopped in tests either).

>>> node_stop("demo", "olmtool-node2")     # ['kube-proxy@olmtool-node2', ...]
>>> node_start("demo", "olmtool-node2")
"""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster.assets import ensure_assets
from olmtool.cluster.controlplane import prepare_plane
from olmtool.cluster.defaults import DEFAULT_NAME
from olmtool.cluster.lifecycle import (
    Cluster,
    Progress,
    advertise_address,
    require_cluster,
    save_cluster,
    stop_components,
    wait_nodes_ready,
)
from olmtool.cluster.localnode import (
    NODE_NAME,
    node_names,
    node_of,
    real_node,
    start_node_components,
)
from olmtool.cluster.network import claim_network
from olmtool.cluster.processes import ClusterError
from olmtool.errors import ArgumentError


def node_stop(node: str, *, name: str = DEFAULT_NAME, root: Path | None = None) -> list[str]:
    """Stop ``node``'s processes and containers; returns the components stopped."""
    cluster = _running_cluster(name, root)
    _check_node(cluster, node)
    if node == NODE_NAME:
        others = ", ".join(node_names(cluster.nodes)[1:]) or "a cluster made with --nodes 2 or more"
        raise ArgumentError(
            f"{node} is the cluster's first node: the cluster DNS and the host's route to "
            f"Services go through it; stop another ({others})",
            argument="node",
        )
    components = [component for component in cluster.components if node_of(component) == node]
    stopped = stop_components(cluster, names=components)
    for component in components:
        del cluster.components[component]
    cluster.stopped_nodes = sorted({*cluster.stopped_nodes, node})
    save_cluster(cluster)
    return stopped


def node_start(
    node: str,
    *,
    name: str = DEFAULT_NAME,
    root: Path | None = None,
    timeout: float = 120.0,
    progress: Progress | None = None,
) -> list[str]:
    """Start ``node`` again (what of it is not running) and wait until it is Ready;
    returns the components started."""
    say = progress or (lambda _message: None)
    cluster = _running_cluster(name, root)
    _check_node(cluster, node)
    mine = [c for c, alive in cluster.running().items() if node_of(c) == node and alive]
    if node not in cluster.stopped_nodes and len(mine) == 3:
        return []
    state_dir = Path(cluster.state_dir)
    network = claim_network(state_dir)
    plane = prepare_plane(
        state_dir, network=network, advertise=advertise_address(cluster.runtime, network)
    )
    cluster.stopped_nodes = [other for other in cluster.stopped_nodes if other != node]
    stop_components(cluster, names=mine)  # a half-running node starts whole
    waits = start_node_components(
        cluster, plane, ensure_assets(), real_node(cluster, network, node), timeout, say
    )
    save_cluster(cluster)
    for wait in waits:
        wait()
    say(f"waiting for {node} to be Ready")
    wait_nodes_ready(cluster, timeout, [node])
    return sorted(component for component in cluster.components if node_of(component) == node)


def _running_cluster(name: str, root: Path | None) -> Cluster:
    cluster = require_cluster(name, root)
    if cluster.runtime != "containerd":
        raise ClusterError(f"cluster {name!r} has no nodes (it was started with --no-node)")
    if not cluster.running().get("kube-apiserver"):
        raise ClusterError(f"cluster {name!r} is not running (olmtool cluster up --name {name})")
    return cluster


def _check_node(cluster: Cluster, node: str) -> None:
    names = node_names(cluster.nodes)
    if node not in names:
        raise ArgumentError(
            f"cluster {cluster.name!r} has no node {node!r}; its nodes: {', '.join(names)}",
            argument="node",
        )
