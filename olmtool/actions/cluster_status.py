"""``cluster status`` (and ``kubeconfig``, ``logs``): what a local cluster runs.

>>> cluster_status("ci").healthy
True
"""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster import local
from olmtool.cluster.node import read_logs


def cluster_status(name: str = local.DEFAULT_NAME) -> local.ClusterStatus:
    """Which components of ``name`` run, whether the apiserver answers and the node is
    Ready; ClusterError when there is no such cluster."""
    return local.status(name)


def cluster_kubeconfig(name: str = local.DEFAULT_NAME) -> Path:
    """The admin kubeconfig of the cluster ``name``."""
    return Path(local.require_cluster(name).kubeconfig)


def cluster_logs(
    pod: str,
    *,
    namespace: str = "default",
    container: str | None = None,
    name: str = local.DEFAULT_NAME,
) -> str:
    """The logs the node agent kept of a pod's container (the only one when None)."""
    return read_logs(
        Path(local.require_cluster(name).state_dir) / "node", namespace, pod, container
    )
