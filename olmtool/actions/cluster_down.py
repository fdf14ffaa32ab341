"""``cluster down``: stop every process a local cluster started.

>>> cluster_down("ci", delete=True)
['node', 'registry', 'kube-scheduler', ...]
"""

from __future__ import annotations

from olmtool.cluster import DEFAULT_NAME
from olmtool.cluster import down as stop_cluster


def cluster_down(name: str = DEFAULT_NAME, *, delete: bool = False) -> list[str]:
    """Stop the cluster ``name``; ``delete`` removes its state (etcd data, volumes) too.
    Returns the components that were stopped."""
    return stop_cluster(name, delete=delete)
