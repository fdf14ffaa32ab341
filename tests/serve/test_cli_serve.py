"""``olmtool catalog serve``: as a real process (ready lines, requests, SIGTERM and SIGINT,
a user error on stderr), the ``catalog_serve``/``catalog_index`` actions in-process, and the
rest of the command's wiring in-process."""

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

from olmtool.actions import catalog_index, catalog_serve
from olmtool.errors import InputError, OlmtoolError
from olmtool.ports import free_port
from olmtool.proto import registry_pb2 as pb
from olmtool.proto import registry_pb2_grpc as pb_grpc
from tests.catalog.test_cli_validate import cli
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


LOAD_ERROR = (
    "bad/catalog.json:2: invalid JSON: Expecting ',' delimiter (column 13) [parse]"
    " (and 3 more errors)"
)


def _write_bad_catalog(root: Path) -> None:
    (root / "bad").mkdir()
    (root / "bad" / "catalog.json").write_text('{"schema": "olm.package"}\n{"schema": 1')


def test_catalog_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    _write_bad_catalog(tmp_path)
    result = olmtool("catalog", "serve", "bad", "--port", "0", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"error: {LOAD_ERROR}"]


# --- the actions -----------------------------------------------------------------------------


def test_a_catalog_that_does_not_load_is_refused_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write_bad_catalog(tmp_path)
    ready: list[object] = []
    with pytest.raises(InputError) as error:
        catalog_serve(
            "bad", grpc_port=0, http_port=None, ready=ready.append, stop=threading.Event()
        )
    assert str(error.value) == LOAD_ERROR
    assert ready == []


def test_index_is_built_once_then_reused_from_the_cache(tmp_path: Path) -> None:
    write_catalog(tmp_path / "catalog")
    cache = tmp_path / "cache"
    built = catalog_index(tmp_path / "catalog", cache_dir=cache)
    try:
        assert not built.cached
        assert (len(built.packages), built.bundle_count) == (2, 5)
    finally:
        built.close()
    assert (cache / "digest").is_file()
    again = catalog_index(tmp_path / "catalog", cache_dir=cache)
    try:
        assert again.cached
        assert again.digest == built.digest
    finally:
        again.close()


def test_a_port_in_use_is_a_one_line_error(catalog: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OlmtoolError, match=f"cannot serve gRPC on 127.0.0.1:{port}: "):
            catalog_serve(catalog, grpc_port=port, http_port=None, stop=threading.Event())
        with pytest.raises(OlmtoolError, match=f"cannot serve HTTP on 127.0.0.1:{port}: "):
            catalog_serve(catalog, grpc_port=0, http_port=port, stop=threading.Event())


def test_a_port_in_use_names_the_flag_that_moves_it(catalog: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        http = cli("catalog", "serve", str(catalog), "--grpc-port", "0", "--http-port", port)
        grpc = cli("catalog", "serve", str(catalog), "--port", port, "--http-port", "0")
    assert http.returncode == 1 and grpc.returncode == 1
    assert http.error == (
        f"--http-port {port}: cannot serve HTTP on 127.0.0.1:{port}: Address already in use; "
        "choose another port"
    )
    assert (grpc.error or "").startswith(f"--grpc-port {port}: cannot serve gRPC on 127.0.0.1:")
    assert (grpc.error or "").endswith("; choose another port (0: any free one)")


# --- the command: wiring only, in-process ----------------------------------------------------


def test_cache_only_builds_and_exits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_catalog(tmp_path / "catalog")
    first = cli("catalog", "serve", "catalog", "--cache-dir", "cache", "--cache-only")
    assert first.returncode == 0, first.exception
    assert "indexed 2 package(s), 5 bundle(s) in " in first.stderr
    assert "cache in cache is up to date" in first.stdout
    assert (tmp_path / "cache" / "digest").is_file()
    again = cli("catalog", "serve", "catalog", "--cache-dir", "cache", "--cache-only")
    assert again.returncode == 0
    assert "from the cache" in again.stderr
    alone = cli("catalog", "serve", "catalog", "--cache-only")
    assert alone.returncode == 2 and alone.error == "--cache-only needs --cache-dir"


def test_help_has_an_example() -> None:
    result = cli("catalog", "serve", "--help")
    assert result.returncode == 0
    assert "olmtool catalog serve catalog/" in result.stdout
