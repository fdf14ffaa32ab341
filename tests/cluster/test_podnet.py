"""The node agent's Pod networking when Pods share the host's network (the fallback)."""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster import ClusterNetwork
from olmtool.cluster.node.podnet import PodNetwork


def test_without_namespaces_pods_get_their_clusters_loopback_range(tmp_path: Path) -> None:
    one = PodNetwork(tmp_path / "one", ClusterNetwork(4), namespaces=False)
    two = PodNetwork(tmp_path / "two", ClusterNetwork(5), namespaces=False)
    for pods in (one, two):
        pods.start()
    first, second = one.allocate("ns", "web"), two.allocate("ns", "web")
    assert first.startswith("127.4.") and second.startswith("127.5.")  # never the same
    assert one.sandbox("uid-1", first) is None  # the host's network
    one.remove_sandbox("uid-1")
    one.stop()
    # a restarted agent keeps the address
    again = PodNetwork(tmp_path / "one", ClusterNetwork(4), namespaces=False)
    again.start()
    assert again.allocate("ns", "web") == first


def test_without_a_cluster_network_pods_get_any_loopback_address(tmp_path: Path) -> None:
    pods = PodNetwork(tmp_path, None)
    pods.start()
    assert not pods.namespaces
    address = pods.allocate("ns", "web")
    assert address.startswith("127.") and not address.startswith("127.0.")
    pods.release("ns", "web")
    pods.stop()
