"""``olmtool catalog serve`` as a real process: ready lines, requests, SIGTERM, errors."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from olmtool.cluster.controlplane import free_port
from olmtool.errors import OlmtoolError
from olmtool.serve import start_server
from olmtool.serve.proto import registry_pb2 as pb
from olmtool.serve.proto import registry_pb2_grpc as pb_grpc
from tests.test_cli import olmtool

from .conftest import write_catalog

GRPC_READY = "serving api.Registry on "
HTTP_READY = "serving catalogd on "


def _start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "olmtool", "catalog", "serve", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ready_lines(process: subprocess.Popen[str], count: int, timeout: float = 30) -> list[str]:
    """The first ``count`` stdout lines, or a failure with stderr if the server dies."""
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        while len(lines) < count:
            line = process.stdout.readline()
            if not line:
                return
            lines.append(line.strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if len(lines) < count:
        process.kill()
        pytest.fail(f"server not ready: {lines} / {process.communicate()[1]}")
    return lines


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    root = write_catalog(tmp_path / "operatorhub")
    process = _start(str(root), "--port", "0", "--http-port", str(free_port()), cwd=tmp_path)
    try:
        grpc_line, http_line = _ready_lines(process, 2)
        assert grpc_line.startswith(GRPC_READY) and http_line.startswith(HTTP_READY)
        yield process, grpc_line.removeprefix(GRPC_READY), http_line.removeprefix(HTTP_READY)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_serves_until_sigterm_then_exits_zero(
    served: tuple[subprocess.Popen[str], str, str],
) -> None:
    process, address, all_url = served
    assert address.startswith("127.0.0.1:")
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        package = pb_grpc.RegistryStub(channel).GetPackage(pb.GetPackageRequest(name="etcd"))
        assert package.defaultChannelName == "stable"
    response = httpx.get(all_url)
    assert response.status_code == 200
    assert json.loads(response.text.splitlines()[0])["name"] == "etcd"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "indexed 2 package(s), 5 bundle(s)" in err
    assert "rpc api.Registry/GetPackage OK" in err
    assert "http GET /catalogs/operatorhub/api/v1/all 200" in err
    assert "Traceback" not in err


def test_sigint_is_a_clean_exit_too(served: tuple[subprocess.Popen[str], str, str]) -> None:
    process, _, _ = served
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err


def test_catalog_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "catalog.json").write_text('{"schema": "olm.package"}\n{"schema": 1')
    result = olmtool("catalog", "serve", "bad", "--port", "0", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: bad/catalog.json:2: invalid JSON: Expecting ',' delimiter (column 13) [parse]"
        " (and 3 more errors)"
    ]


def test_cache_only_builds_and_exits(tmp_path: Path) -> None:
    write_catalog(tmp_path / "catalog")
    result = olmtool(
        "catalog", "serve", "catalog", "--cache-dir", "cache", "--cache-only", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "cache" / "digest").is_file()
    again = olmtool(
        "catalog", "serve", "catalog", "--cache-dir", "cache", "--cache-only", cwd=tmp_path
    )
    assert "from the cache" in again.stderr
    alone = olmtool("catalog", "serve", "catalog", "--cache-only", cwd=tmp_path)
    assert alone.returncode == 1 and "--cache-only needs --cache-dir" in alone.stderr


def test_help_has_an_example(tmp_path: Path) -> None:
    result = olmtool("catalog", "serve", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "olmtool catalog serve catalog/" in result.stdout


def test_a_port_in_use_is_a_one_line_error(catalog: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OlmtoolError, match=f"cannot serve gRPC on 127.0.0.1:{port}: "):
            start_server(catalog, grpc_port=port, http_port=None)
        with pytest.raises(OlmtoolError, match=f"cannot serve HTTP on 127.0.0.1:{port}: "):
            start_server(catalog, grpc_port=0, http_port=port)
