"""The Service proxy: routes from Services and Endpoints (pure), and the forwarder on
loopback addresses (no root needed)."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from olmtool.cluster import ClusterNetwork
from olmtool.cluster.node.network import ServiceEntry
from olmtool.cluster.node.services import (
    Forwarder,
    apiserver_address,
    host_port_routes,
    ready_backends,
    service_entries,
    service_routes,
)
from olmtool.ports import free_port

NETWORK = ClusterNetwork(3)
APISERVER = ("127.0.0.1", 6443)


def service(namespace: str, name: str, ip: str, *ports: dict) -> dict:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterIP": ip, "ports": list(ports)},
    }


def endpoints(*subsets: dict) -> dict:
    return {"subsets": list(subsets)}


def test_ready_backends_match_the_port_name_and_skip_unready() -> None:
    found = endpoints(
        {
            "addresses": [{"ip": "10.244.3.5"}, {"ip": "10.244.3.6"}],
            "notReadyAddresses": [{"ip": "10.244.3.7"}],
            "ports": [{"name": "http", "port": 8080}, {"name": "admin", "port": 9090}],
        }
    )
    assert ready_backends(found, "http") == (("10.244.3.5", 8080), ("10.244.3.6", 8080))
    assert ready_backends(found, "metrics") == ()
    assert ready_backends(None, "") == ()


def test_routes_from_services_and_endpoints() -> None:
    services = [
        service("default", "kubernetes", "10.96.3.1", {"name": "https", "port": 443}),
        service(
            "shop",
            "web",
            "10.96.3.20",
            {"name": "http", "port": 80},
            {"name": "dns", "port": 53, "protocol": "UDP"},  # not supported: no route
        ),
        service("shop", "idle", "10.96.3.21", {"port": 80}),  # no ready endpoint
        service("shop", "peers", "None", {"port": 80}),  # headless
        service("shop", "old", "10.0.0.7", {"port": 80}),  # outside the Service network
    ]
    found = {
        ("shop", "web"): endpoints(
            {"addresses": [{"ip": "10.244.3.5"}], "ports": [{"name": "http", "port": 8080}]}
        ),
        ("shop", "old"): endpoints(
            {"addresses": [{"ip": "10.244.3.5"}], "ports": [{"port": 8080}]}
        ),
    }
    assert service_routes(services, found, NETWORK, APISERVER) == {
        ("10.96.3.1", 443): (APISERVER,),  # the apiserver, from the kubeconfig
        ("10.96.3.20", 80): (("10.244.3.5", 8080),),
    }
    # before the Services are known, the apiserver is served all the same
    assert service_routes([], {}, NETWORK, APISERVER) == {("10.96.3.1", 443): (APISERVER,)}
    assert service_entries(services) == (
        ServiceEntry("default", "kubernetes", "10.96.3.1"),
        ServiceEntry("shop", "idle", "10.96.3.21"),
        ServiceEntry("shop", "old", "10.0.0.7"),
        ServiceEntry("shop", "web", "10.96.3.20"),
    )


def test_host_port_routes() -> None:
    pod = {
        "spec": {
            "containers": [
                {
                    "ports": [
                        {"containerPort": 8080, "hostPort": 18080},
                        {"containerPort": 9090, "hostPort": 19090, "hostIP": "127.0.0.1"},
                        {"containerPort": 53, "hostPort": 5353, "protocol": "UDP"},
                        {"containerPort": 7070},
                    ]
                }
            ]
        }
    }
    assert host_port_routes(pod, "10.244.3.9") == {
        ("0.0.0.0", 18080): (("10.244.3.9", 8080),),
        ("127.0.0.1", 19090): (("10.244.3.9", 9090),),
    }
    assert apiserver_address("https://127.0.0.1:40001") == ("127.0.0.1", 40001)


# -- the forwarder on loopback -------------------------------------------------------------


class Named(socketserver.ThreadingTCPServer):
    """Answers every connection with its name, then echoes what it reads until EOF."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.server_address[1])


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(f"{self.server.name}\n".encode())  # type: ignore[attr-defined]
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def backends() -> Iterator[list[Named]]:
    servers = [Named("one"), Named("two")]
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def forwarder() -> Iterator[tuple[Forwarder, list[tuple[str, tuple[str, int], str]]]]:
    errors: list[tuple[str, tuple[str, int], str]] = []
    proxy = Forwarder(lambda group, address, error: errors.append((group, address, str(error))))
    proxy.start()
    yield proxy, errors
    proxy.stop()


def hello(address: tuple[str, int], payload: bytes = b"") -> bytes:
    """Connect, send ``payload``, half-close, and read everything."""
    with socket.create_connection(address, timeout=5) as client:
        client.sendall(payload)
        client.shutdown(socket.SHUT_WR)
        chunks = []
        while data := client.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def test_forwarder_round_robins_and_skips_a_dead_backend(forwarder, backends) -> None:
    proxy, errors = forwarder
    listen = ("127.0.0.1", free_port())
    proxy.set_routes("services", {listen: [b.address for b in backends]}).result(5)
    answers = [hello(listen).decode().strip() for _ in range(4)]
    assert answers == ["one", "two", "one", "two"]
    assert hello(listen, b"x" * 1_000_000).endswith(b"x" * 1_000_000)  # half close passed on
    dead = ("127.0.0.1", free_port())
    proxy.set_routes("services", {listen: [dead, backends[1].address]}).result(5)
    assert {hello(listen).decode().strip() for _ in range(3)} == {"two"}
    assert not errors


def test_forwarder_stops_listening_when_a_group_goes(forwarder, backends) -> None:
    proxy, _ = forwarder
    listen = ("127.0.0.1", free_port())
    proxy.set_routes("pod-uid", {listen: [backends[0].address]}).result(5)
    assert hello(listen).startswith(b"one")
    proxy.set_routes("pod-uid", {}).result(5)
    assert listen not in proxy.listening()
    with pytest.raises(ConnectionRefusedError):
        hello(listen)


def test_a_port_that_cannot_be_bound_is_reported(forwarder, backends) -> None:
    proxy, errors = forwarder
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = ("127.0.0.1", taken.getsockname()[1])
        proxy.set_routes("pod-a", {address: [backends[0].address]}).result(5)
        assert errors and errors[0][:2] == ("pod-a", address)
        # the same address for two groups: the first keeps it, the second hears why
        free = ("127.0.0.1", free_port())
        proxy.set_routes("pod-b", {free: [backends[0].address]}).result(5)
        proxy.set_routes("pod-c", {free: [backends[1].address]}).result(5)
        assert ("pod-c", free) in [e[:2] for e in errors]
        assert hello(free).startswith(b"one")
