"""The real node's cluster DNS: the records, dnsmasq's arguments and upstreams, the
kube-dns objects, and dnsmasq itself on a loopback port (root only)."""

from __future__ import annotations

import contextlib
import copy
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from olmtool.cluster.kubeletnode import dns
from olmtool.cluster.kubeletnode.dns import (
    HEADER,
    DnsServer,
    Objects,
    dnsmasq_args,
    ensure_dns_service,
    hosts_text,
    reverse_zone,
    upstream_servers,
    write_hosts,
)
from olmtool.cluster.network import ClusterNetwork
from olmtool.ports import free_port

JSON = dict[str, Any]
NETWORK = ClusterNetwork(7)


def service(name: str, namespace: str = "ns", **spec: Any) -> JSON:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def endpoints(name: str, namespace: str = "ns", *subsets: JSON) -> JSON:
    return {"metadata": {"name": name, "namespace": namespace}, "subsets": list(subsets)}


def address(ip: str, hostname: str | None = None) -> JSON:
    return {"ip": ip, **({"hostname": hostname} if hostname else {})}


def records(text: str) -> list[str]:
    assert text.startswith(HEADER)
    return text[len(HEADER) :].splitlines()


# --- hosts_text -----------------------------------------------------------------------


def test_cluster_ip_services() -> None:
    text = hosts_text(
        [
            service("web", clusterIP="10.96.7.20", type="ClusterIP"),
            service("kubernetes", "default", clusterIP="10.96.7.1"),
            service("dual", clusterIP="10.96.7.30", clusterIPs=["10.96.7.30", "fd00::30"]),
        ],
        # a ClusterIP Service's endpoints do not become its name's addresses
        [endpoints("web", "ns", {"addresses": [address("10.244.7.5")]})],
    )
    assert records(text) == [
        "10.96.7.30 dual.ns.svc.cluster.local",
        "fd00::30 dual.ns.svc.cluster.local",
        "10.96.7.1 kubernetes.default.svc.cluster.local",
        "10.96.7.20 web.ns.svc.cluster.local",
    ]


def test_headless_service_with_hostnames() -> None:
    ready = {
        "addresses": [address("10.244.7.11", "etcd-1"), address("10.244.7.10", "etcd-0")],
        "notReadyAddresses": [address("10.244.7.12", "etcd-2")],
        "ports": [{"name": "client", "port": 2379}],
    }
    text = hosts_text(
        [service("etcd", clusterIP="None")], [endpoints("etcd", "ns", ready)], "example.test"
    )
    assert records(text) == [
        "10.244.7.10 etcd-0.etcd.ns.svc.example.test",
        "10.244.7.11 etcd-1.etcd.ns.svc.example.test",
        "10.244.7.10 etcd.ns.svc.example.test",
        "10.244.7.11 etcd.ns.svc.example.test",
    ]


def test_publish_not_ready_addresses() -> None:
    subset = {
        "addresses": [address("10.244.7.10", "m-0")],
        "notReadyAddresses": [address("10.244.7.12", "m-2"), address("10.244.7.13")],
    }
    eps = [endpoints("m", "ns", subset)]
    off = records(hosts_text([service("m", clusterIP="None")], eps))
    on = records(hosts_text([service("m", clusterIP="None", publishNotReadyAddresses=True)], eps))
    assert off == ["10.244.7.10 m-0.m.ns.svc.cluster.local", "10.244.7.10 m.ns.svc.cluster.local"]
    assert on == [
        "10.244.7.10 m-0.m.ns.svc.cluster.local",
        "10.244.7.12 m-2.m.ns.svc.cluster.local",
        "10.244.7.10 m.ns.svc.cluster.local",
        "10.244.7.12 m.ns.svc.cluster.local",
        "10.244.7.13 m.ns.svc.cluster.local",
    ]


def test_hostnames_of_a_cluster_ip_service_and_duplicates() -> None:
    subset = {"addresses": [address("10.244.7.10", "a-0")]}
    text = hosts_text(
        [service("a", clusterIP="10.96.7.40"), service("a", clusterIP="10.96.7.40")],
        [endpoints("a", "ns", subset, subset)],
    )
    assert records(text) == [
        "10.244.7.10 a-0.a.ns.svc.cluster.local",
        "10.96.7.40 a.ns.svc.cluster.local",
    ]


