"""Pod IPs and per-Pod hosts files."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from olmtool.cluster.node.network import (
    HostEntry,
    IPAllocator,
    host_entry,
    pod_hostname,
    render_hosts,
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


def test_write_in_place_keeps_the_inode(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    assert write_in_place(path, "a very long first version\n")
    inode = path.stat().st_ino
    assert write_in_place(path, "short\n")
    assert path.read_text() == "short\n" and path.stat().st_ino == inode
    assert not write_in_place(path, "short\n")
