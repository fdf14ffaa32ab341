"""Cluster networks: address ranges per index, machine-wide claims (in a temp claims dir)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from olmtool.cluster import ClusterNetwork, NetworkError, claim_network, release_network
from olmtool.cluster.network import MAX_INDEX, Network, Route, host_routes


@pytest.fixture
def claims(tmp_path: Path) -> Path:
    return tmp_path / "claims"


def claim(state: Path, claims: Path, routes: list[Route] | None = None) -> ClusterNetwork:
    return claim_network(state, claims_dir=claims, routes=routes or [])


def test_ranges_follow_the_index() -> None:
    network = ClusterNetwork(7)
    assert network.pod_cidr == "10.244.7.0/24"
    assert network.service_cidr == "10.96.7.0/24"
    assert network.bridge == "olmtool7"
    assert network.gateway == "10.244.7.1"
    assert network.apiserver_service_ip == "10.96.7.1"
    assert network.link_cidr == "10.243.7.0/30"
    assert (network.host_address, network.node_netns_address) == ("10.243.7.1", "10.243.7.2")
    assert network.dns_ip == "10.96.7.10"
    assert ClusterNetwork(7, pod_cidr="10.1.0.0/16").gateway == "10.1.0.1"
    for bad in (0, MAX_INDEX + 1):
        with pytest.raises(ValueError, match=r"not in 1\.\.254"):
            ClusterNetwork(bad)


def test_two_clusters_get_different_networks_and_keep_them(tmp_path: Path, claims: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    first, second = claim(one, claims), claim(two, claims)
    assert (first.index, second.index) == (1, 2)
    assert claim(one, claims) == first  # still ours: the same network
    assert json.loads((one / "network.json").read_text())["index"] == 1
    assert (claims / "1").read_text().strip() == str(one.resolve())


def test_a_released_network_is_taken_again_first_when_free(tmp_path: Path, claims: Path) -> None:
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    claim(one, claims)
    assert claim(two, claims).index == 2
    release_network(two, claims_dir=claims)
    assert not (claims / "2").exists()
    assert (two / "network.json").is_file()  # the preference stays
    assert claim(two, claims).index == 2  # a restarted cluster gets its network back
    release_network(two, claims_dir=claims)
    assert claim(three, claims).index == 2  # the lowest free one
    assert claim(two, claims).index == 3  # 2 is taken now: another one


def test_stale_claims_are_taken_over(tmp_path: Path, claims: Path) -> None:
    gone, moved, mine = tmp_path / "gone", tmp_path / "moved", tmp_path / "mine"
    claim(gone, claims)
    claim(moved, claims)
    shutil.rmtree(gone)  # its owner directory no longer exists
    (moved / "network.json").write_text(json.dumps({"index": 9}))  # its record names another
    assert claim(mine, claims).index == 1
    assert claim(tmp_path / "other", claims).index == 2


def test_networks_that_overlap_host_routes_are_skipped(tmp_path: Path, claims: Path) -> None:
    routes = [
        Route(Network("10.244.1.0/24"), "eth1"),
        Route(Network("10.96.2.0/23"), "eth2"),  # covers 10.96.2 and 10.96.3
        Route(Network("10.244.4.0/24"), "olmtool4"),  # a bridge left behind: reusable
    ]
    assert claim(tmp_path / "a", claims, routes).index == 4
    assert claim(tmp_path / "b", claims, routes).index == 5


def test_no_free_network_is_an_error(tmp_path: Path, claims: Path) -> None:
    everything = [Route(Network("10.0.0.0/8"), "eth0")]
    with pytest.raises(NetworkError, match="no free cluster network"):
        claim(tmp_path / "a", claims, everything)


def test_release_leaves_other_claims_alone(tmp_path: Path, claims: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    claim(one, claims)
    (two / "network.json").parent.mkdir()
    (two / "network.json").write_text(json.dumps({"index": 1}))  # claims to be 1, is not
    release_network(two, claims_dir=claims)
    assert (claims / "1").exists()
    release_network(tmp_path / "never-claimed", claims_dir=claims)  # nothing to do


def test_host_routes_reads_the_kernel_table(tmp_path: Path) -> None:
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    )
    assert host_routes(table) == [Route(Network("192.0.2.0/24"), "eth0")]  # default left out
    assert host_routes(tmp_path / "missing") == []


def test_one_node_holds_the_whole_network_under_the_names_it_always_had() -> None:
    node = ClusterNetwork(7).node(0, 1)
    assert (node.pod_cidr, node.gateway, node.link_cidr) == (
        "10.244.7.0/24",
        "10.244.7.1",
        "10.243.7.0/30",
    )
    assert (node.netns, node.bridge, node.host_address) == ("olmtool-7", "olmtool7", "10.243.7.1")
    assert node.routed_cidrs == ("10.244.7.0/24", "10.96.7.0/24")


def test_three_nodes_share_the_pod_range_and_have_links_of_their_own() -> None:
    network = ClusterNetwork(7)
    nodes = [network.node(ordinal, 3) for ordinal in range(3)]
    assert [n.pod_cidr for n in nodes] == ["10.244.7.0/26", "10.244.7.64/26", "10.244.7.128/26"]
    assert [n.gateway for n in nodes] == ["10.244.7.1", "10.244.7.65", "10.244.7.129"]
    assert [n.host_address for n in nodes] == ["10.243.7.1", "10.243.7.5", "10.243.7.9"]
    assert [n.node_netns_address for n in nodes] == ["10.243.7.2", "10.243.7.6", "10.243.7.10"]
    assert [n.netns for n in nodes] == ["olmtool-7", "olmtool-7-2", "olmtool-7-3"]
    assert [n.bridge for n in nodes] == ["olmtool7", "olmtool7n2", "olmtool7n3"]
    # Services go through the first node; every node keeps the cluster's ranges
    assert [n.routed_cidrs for n in nodes][1:] == [("10.244.7.64/26",), ("10.244.7.128/26",)]
    assert {(n.cluster_pod_cidr, n.service_cidr, n.dns_ip) for n in nodes} == {
        ("10.244.7.0/24", "10.96.7.0/24", "10.96.7.10")
    }
    eight = [ClusterNetwork(254).node(ordinal, 8) for ordinal in range(8)]
    assert eight[-1].pod_cidr == "10.244.254.224/27" and eight[-1].link_cidr == "10.243.254.28/30"
    assert max(len(n.bridge) + 1 for n in eight) <= 15  # the veth peer's temporary name
    for ordinal, count in ((0, 9), (3, 3), (-1, 2)):
        with pytest.raises(ValueError, match="at most 8 nodes"):
            network.node(ordinal, count)


def test_a_route_through_any_of_the_clusters_own_links_is_not_an_overlap() -> None:
    network = ClusterNetwork(7)
    stale = Route(Network("10.244.7.64/26"), "olmtool7n2")  # a node killed with SIGKILL
    foreign = Route(Network("10.243.7.8/30"), "eth1")
    assert not network.overlaps([stale])
    assert network.overlaps([foreign])  # node 3's link
    assert ClusterNetwork(1).overlaps([Route(Network("10.243.1.16/28"), "olmtool2")])
