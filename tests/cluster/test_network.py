"""Pod IPs and per-Pod hosts files."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from olmtool.cluster.node.network import (
    AddressesExhausted,
    AddressPool,
    HostEntry,
    IPAllocator,
    ServiceEntry,
    host_entry,
    pod_hostname,
    render_hosts,
    render_resolv_conf,
    write_in_place,
)


def test_addresses_are_stable_loopback_and_persisted(tmp_path: Path) -> None:
    path = tmp_path / "ips.json"
    allocator = IPAllocator(path)
    first = allocator.allocate("ns", "web-0")
    assert allocator.allocate("ns", "web-0") == first
    ip = ipaddress.IPv4Address(first)
    assert ip.is_loopback and ip not in ipaddress.IPv4Network("127.0.0.0/24")
    # a restarted agent reads them back
    assert IPAllocator(path).allocate("ns", "web-0") == first
    assert json.loads(path.read_text()) == {"ns/web-0": first}


def test_addresses_are_unique_and_never_host_ones(tmp_path: Path) -> None:
    allocator = IPAllocator(tmp_path / "ips.json")
    addresses = [allocator.allocate("ns", f"pod-{i}") for i in range(2000)]
    assert len(set(addresses)) == len(addresses)
    for address in addresses:
        last = int(address.rsplit(".", 1)[1])
        assert address.startswith("127.") and not address.startswith("127.0.")
        assert 1 <= last <= 254


def test_same_name_gets_same_address_after_release(tmp_path: Path) -> None:
    allocator = IPAllocator(tmp_path / "ips.json")
    first = allocator.allocate("ns", "web-0")
    allocator.release("ns", "web-0")
    assert allocator.get("ns", "web-0") is None
    assert allocator.allocate("ns", "web-0") == first  # derived from the name


def test_collisions_probe_to_the_next_address(tmp_path: Path) -> None:
    path = tmp_path / "ips.json"
    allocator = IPAllocator(path)
    wanted = allocator.allocate("ns", "b")
    allocator.release("ns", "b")
    path.write_text(json.dumps({"ns/a": wanted}))  # someone else holds b's address
    allocator = IPAllocator(path)
    assert allocator.allocate("ns", "b") != wanted


def test_corrupt_state_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "ips.json"
    path.write_text("{not json")
    assert IPAllocator(path).allocate("ns", "x").startswith("127.")
    path.write_text(json.dumps({"ns/y": "10.0.0.1", "ns/z": "127.0.0.1"}))
    assert IPAllocator(path).all() == {}  # not ours to hand out


def test_a_pod_network_pool_never_hands_out_its_gateway(tmp_path: Path) -> None:
    pool = AddressPool.of("10.244.3.0/24", reserved=["10.244.3.1"])
    assert pool.size == 254 and "10.244.3.1" not in pool and "10.244.3.254" in pool
    assert "10.244.3.255" not in pool and "10.244.4.2" not in pool
    allocator = IPAllocator(tmp_path / "ips.json", pool)
    addresses = {allocator.allocate("ns", f"pod-{i}") for i in range(253)}
    assert len(addresses) == 253 and "10.244.3.1" not in addresses
    assert all(address in pool for address in addresses)
    with pytest.raises(AddressesExhausted):
        allocator.allocate("ns", "one-too-many")


def test_addresses_of_another_pool_are_dropped_on_load(tmp_path: Path) -> None:
    path = tmp_path / "ips.json"
    loopback = IPAllocator(path, AddressPool.of("127.5.0.0/16"))
    kept = loopback.allocate("ns", "a")
    assert kept.startswith("127.5.")
    pod_network = IPAllocator(path, AddressPool.of("10.244.5.0/24", reserved=["10.244.5.1"]))
    assert pod_network.all() == {}  # the Pods moved to namespaces: new addresses
    assert pod_network.allocate("ns", "a").startswith("10.244.5.")
    with pytest.raises(ValueError, match="/24 or larger"):
        AddressPool.of("10.244.5.0/25")


def test_per_cluster_loopback_pools_do_not_clash(tmp_path: Path) -> None:
    one = IPAllocator(tmp_path / "one.json", AddressPool.of("127.1.0.0/16"))
    two = IPAllocator(tmp_path / "two.json", AddressPool.of("127.2.0.0/16"))
    assert one.allocate("ns", "web").startswith("127.1.")
    assert two.allocate("ns", "web").startswith("127.2.")


def test_hostname() -> None:
    assert pod_hostname({"metadata": {"name": "web-0"}, "spec": {}}) == "web-0"
    assert pod_hostname({"metadata": {"name": "x"}, "spec": {"hostname": "db"}}) == "db"
    assert len(pod_hostname({"metadata": {"name": "a" * 80}, "spec": {}})) == 63


def test_hosts_file() -> None:
    pod = {
        "metadata": {"name": "etcd-0", "namespace": "db"},
        "spec": {"hostname": "etcd-0", "subdomain": "etcd"},
    }
    own = host_entry(pod, "127.1.0.1")
    peers = [
        own,
        HostEntry("db", "etcd-1", "127.1.0.2", "etcd-1", "etcd"),
        HostEntry("db", "plain", "127.1.0.3", "plain"),  # no subdomain: not listed
        HostEntry("other", "x-0", "127.1.0.4", "x-0", "etcd"),  # other namespace
    ]
    text = render_hosts(own, peers, [{"ip": "10.1.1.1", "hostnames": ["foo.local", "bar"]}])
    lines = text.splitlines()
    assert "127.0.0.1\tlocalhost" in lines
    assert (
        "127.1.0.1\tetcd-0.etcd.db.svc.cluster.local etcd-0.etcd.db.svc etcd-0.etcd etcd-0" in lines
    )
    assert "127.1.0.2\tetcd-1.etcd.db.svc.cluster.local etcd-1.etcd.db.svc etcd-1.etcd" in lines
    assert "10.1.1.1\tfoo.local bar" in lines
    assert "127.1.0.3" not in text  # no subdomain: not listed
    # another namespace: only the fully qualified names
    assert "127.1.0.4\tx-0.etcd.other.svc.cluster.local x-0.etcd.other.svc" in lines


def test_hosts_file_without_subdomain() -> None:
    own = HostEntry("ns", "web", "127.1.0.9", "web")
    text = render_hosts(own, [own])
    assert text.splitlines()[-1] == "127.1.0.9\tweb"


def test_hosts_file_names_services() -> None:
    own = HostEntry("shop", "client", "10.244.1.7", "client")
    services = [
        ServiceEntry("shop", "web", "10.96.1.20"),
        ServiceEntry("default", "kubernetes", "10.96.1.1"),
    ]
    lines = render_hosts(own, [own], services=services).splitlines()
    same = lines.index("# Services in this namespace.")
    assert lines[same + 1] == "10.96.1.20\tweb.shop.svc.cluster.local web.shop.svc web.shop web"
    other = lines.index("# Services in other namespaces.")
    assert lines[other + 1] == (
        "10.96.1.1\tkubernetes.default.svc.cluster.local kubernetes.default.svc kubernetes.default"
    )


def test_resolv_conf_has_the_cluster_search_path_and_dns_config() -> None:
    pod = {"metadata": {"name": "p", "namespace": "shop"}, "spec": {}}
    assert render_resolv_conf(pod).splitlines()[1:] == [
        "search shop.svc.cluster.local svc.cluster.local cluster.local",
        "options ndots:5",
    ]
    pod["spec"] = {
        "dnsPolicy": "None",
        "dnsConfig": {
            "nameservers": ["10.244.1.1"],
            "searches": ["example.test"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        },
    }
    assert render_resolv_conf(pod).splitlines()[1:] == [
        "nameserver 10.244.1.1",
        "search example.test",
        "options ndots:2 edns0",
    ]


def test_write_in_place_keeps_the_inode(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    assert write_in_place(path, "a very long first version\n")
    inode = path.stat().st_ino
    assert write_in_place(path, "short\n")
    assert path.read_text() == "short\n" and path.stat().st_ino == inode
    assert not write_in_place(path, "short\n")