def test_external_name_and_services_without_address_are_skipped() -> None:
    text = hosts_text(
        [
            service("ext", type="ExternalName", externalName="example.com", clusterIP="None"),
            service("new", clusterIP=""),
            service("none"),
        ],
        [endpoints("ext", "ns", {"addresses": [address("10.244.7.3", "x")]})],
    )
    assert records(text) == []
    # endpoints without a Service give no names
    assert (
        records(hosts_text([], [endpoints("x", "ns", {"addresses": [address("1.2.3.4")]})])) == []
    )


def test_missing_and_odd_fields_never_crash() -> None:
    odd_services: list[Any] = [
        {},
        {"metadata": None},
        {"metadata": {"name": "n"}},  # no namespace
        {"metadata": {"name": "Bad Name", "namespace": "ns"}, "spec": {"clusterIP": "10.0.0.1"}},
        {"metadata": {"name": "s", "namespace": "ns"}, "spec": None},
        {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"clusterIP": "not-an-ip"}},
        {"metadata": {"name": "u", "namespace": "ns"}, "spec": {"clusterIPs": "10.0.0.1"}},
        {"metadata": {"name": "h", "namespace": "ns"}, "spec": {"clusterIP": "None"}},
        {"metadata": {"name": "v", "namespace": "ns"}, "spec": {"clusterIP": 5}},
        "not an object",
    ]
    odd_endpoints: list[Any] = [
        {"metadata": {"name": "h", "namespace": "ns"}, "subsets": None},
        {"metadata": {"name": "h", "namespace": "ns"}, "subsets": [None, {"addresses": None}]},
        {
            "metadata": {"name": "h", "namespace": "ns"},
            "subsets": [
                {"addresses": [None, {}, {"ip": "x"}, {"ip": "10.244.7.9", "hostname": "a b"}]}
            ],
        },
        {"subsets": [{"addresses": [{"ip": "10.244.7.8"}]}]},
    ]
    text = hosts_text(odd_services, odd_endpoints)
    # the last Endpoints of a name wins; the bad hostname is dropped, its address stays
    assert records(text) == ["10.244.7.9 h.ns.svc.cluster.local"]
    assert hosts_text([], []) == HEADER


def test_deterministic_order() -> None:
    services = [service(f"s{i}", clusterIP=f"10.96.7.{i}") for i in range(1, 30)]
    services.append(service("h", clusterIP="None"))
    subset = {"addresses": [address(f"10.244.7.{i}", f"h-{i}") for i in (9, 10, 100, 2)]}
    eps = [endpoints("h", "ns", subset)]
    expected = hosts_text(services, eps)
    for seed in range(5):
        shuffled = services[:]
        random.Random(seed).shuffle(shuffled)
        assert hosts_text(shuffled, eps) == expected
    lines = records(expected)
    assert len(lines) == len(set(lines))
    names = [line.split()[1] for line in lines]
    assert names == sorted(names)
    headless = [line for line in lines if line.endswith(" h.ns.svc.cluster.local")]
    # addresses sorted as addresses, not as text
    assert [line.split()[0] for line in headless] == [
        "10.244.7.2",
        "10.244.7.9",
        "10.244.7.10",
        "10.244.7.100",
    ]


# --- Objects --------------------------------------------------------------------------


def test_objects_follow_sync_and_events() -> None:
    objects = Objects()
    objects.sync([service("a"), service("b"), {"metadata": {}}])
    assert sorted(o["metadata"]["name"] for o in objects.values()) == ["a", "b"]
    objects.event("ADDED", service("c"))
    objects.event("MODIFIED", service("a", clusterIP="10.96.7.2"))
    objects.event("DELETED", service("b"))
    objects.event("DELETED", service("gone"))
    objects.event("ADDED", {"metadata": None})
    names = {o["metadata"]["name"]: o for o in objects.values()}
    assert sorted(names) == ["a", "c"]
    assert names["a"]["spec"] == {"clusterIP": "10.96.7.2"}
    objects.sync([service("z")])
    assert [o["metadata"]["name"] for o in objects.values()] == ["z"]


