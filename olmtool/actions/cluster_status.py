"""``cluster status`` (and ``kubeconfig``, ``logs``): what a local cluster runs.

>>> cluster_status("ci").healthy
True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from olmtool.cluster import local
from olmtool.cluster.node import read_logs


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

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "server": self.server,
            "kubeconfig": self.kubeconfig,
            "registry": self.registry,
            "components": self.components,
            "apiserver": "healthy" if self.healthy else "down",
            "node": self.node,
            "nodeReady": self.node_ready,
        }


def cluster_status(name: str = local.DEFAULT_NAME) -> ClusterStatus:
    """Which components of ``name`` run, whether the apiserver answers and the node is
    Ready; ClusterError when there is no such cluster."""
    data = local.status(name)
    return ClusterStatus(
        name=str(data["name"]),
        server=str(data["server"]),
        kubeconfig=str(data["kubeconfig"]),
        registry=data["registry"],  # type: ignore[arg-type]
        components=dict(data["components"]),  # type: ignore[call-overload]
        healthy=data["apiserver"] == "healthy",
        node=data["node"],  # type: ignore[arg-type]
        node_ready=bool(data["nodeReady"]),
    )


def _existing(name: str) -> local.Cluster:
    cluster = local.read_cluster(name)
    if cluster is None:
        raise local.ClusterError(f"no cluster named {name!r} (start one: olmtool cluster up)")
    return cluster


def cluster_kubeconfig(name: str = local.DEFAULT_NAME) -> Path:
    """The admin kubeconfig of the cluster ``name``."""
    return Path(_existing(name).kubeconfig)


def cluster_logs(
    pod: str,
    *,
    namespace: str = "default",
    container: str | None = None,
    name: str = local.DEFAULT_NAME,
) -> str:
    """The logs the node agent kept of a pod's container (the only one when None)."""
    return read_logs(Path(_existing(name).state_dir) / "node", namespace, pod, container)
