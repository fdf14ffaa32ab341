"""The kubelet API in-process: TLS with client certificates, logs, exec over SPDY, errors
(against a fake node; tests/e2e/test_kubelet_api.py goes through a real apiserver)."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from olmtool.cluster import pki
from olmtool.cluster.node import logs, spdy
from olmtool.cluster.node.containers import Container
from olmtool.cluster.node.kubeletapi import KubeletServer
from olmtool.cluster.node.process import LaunchSpec
from olmtool.cluster.node.runtime import DEFAULT_PATH, ResolvedImage

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a host sh")

SH = ResolvedImage("busybox", "host:///bin/sh", env={"PATH": DEFAULT_PATH})


class FakeNode:
    def __init__(self) -> None:
        self.workers: list[Any] = []

    def pod_workers(self) -> list[Any]:
        return list(self.workers)


def make_worker(state: Path, name: str, containers: list[Container]) -> Any:
    directory = logs.pod_dir(state, "ns", name, f"uid-{name}")
    logs.write_pod_meta(directory, "ns", name, f"uid-{name}", [c.name for c in containers])
    return SimpleNamespace(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        dir=directory,
        done=threading.Event(),
        all_containers=containers,
        current_pod=lambda: {"metadata": {"name": name, "namespace": "ns"}},
    )


def running_container(name: str) -> Container:
    container = Container.from_spec({"name": name, "image": "busybox"}, False, 1.0, None)
    proc = subprocess.Popen(["sleep", "60"])
    launch = LaunchSpec(["sleep", "60"], {"PATH": DEFAULT_PATH, "WHO": "container"}, "/tmp")
    container.began(proc, SH, launch, "2024-01-01T00:00:00Z", time.monotonic())
    return container


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pki.KeyPair]:
    directory = tmp_path_factory.mktemp("pki")
    ca = pki.create_ca(directory)
    return {
        "ca": ca,
        "serving": pki.create_serving_cert(directory, ca, "kubelet", hosts=(), ips=("127.0.0.1",)),
        "client": pki.create_client_cert(directory, ca, "apiserver", organization="system:masters"),
        "stranger": pki.create_client_cert(directory, pki.create_ca(directory, "other-ca"), "x"),
    }


@pytest.fixture
def node(tmp_path: Path, certs: dict[str, pki.KeyPair]) -> Iterator[tuple[FakeNode, KubeletServer]]:
    fake = FakeNode()
    serving = certs["serving"]
    server = KubeletServer(fake, serving.cert, serving.key, certs["ca"].cert.read_bytes())
    server.start()
    yield fake, server
    server.stop()
    for worker in fake.workers:
        for container in worker.all_containers:
            if container.process is not None:
                container.process.kill()
                container.process.wait()


def client_context(certs: dict[str, pki.KeyPair], who: str = "client") -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs["ca"].cert))
    context.load_cert_chain(str(certs[who].cert), str(certs[who].key))
    return context


def get(server: KubeletServer, certs: dict[str, pki.KeyPair], path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPSConnection(
        "127.0.0.1", server.port, context=client_context(certs), timeout=10
    )
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_only_clients_of_the_cluster_ca_get_in(node: Any, certs: dict[str, pki.KeyPair]) -> None:
    _, server = node
    assert get(server, certs, "/healthz") == (200, b"ok")
    assert get(server, certs, "/nowhere")[0] == 404
    for context in (
        ssl.create_default_context(cafile=str(certs["ca"].cert)),  # no certificate
        client_context(certs, "stranger"),  # signed by another CA
    ):
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context)
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            connection.request("GET", "/healthz")
            connection.getresponse().read()
        connection.close()
    assert get(server, certs, "/healthz") == (200, b"ok")  # still serving


def pod_with_logs(
    fake: Any, tmp_path: Path, pod: str, instances: list[bytes]
) -> tuple[Container, Path]:
    """A Pod on the fake node whose running container ``main`` wrote ``instances`` (one
    log per restart); the container and its current log file."""
    container = running_container("main")
    worker = make_worker(tmp_path, pod, [container])
    fake.workers.append(worker)
    for restart, text in enumerate(instances):
        path = logs.log_path(worker.dir, "main", restart)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
    return container, path


def test_logs_current_previous_tail_and_errors(
    node: Any, certs: dict[str, pki.KeyPair], tmp_path: Path
) -> None:
    fake, server = node
    pod_with_logs(fake, tmp_path, "web", [b"first\n", b"a\nb\nc\n"])

    assert get(server, certs, "/containerLogs/ns/web/main") == (200, b"a\nb\nc\n")
    assert get(server, certs, "/containerLogs/ns/web/main?previous=true") == (200, b"first\n")
    assert get(server, certs, "/containerLogs/ns/web/main?tailLines=1") == (200, b"c\n")
    assert get(server, certs, "/containerLogs/ns/web/main?limitBytes=3") == (200, b"a\nb")
    assert get(server, certs, "/containerLogs/ns/web/main?tailLines=-2") == (
        400,
        b"tailLines: must be greater than or equal to 0\n",
    )
    assert get(server, certs, "/containerLogs/ns/web/other") == (
        404,
        b'container "other" not found in pod "web"\n',
    )
    assert get(server, certs, "/containerLogs/ns/nope/main") == (
        404,
        b'pod "nope" does not exist\n',
    )

    waiting = Container.from_spec({"name": "late", "image": "busybox"}, False, 1.0, None)
    fake.workers.append(make_worker(tmp_path, "new", [waiting]))
    assert get(server, certs, "/containerLogs/ns/new/late") == (
        400,
        b'container "late" in pod "new" is waiting to start: ContainerCreating\n',
    )
    assert get(server, certs, "/containerLogs/ns/new/late?previous=1") == (
        400,
        b'previous terminated container "late" in pod "new" not found\n',
    )
    status, body = get(server, certs, "/pods")
    assert status == 200 and len(json.loads(body)["items"]) == 2


def test_follow_streams_until_the_instance_exits(
    node: Any, certs: dict[str, pki.KeyPair], tmp_path: Path
) -> None:
    fake, server = node
    container, log_file = pod_with_logs(fake, tmp_path, "tail", [b"before\n"])
    answer: dict[str, Any] = {}

    def follow() -> None:
        answer["result"] = get(server, certs, "/containerLogs/ns/tail/main?follow=true")

    reader = threading.Thread(target=follow)
    reader.start()
    time.sleep(0.5)
    with log_file.open("ab") as out:
        out.write(b"during\n")
    time.sleep(0.5)
    assert reader.is_alive()  # still following
    with log_file.open("ab") as out:
        out.write(b"last words\n")
    assert container.process is not None
    container.process.kill()
    container.process.wait()
    container.process = None  # what the worker does once the instance exited
    reader.join(10)
    assert answer["result"] == (200, b"before\nduring\nlast words\n")


# -- exec over SPDY, as client-go does it ----------------------------------------------------


class SpdyClient:
    """A minimal blocking SPDY/3.1 exec client (what kubectl 1.20 does on the wire)."""

    def __init__(self, sock: ssl.SSLSocket, initial: bytes) -> None:
        self.sock = sock
        self.codec = spdy.FrameCodec()
        self.buffer = bytearray(initial)
        self.next_id = 1

    def _read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    def frame(self) -> spdy.Frame:
        head = self._read(8)
        length = struct.unpack_from(">I", head, 4)[0] & 0xFFFFFF
        return self.codec.decode(head, self._read(length))

    def send(self, frame: spdy.Frame) -> None:
        self.sock.sendall(self.codec.encode(frame))

    def open(self, kind: str) -> int:
        stream_id, self.next_id = self.next_id, self.next_id + 2
        self.send(spdy.SynStream(stream_id, {"streamtype": [kind]}))
        assert self.frame() == spdy.SynReply(stream_id, {})
        return stream_id


def upgrade(server: KubeletServer, certs: dict[str, pki.KeyPair], path: str) -> SpdyClient:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock = client_context(certs).wrap_socket(raw, server_hostname="127.0.0.1")
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
        "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
        "X-Stream-Protocol-Version: channel.k8s.io\r\nContent-Length: 0\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    response, _, rest = head.partition(b"\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 101"), response
    assert b"X-Stream-Protocol-Version: v4.channel.k8s.io" in response
    return SpdyClient(sock, rest)


def test_exec_over_spdy(node: Any, certs: dict[str, pki.KeyPair], tmp_path: Path) -> None:
    fake, server = node
    fake.workers.append(make_worker(tmp_path, "box", [running_container("main")]))
    command = "command=sh&command=-c&command=cat%3B+echo+%24WHO+%3E%262%3B+pwd%3B+exit+3"
    started = time.monotonic()
    client = upgrade(server, certs, f"/exec/ns/box/main?{command}&input=1&output=1&error=1")
    ids = {kind: client.open(kind) for kind in ("error", "stdin", "stdout", "stderr")}
    client.send(spdy.Data(ids["stdin"], b"typed\n", fin=True))
    received: dict[int, bytes] = {i: b"" for i in ids.values()}
    finished: set[int] = set()
    while not {ids["stdout"], ids["stderr"], ids["error"]} <= finished:
        frame = client.frame()
        if isinstance(frame, spdy.Data):
            received[frame.stream_id] += frame.data
            if frame.fin:
                finished.add(frame.stream_id)
    elapsed = time.monotonic() - started
    assert received[ids["stdout"]] == b"typed\n/tmp\n"
    assert received[ids["stderr"]] == b"container\n"
    status = json.loads(received[ids["error"]])
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    assert isinstance(client.frame(), spdy.GoAway)
    client.sock.close()
    assert elapsed < 5


def test_exec_refusals(node: Any, certs: dict[str, pki.KeyPair], tmp_path: Path) -> None:
    fake, server = node
    stopped = Container.from_spec({"name": "main", "image": "busybox"}, False, 1.0, None)
    fake.workers.append(make_worker(tmp_path, "idle", [stopped]))
    fake.workers.append(make_worker(tmp_path, "up", [running_container("main")]))
    assert get(server, certs, "/exec/ns/idle/main?command=true&output=1") == (
        404,
        b'container not found ("main")\n',
    )
    assert get(server, certs, "/exec/ns/up/main?command=true&output=1") == (
        400,
        b"Upgrade request required\n",
    )
    assert get(server, certs, "/exec/ns/up/main?output=1")[0] == 400

    # a command that cannot run is reported on the error stream, as a runtime does
    client = upgrade(server, certs, "/exec/ns/up/main?command=no-such-thing&output=1")
    ids = {kind: client.open(kind) for kind in ("error", "stdout")}
    status = b""
    while True:
        frame = client.frame()
        if isinstance(frame, spdy.Data) and frame.stream_id == ids["error"]:
            status += frame.data
            if frame.fin:
                break
    client.sock.close()
    failure = json.loads(status)
    assert failure["reason"] == "InternalError"
    assert failure["message"] == (
        "Internal error occurred: error executing command in container: "
        'executable "no-such-thing" not found in busybox or on the host'
    )


def test_stop_ends_exec_sessions_and_kills_their_commands(
    node: Any, certs: dict[str, pki.KeyPair], tmp_path: Path
) -> None:
    fake, server = node
    fake.workers.append(make_worker(tmp_path, "long", [running_container("main")]))
    command = "command=sh&command=-c&command=echo+%24%24%3B+exec+sleep+30"
    client = upgrade(server, certs, f"/exec/ns/long/main?{command}&output=1")
    ids = {kind: client.open(kind) for kind in ("error", "stdout")}
    frame = client.frame()
    assert isinstance(frame, spdy.Data) and frame.stream_id == ids["stdout"]
    pid = int(frame.data)
    assert Path(f"/proc/{pid}").exists()

    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped
    with pytest.raises((ConnectionError, ssl.SSLError, OSError)):
        while True:
            client.frame()
    client.sock.close()
