"""``cluster node stop`` / ``start``: a node of a running cluster fails and comes back.

>>> cluster_node_stop("olmtool-node2", name="ci")
['kube-proxy@olmtool-node2', 'kubelet@olmtool-node2', 'containerd@olmtool-node2']
>>> cluster_node_start("olmtool-node2", name="ci")
"""

from __future__ import annotations

from collections.abc import Callable

from olmtool.cluster import DEFAULT_NAME, node_start, node_stop


def cluster_node_stop(node: str, *, name: str = DEFAULT_NAME) -> list[str]:
    """Stop ``node``'s kubelet, kube-proxy, containerd and containers, as a machine that
    is switched off; returns the components stopped."""
    return node_stop(node, name=name)


def cluster_node_start(
    node: str,
    *,
    name: str = DEFAULT_NAME,
    timeout: float = 120.0,
    progress: Callable[[str], None] | None = None,
) -> list[str]:
    """Start ``node`` again with its state and wait until it is Ready; returns its
    components."""
    return node_start(node, name=name, timeout=timeout, progress=progress)
