"""api.Registry against hostile or impatient clients (issue 15): cancelled streams, huge
request strings, requests over the size limit; and the bounds themselves."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from olmtool.proto import registry_pb2 as pb
from olmtool.proto import registry_pb2_grpc as pb_grpc
from olmtool.serve import RunningServer, ServerLimits, start_server
from olmtool.serve.limits import bounded, busy_message, echo

from .conftest import write_big_catalog, write_catalog

MB = 1_000_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = write_big_catalog(write_catalog(tmp_path_factory.mktemp("catalogs") / "operatorhub"))
    lines: list[str] = []
    with start_server(root, grpc_port=0, http_port=None, log=lines.append) as running:
        running.log_lines = lines  # type: ignore[attr-defined]
        yield running


@pytest.fixture(scope="module")
def stub(served: RunningServer) -> Iterator[pb_grpc.RegistryStub]:
    # No BDP probing: the flow-control window stays small, so that the server is still
    # streaming (blocked on the window) when the client cancels.
    with grpc.insecure_channel(served.grpc_address, options=[("grpc.http2.bdp_probe", 0)]) as ch:
        yield pb_grpc.RegistryStub(ch)


def logged(served: RunningServer, prefix: str, timeout: float = 5.0) -> str:
    lines: list[str] = served.log_lines  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[-1]
        time.sleep(0.02)
    raise AssertionError(f"no log line {prefix!r} in {lines}")


def test_a_cancelled_stream_is_logged_as_cancelled(
    served: RunningServer, stub: pb_grpc.RegistryStub
) -> None:
    stream = stub.ListBundles(pb.ListBundlesRequest())
    assert next(stream).csvName  # the server is streaming 2.6 MB of bundles
    stream.cancel()
    with pytest.raises(grpc.RpcError) as caught:
        list(stream)
    assert caught.value.code() == grpc.StatusCode.CANCELLED
    line = logged(served, "rpc api.Registry/ListBundles ")
    assert " CANCELLED (" in line, line
    sent = int(line.split("(")[1].split(" ")[0])
    assert 1 <= sent < 65  # 65 bundles in the catalog: the server stopped early
    assert stub.GetPackage(pb.GetPackageRequest(name="big")).name == "big"  # still serving


def test_a_stream_past_its_deadline_is_logged_as_such(
    served: RunningServer, stub: pb_grpc.RegistryStub
) -> None:
    stream = stub.ListBundles(pb.ListBundlesRequest(), timeout=0.5)
    next(stream)
    time.sleep(0.8)  # read nothing more: the server blocks on flow control until the deadline
    with pytest.raises(grpc.RpcError):
        list(stream)
    assert logged(served, "rpc api.Registry/ListBundles DEADLINE_EXCEEDED (")


def test_a_1mb_package_name_is_not_found_with_a_bounded_message(
    served: RunningServer, stub: pb_grpc.RegistryStub
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetPackage(pb.GetPackageRequest(name="p" * MB))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    details = caught.value.details() or ""
    assert details == f'package "{"p" * 200}... (1,000,000 characters)" not found'
    with pytest.raises(grpc.RpcError) as caught:  # three echoed fields, non-ASCII
        stub.GetBundle(
            pb.GetBundleRequest(pkgName="etcd", channelName="stable", csvName="\u00e9" * 300_000)
        )
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "(300,000 characters)" in (caught.value.details() or "")
    assert logged(served, "rpc api.Registry/GetBundle NOT_FOUND ")


def test_a_request_over_the_receive_limit_is_refused(stub: pb_grpc.RegistryStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetPackage(pb.GetPackageRequest(name="p" * (2 * MB)))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert len(caught.value.details() or "") < 200


def test_calls_over_the_concurrency_limit_are_refused(tmp_path: Path) -> None:
    root = write_big_catalog(write_catalog(tmp_path / "operatorhub"))
    limits = ServerLimits(grpc_workers=1, grpc_max_rpcs=1)
    with (
        start_server(root, http_port=None, limits=limits) as server,
        grpc.insecure_channel(server.grpc_address, options=[("grpc.http2.bdp_probe", 0)]) as ch,
    ):
        stub = pb_grpc.RegistryStub(ch)
        stream = stub.ListBundles(pb.ListBundlesRequest())
        next(stream)  # holds the one slot: blocked on flow control
        with pytest.raises(grpc.RpcError) as caught:
            stub.GetPackage(pb.GetPackageRequest(name="etcd"), timeout=5)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert caught.value.details() == busy_message(1)
        stream.cancel()
        deadline = time.monotonic() + 5
        while True:  # the slot frees once the server has seen the cancellation
            try:
                assert stub.GetPackage(pb.GetPackageRequest(name="etcd"), timeout=5).name
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert time.monotonic() < deadline
                time.sleep(0.05)


def test_echo_and_bounded() -> None:
    assert echo("short") == "short"
    assert echo("x" * 201) == "x" * 200 + "... (201 characters)"
    assert bounded("ok") == "ok"
    cut = bounded("\u00e9" * 5000)
    assert len(cut.encode()) <= 2048 and cut.endswith("... (10,000 bytes)")


@pytest.mark.parametrize(
    "field", ["http_workers", "grpc_max_rpcs", "grpc_max_streams", "http_header_timeout"]
)
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ServerLimits(**{field: 0})