# --- upstreams and arguments ----------------------------------------------------------


def test_upstream_servers_from_resolv_conf() -> None:
    text = """\
# generated by something
search example.com
options ndots:2 edns0
nameserver 192.0.2.53   # the office
nameserver 10.243.7.1
nameserver 192.0.2.53
nameserver 127.0.0.53
nameserver ::1
nameserver fe80::1%eth0
nameserver 2001:db8::53
nameserver 0.0.0.0
nameserver not-an-address
nameserver
;nameserver 198.51.100.1
nameservers 198.51.100.2
"""
    assert upstream_servers(text, exclude=[NETWORK.host_address]) == [
        "192.0.2.53",
        "127.0.0.53",
        "::1",
        "fe80::1@eth0",
        "2001:db8::53",
    ]
    assert upstream_servers("") == []


def test_reverse_zones() -> None:
    assert reverse_zone("10.96.7.0/24") == "7.96.10.in-addr.arpa"
    assert reverse_zone("10.244.0.0/16") == "244.10.in-addr.arpa"
    assert reverse_zone("10.96.7.0/25") is None
    assert reverse_zone("fd00::/64") is None


def test_dnsmasq_args() -> None:
    args = dnsmasq_args(NETWORK, Path("/run/olmtool/dns/7/hosts"), ["192.0.2.53", "127.0.0.53"])
    assert args == [
        "--keep-in-foreground",
        "--conf-file=/dev/null",
        "--no-hosts",
        "--no-resolv",
        "--addn-hosts=/run/olmtool/dns/7/hosts",
        "--listen-address=10.243.7.1",
        "--bind-dynamic",
        "--port=53",
        "--pid-file=",
        "--log-facility=-",
        "--cache-size=0",
        "--domain-needed",
        "--local=/cluster.local/",
        "--local=/7.96.10.in-addr.arpa/",
        "--local=/7.244.10.in-addr.arpa/",
        "--server=192.0.2.53",
        "--server=127.0.0.53",
    ]
    assert not any(arg.startswith(("--user", "--log-queries")) for arg in args)


def test_dnsmasq_args_listen_port_and_domain() -> None:
    args = dnsmasq_args(
        NETWORK, Path("/h"), [], listen="127.0.0.1", port=15353, domain="example.test"
    )
    assert "--listen-address=127.0.0.1" in args
    assert "--port=15353" in args
    assert "--local=/example.test/" in args
    assert not any(arg.startswith("--server") for arg in args)


def test_write_hosts_is_world_readable_and_atomic(tmp_path: Path) -> None:
    path = tmp_path / "dns" / "hosts"
    old = os.umask(0o077)
    try:
        write_hosts(path, "one\n")
        write_hosts(path, "two\n")
    finally:
        os.umask(old)
    assert path.read_text() == "two\n"
    assert path.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in path.parent.iterdir()) == ["hosts"]


# --- the kube-dns Service and Endpoints ----------------------------------------------


class FakeKube:
    """Objects by path; ``fail`` holds exceptions the next calls raise."""

    def __init__(self) -> None:
        self.objects: dict[str, JSON] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail: list[Exception] = []
        self.version = 0

    def _maybe_fail(self) -> None:
        if self.fail:
            raise self.fail.pop(0)

    def get_or_none(self, path: str) -> JSON | None:
        self.calls.append(("GET", path))
        self._maybe_fail()
        found = self.objects.get(path)
        return copy.deepcopy(found) if found is not None else None

    def get(self, path: str) -> JSON:
        found = self.get_or_none(path)
        if found is None:
            raise ApiException(status=404, reason="Not Found")
        return found

    def _store(self, path: str, body: JSON) -> JSON:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[path] = stored
        return copy.deepcopy(stored)

    def create(self, collection: str, body: JSON) -> JSON:
        path = f"{collection}/{body['metadata']['name']}"
        self.calls.append(("POST", path))
        self._maybe_fail()
        if path in self.objects:
            raise ApiException(status=409, reason="Conflict")
        return self._store(path, body)

    def put(self, path: str, body: JSON) -> JSON:
        self.calls.append(("PUT", path))
        self._maybe_fail()
        if body["metadata"].get("resourceVersion") != self.objects[path]["metadata"].get(
            "resourceVersion"
        ):
            raise ApiException(status=409, reason="Conflict")
        return self._store(path, body)

    def delete(self, path: str) -> JSON:
        self.calls.append(("DELETE", path))
        self._maybe_fail()
        self.objects.pop(path)
        return {}


