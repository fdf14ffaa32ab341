"""``cluster status``: which of a cluster's components run, whether its apiserver
answers, and how each node is (Ready, NotReady, or stopped by ``cluster node stop``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from olmtool.cluster.defaults import DEFAULT_NAME
from olmtool.cluster.lifecycle import Cluster, _api, _healthy, node_ready, require_cluster
from olmtool.cluster.localnode import node_names
from olmtool.cluster.olmcrds import established_olm_crds
from olmtool.errors import OlmtoolError
from olmtool.jsonfields import json_fields


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    server: str
    kubeconfig: str
    registry: str | None
    components: dict[str, bool]
    healthy: bool  # the apiserver runs and answers /readyz
    node: str | None
    node_ready: bool
    olm_crds: list[str] = field(default_factory=list)  # Established operators.coreos.com CRDs
    docker_config: str | None = None  # the registry's login (REGISTRY_AUTH_FILE)
    # each node: "Ready", "NotReady" or "stopped" (by `cluster node stop`)
    nodes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        apiserver = "healthy" if self.healthy else "down"
        names = {"healthy": "apiserver", "olm_crds": "olmCRDs"}
        return json_fields(self, rename=names, healthy=apiserver)


def status(name: str = DEFAULT_NAME, *, root: Path | None = None) -> ClusterStatus:
    """Which components run, whether the apiserver answers and the node is Ready."""
    cluster = require_cluster(name, root)
    running = cluster.running()
    healthy = bool(running.get("kube-apiserver")) and _healthy(cluster)
    return ClusterStatus(
        cluster.name,
        cluster.server,
        cluster.kubeconfig,
        cluster.registry,
        running,
        healthy,
        cluster.node,
        healthy and node_ready(cluster),
        _olm_crds_or_none(cluster) if healthy else [],
        cluster.docker_config,
        _node_states(cluster, healthy),
    )


def _node_states(cluster: Cluster, healthy: bool) -> dict[str, str]:
    if cluster.runtime != "containerd":
        return {}
    states = {}
    for node in node_names(cluster.nodes):
        if node in cluster.stopped_nodes:
            states[node] = "stopped"
        else:
            states[node] = "Ready" if healthy and node_ready(cluster, node) else "NotReady"
    return states


def _olm_crds_or_none(cluster: Cluster) -> list[str]:
    try:
        return established_olm_crds(_api(cluster))
    except OlmtoolError:  # status reports; it does not fail on a flaky apiserver
        return []
