"""``cluster up``: a local cluster (control plane, controllers, registry, a real node).

>>> cluster = cluster_up("ci", registry_port=0)
>>> cluster.kubeconfig
'/root/.local/state/olmtool/clusters/ci/kubeconfig'
"""

from __future__ import annotations

from collections.abc import Callable

from olmtool.cluster import DEFAULT_NAME, DEFAULT_REGISTRY_PORT, Cluster
from olmtool.cluster import up as start_cluster


def cluster_up(
    name: str = DEFAULT_NAME,
    *,
    registry_port: int | None = DEFAULT_REGISTRY_PORT,
    node: bool = True,
    olm_crds: bool = True,
    nodes: int | None = None,
    timeout: float = 120.0,
    progress: Callable[[str], None] | None = None,
) -> Cluster:
    """Start the cluster ``name`` (nothing to do when it runs); ``registry_port`` None
    runs no registry, 0 any free port; ``node`` False starts the control plane only;
    ``olm_crds`` False installs no ``operators.coreos.com`` CRDs (OLM's API); ``nodes``
    is how many nodes a new cluster gets (None: as made, else 1)."""
    return start_cluster(
        name,
        registry_port=registry_port,
        node=node,
        olm_crds=olm_crds,
        nodes=nodes,
        timeout=timeout,
        progress=progress,
    )