SVC = "/api/v1/namespaces/kube-system/services/kube-dns"
EPS = "/api/v1/namespaces/kube-system/endpoints/kube-dns"


def ensure(kube: FakeKube, **kwargs: Any) -> list[str]:
    return ensure_dns_service(kube, NETWORK, wait=lambda _s: None, **kwargs)  # type: ignore[arg-type]


def test_kube_dns_created_then_left_alone() -> None:
    kube = FakeKube()
    assert ensure(kube) == ["created Service", "created Endpoints"]
    svc, eps = kube.objects[SVC], kube.objects[EPS]
    assert svc["metadata"]["labels"] == {"k8s-app": "kube-dns", "kubernetes.io/name": "KubeDNS"}
    assert svc["spec"]["clusterIP"] == "10.96.7.10"
    assert "selector" not in svc["spec"]
    assert [
        (p["name"], p["port"], p["protocol"], p["targetPort"]) for p in svc["spec"]["ports"]
    ] == [
        ("dns", 53, "UDP", 53),
        ("dns-tcp", 53, "TCP", 53),
    ]
    assert eps["subsets"][0]["addresses"] == [{"ip": "10.243.7.1"}]
    assert [(p["name"], p["protocol"]) for p in eps["subsets"][0]["ports"]] == [
        ("dns", "UDP"),
        ("dns-tcp", "TCP"),
    ]
    kube.calls.clear()
    assert ensure(kube) == []
    assert kube.calls == [("GET", SVC), ("GET", EPS)]


def test_kube_dns_fixed_when_different() -> None:
    kube = FakeKube()
    ensure(kube)
    kube.objects[SVC]["spec"]["selector"] = {"k8s-app": "kube-dns"}
    kube.objects[SVC]["metadata"]["labels"]["extra"] = "kept"
    kube.objects[EPS]["subsets"] = [{"addresses": [{"ip": "10.243.9.1"}], "ports": []}]
    assert ensure(kube) == ["replaced Service", "replaced Endpoints"]
    assert "selector" not in kube.objects[SVC]["spec"]
    assert kube.objects[SVC]["metadata"]["labels"]["extra"] == "kept"
    assert kube.objects[EPS]["subsets"][0]["addresses"] == [{"ip": "10.243.7.1"}]
    assert ensure(kube) == []


def test_kube_dns_with_another_cluster_ip_is_recreated() -> None:
    kube = FakeKube()
    ensure(kube)
    kube.objects[SVC]["spec"]["clusterIP"] = "10.96.3.10"  # immutable: no PUT can fix it
    kube.calls.clear()
    assert ensure(kube) == ["re-created Service"]
    assert ("DELETE", SVC) in kube.calls
    assert kube.objects[SVC]["spec"]["clusterIP"] == "10.96.7.10"


def test_kube_dns_created_meanwhile() -> None:
    kube = FakeKube()
    ensure(kube)
    existing = kube.objects[SVC]
    original = kube.get_or_none
    answers = iter([None])  # the first look-up misses what is then there

    def get_or_none(path: str) -> JSON | None:
        if path == SVC:
            with contextlib.suppress(StopIteration):
                return next(answers)
        return original(path)

    kube.get_or_none = get_or_none  # type: ignore[method-assign]
    assert ensure(kube) == []
    assert kube.objects[SVC] is existing


