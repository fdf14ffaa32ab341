"""``grpc_health_probe`` (olmtool.serve.healthprobe): upstream's flags, lines and exit codes
against in-process gRPC servers, and against ``catalog serve``'s own."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from olmtool.ports import free_port
from olmtool.serve import RunningServer, start_server
from olmtool.serve.healthprobe import (
    CONNECTION_FAILURE,
    INVALID_ARGUMENTS,
    OK,
    RPC_FAILURE,
    UNHEALTHY,
    Options,
    format_duration,
    main,
    parse_args,
    parse_duration,
    target,
)


class Server:
    def __init__(self, with_health: bool = True) -> None:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.health = health.HealthServicer()
        if with_health:
            health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def set(self, status: int, service: str = "") -> None:
        self.health.set(service, status)


@pytest.fixture
def server() -> Iterator[Server]:  # a bare health server (the conftest's is catalog serve's)
    running = Server()
    yield running
    running.server.stop(None)


@pytest.fixture(scope="module")
def grpc_server(catalog: Path) -> Iterator[RunningServer]:
    with start_server(catalog, grpc_port=0, http_port=0) as running:
        yield running


def probe(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_serving_is_0(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    server.set(health_pb2.HealthCheckResponse.SERVING)
    assert probe(f"-addr=127.0.0.1:{server.port}", capsys=capsys) == (OK, "status: SERVING\n")
    # Go's flag syntax: --name value, and the ":port" form OLM's pods use
    assert probe("--addr", f":{server.port}", "-rpc-timeout", "2s", capsys=capsys)[0] == OK


def test_not_serving_is_4(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    server.set(health_pb2.HealthCheckResponse.NOT_SERVING)
    code, err = probe(f"-addr=127.0.0.1:{server.port}", capsys=capsys)
    assert (code, err) == (UNHEALTHY, 'service unhealthy (responded with "NOT_SERVING")\n')


def test_a_service_by_name(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    server.set(health_pb2.HealthCheckResponse.SERVING, "api.Registry")
    addr = f"-addr=127.0.0.1:{server.port}"
    assert probe(addr, "-service=api.Registry", capsys=capsys)[0] == OK
    code, err = probe(addr, "-service", "unknown", capsys=capsys)
    assert code == RPC_FAILURE
    assert err.startswith("error: health rpc failed: rpc error: code = NotFound desc =")


def test_nothing_listening_is_2(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    code, err = probe(f"-addr=127.0.0.1:{port}", "-connect-timeout=200ms", capsys=capsys)
    assert code == CONNECTION_FAILURE
    assert err == f'timeout: failed to connect service "127.0.0.1:{port}" within 200ms\n'


def test_a_server_without_health_is_3(capsys: pytest.CaptureFixture[str]) -> None:
    bare = Server(with_health=False)
    try:
        code, err = probe(f"-addr=127.0.0.1:{bare.port}", capsys=capsys)
    finally:
        bare.server.stop(None)
    assert code == RPC_FAILURE
    assert "does not implement the grpc health protocol (grpc.health.v1.Health)" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "error: -addr not specified"),
        (("-addr=:1", "-nope"), "flag provided but not defined: -nope"),
        (("-addr",), "flag needs an argument: -addr"),
        (("-addr=:1", "-connect-timeout=1"), 'invalid value "1" for flag -connect-timeout'),
        (("-addr=:1", "-rpc-timeout=0s"), "-rpc-timeout must be greater than zero (specified: 0s)"),
        (("-addr=:1", "-connect-timeout=-1s"), "must be greater than zero (specified: -1s)"),
        (("-addr=:1", "-v=maybe"), 'invalid boolean value "maybe" for -v'),
        (("-addr=:1", "-tls"), "flag provided but not defined: -tls"),
        (("-h",), "Usage of grpc_health_probe"),
    ],
)
def test_bad_flags_are_1(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = probe(*args, capsys=capsys)
    assert code == INVALID_ARGUMENTS
    assert message in err


def test_flags_parse_as_go_does() -> None:
    options = parse_args(
        ["-addr", "h:1", "--service=s", "-v", "-connect-timeout=1m30s", "-rpc-timeout", ".5s"]
    )
    assert options == Options("h:1", "s", "grpc_health_probe", 90.0, 0.5, True)
    # parsing stops at the first argument that is not a flag, as Go's flag package does
    assert parse_args(["-addr=:9", "rest", "-nope"]).addr == ":9"
    assert parse_args(["-addr=:9", "-v=false"]).verbose is False
    assert target(":50051") == "localhost:50051" and target("h:1") == "h:1"


@pytest.mark.parametrize(
    ("text", "seconds", "shown"),
    [("1s", 1.0, "1s"), ("250ms", 0.25, "250ms"), ("1m30s", 90.0, "1m30s"), ("1h", 3600.0, "1h0m0s"),
     ("1.5s", 1.5, "1.5s"), ("10us", 1e-5, "10µs"), ("0", 0.0, "0s")],
)  # fmt: skip
def test_durations_read_and_print_as_go(text: str, seconds: float, shown: str) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert format_duration(seconds) == shown


def test_catalog_serve_answers_serving(
    grpc_server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    addr = f"-addr={grpc_server.grpc_address}"
    assert probe(addr, capsys=capsys) == (OK, "status: SERVING\n")
    assert probe(addr, "-service=api.Registry", capsys=capsys)[0] == OK


def test_the_command_exits_with_the_code(server: Server) -> None:
    server.set(health_pb2.HealthCheckResponse.NOT_SERVING)
    command = [sys.executable, "-m", "olmtool.serve.healthprobe"]
    done = subprocess.run(
        [*command, f"-addr=127.0.0.1:{server.port}"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == UNHEALTHY, done.stderr
    assert subprocess.run([*command, "-x"], capture_output=True).returncode == INVALID_ARGUMENTS