def test_kube_dns_retries_while_the_apiserver_is_away() -> None:
    kube = FakeKube()
    kube.fail = [ApiException(status=503, reason="Service Unavailable"), ConnectionError("refused")]
    waits: list[float] = []
    done = ensure_dns_service(kube, NETWORK, wait=waits.append)  # type: ignore[arg-type]
    assert done == ["created Service", "created Endpoints"]
    assert waits == [0.5, 1.0]
    kube.fail = [ApiException(status=503, reason="Service Unavailable")] * 3
    with pytest.raises(ApiException):
        ensure(kube, attempts=2)


# --- DnsServer and its child ----------------------------------------------------------


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory nobody (dnsmasq's user) can read: pytest's tmp_path is 0700."""
    directory = Path(tempfile.mkdtemp(prefix="olmtool-dns-test-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def fake_dnsmasq(directory: Path) -> str:
    script = directory / "fake-dnsmasq"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(0o755)
    return str(script)


def wait_until(check: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_server_restarts_its_child_and_stops_it(tmp_path: Path) -> None:
    server = DnsServer(
        NETWORK, tmp_path / "hosts", binary=fake_dnsmasq(tmp_path), backoff=0.05, settle=0.0
    )
    server.start([])
    try:
        assert (tmp_path / "hosts").read_text() == HEADER
        assert server.process is not None
        first = server.process
        assert server.apply(HEADER + "10.96.7.20 web.ns.svc.cluster.local\n")
        assert not server.apply(HEADER + "10.96.7.20 web.ns.svc.cluster.local\n")  # unchanged
        first.wait(2)  # sleep dies of the SIGHUP dnsmasq would have handled
        server.supervise()  # killed by SIGHUP: at once
        assert server.process is not first and server.running
        second = server.process
        second.kill()
        second.wait()
        server.supervise()  # back-off
        wait_until(lambda: (server.supervise(), server.running)[1])
        assert server.process is not second
        assert server.set_upstreams(["192.0.2.53"])
        assert "--server=192.0.2.53" in server.argv()
        assert not server.set_upstreams(["192.0.2.53"])
    finally:
        last = server.process
        server.stop()
    assert last is not None and last.returncode is not None
    assert server.process is None
    server.supervise()  # stopped: no restart


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def test_child_dies_with_its_parent() -> None:
    script = (
        "import subprocess, sys, time\n"
        "from olmtool.cluster.kubeletnode.dns import die_with_parent\n"
        "child = subprocess.Popen(['sleep', '30'], preexec_fn=die_with_parent())\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(30)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _state(child) not in (None, "Z")
    finally:
        parent.kill()
        parent.wait()
    wait_until(lambda: _state(child) in (None, "Z"))


def dns_query(port: int, name: str) -> tuple[int, list[str]]:
    """(rcode, IPv4 addresses) of an A query to 127.0.0.1:port, built by hand."""
    ident = random.randrange(1 << 16)
    question = b"".join(bytes([len(part)]) + part.encode() for part in name.split(".")) + b"\0"
    packet = struct.pack("!6H", ident, 0x0100, 1, 0, 0, 0) + question + struct.pack("!2H", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.3)
        sock.sendto(packet, ("127.0.0.1", port))
        data = sock.recv(4096)
    answer_id, flags, _qd, answers, _ns, _ar = struct.unpack("!6H", data[:12])
    assert answer_id == ident
    offset = 12 + len(question) + 4
    found = []
    for _ in range(answers):
        offset = _skip_name(data, offset)
        rtype, _class, _ttl, length = struct.unpack("!2HIH", data[offset : offset + 10])
        offset += 10
        if rtype == 1:
            found.append(socket.inet_ntoa(data[offset : offset + length]))
        offset += length
    return flags & 0xF, found


def _skip_name(data: bytes, offset: int) -> int:
    while True:
        length = data[offset]
        if length & 0xC0 == 0xC0:  # a pointer ends the name
            return offset + 2
        if length == 0:
            return offset + 1
        offset += length + 1


def answers(port: int, name: str, expected: tuple[int, list[str]]) -> bool:
    try:
        return dns_query(port, name) == expected
    except OSError:  # not listening yet (refused, timed out)
        return False


@pytest.mark.skipif(not Path(dns.DNSMASQ).exists(), reason="dnsmasq is not installed")
@pytest.mark.skipif(os.geteuid() != 0, reason="dnsmasq drops privileges to nobody: root only")
def test_real_dnsmasq_serves_and_reloads(shared_dir: Path) -> None:
    port = free_port()
    hosts = shared_dir / "hosts"
    server = DnsServer(NETWORK, hosts, listen="127.0.0.1", port=port)
    write_hosts(hosts, hosts_text([service("web", clusterIP="10.96.7.20")], []))
    server.start([])  # no upstreams: nothing leaves the machine
    try:
        wait_until(lambda: answers(port, "web.ns.svc.cluster.local", (0, ["10.96.7.20"])))
        assert dns_query(port, "nope.ns.svc.cluster.local") == (3, [])  # NXDOMAIN, --local
        records = [
            service("web", clusterIP="10.96.7.21"),
            service("etcd", clusterIP="None"),
        ]
        eps = [endpoints("etcd", "ns", {"addresses": [address("10.244.7.10", "etcd-0")]})]
        assert server.apply(hosts_text(records, eps))  # rewrite + SIGHUP
        wait_until(lambda: answers(port, "etcd-0.etcd.ns.svc.cluster.local", (0, ["10.244.7.10"])))
        assert dns_query(port, "web.ns.svc.cluster.local") == (0, ["10.96.7.21"])
        assert server.running
    finally:
        process = server.process
        server.stop()
    assert process is not None and process.returncode in (0, -signal.SIGTERM)


# --- the loop, with fakes around it ---------------------------------------------------


def test_cluster_dns_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Watches feed the hosts file, the repairs run, resolv.conf changes restart dnsmasq
    and stop() ends it all; no apiserver, no host network."""
    repaired: list[ClusterNetwork] = []
    monkeypatch.setattr(dns.hostnet, "ensure_node_network", repaired.append)

    def list_service_for_all_namespaces(**_: Any) -> None: ...
    def list_endpoints_for_all_namespaces(**_: Any) -> None: ...

    listed = {
        "list_service_for_all_namespaces": [service("etcd", clusterIP="None")],
        "list_endpoints_for_all_namespaces": [],
    }
    later = endpoints("etcd", "ns", {"addresses": [address("10.244.7.10", "etcd-0")]})

    def watch_forever(list_func: Any, on_event: Any, on_sync: Any, stop: Any, **_: Any) -> None:
        on_sync(listed[list_func.__name__])
        if list_func.__name__ == "list_endpoints_for_all_namespaces":
            on_event("ADDED", later)
        stop.wait()

    monkeypatch.setattr(dns, "watch_forever", watch_forever)
    kube = FakeKube()
    kube.core = SimpleNamespace(  # type: ignore[attr-defined]
        list_service_for_all_namespaces=list_service_for_all_namespaces,
        list_endpoints_for_all_namespaces=list_endpoints_for_all_namespaces,
    )
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\n")
    hosts = tmp_path / "hosts"
    server = DnsServer(NETWORK, hosts, binary=fake_dnsmasq(tmp_path), settle=0.0)
    loop = dns.ClusterDns(kube, NETWORK, server, upstream_resolv=resolv, interval=0.05, poll=0.02)  # type: ignore[arg-type]
    thread = threading.Thread(target=loop.run)
    thread.start()
    try:
        wait_until(lambda: hosts.exists() and "etcd-0.etcd" in hosts.read_text())
        assert records(hosts.read_text()) == [
            "10.244.7.10 etcd-0.etcd.ns.svc.cluster.local",
            "10.244.7.10 etcd.ns.svc.cluster.local",
        ]
        wait_until(lambda: len(repaired) >= 2)
        assert SVC in kube.objects and EPS in kube.objects
        assert server.upstreams == ["192.0.2.53"]
        resolv.write_text("nameserver 198.51.100.53\n")
        wait_until(lambda: server.upstreams == ["198.51.100.53"])
        child = server.process
    finally:
        loop.stop()
        thread.join(5)
    assert not thread.is_alive()
    assert child is not None and child.returncode is not None
    assert loop.stop_event.is_set()
