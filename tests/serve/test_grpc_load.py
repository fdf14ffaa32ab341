"""api.Registry under many concurrent clients (issue 25): calls queue rather than being
refused, up to the documented limit (``ServerLimits.grpc_max_rpcs``); past it a call gets
RESOURCE_EXHAUSTED with :func:`busy_message`, at once, and the queue frees its places."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from olmtool.ports import free_port
from olmtool.proto import registry_pb2 as pb
from olmtool.proto import registry_pb2_grpc as pb_grpc
from olmtool.serve import RunningServer, ServerLimits, start_server
from olmtool.serve.limits import busy_message

from .conftest import write_big_catalog, write_catalog

CLIENTS = 200
CALL_TIMEOUT = 60.0  # generous: a loaded 2-core machine; no latency is asserted
# one connection per channel, as separate OLM processes have (a process otherwise
# shares one connection between its channels of equal options)
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
HOLDING = [("grpc.http2.bdp_probe", 0)]  # a small window: a stream not read stays blocked


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = write_big_catalog(write_catalog(tmp_path_factory.mktemp("catalogs") / "operatorhub"))
    with start_server(root, grpc_port=free_port(), http_port=None) as running:
        yield running


def short_call(stub: pb_grpc.RegistryStub) -> grpc.Future:
    request = pb.GetBundleInChannelRequest(pkgName="etcd", channelName="stable")
    return stub.GetBundleForChannel.future(request, timeout=CALL_TIMEOUT)


def outcomes(calls: list[grpc.Future]) -> Counter[str]:
    """Status code name -> calls, once every call has ended."""
    found: Counter[str] = Counter()
    for call in calls:
        try:
            assert call.result().csvName == "etcdoperator.v0.9.4"
            found["OK"] += 1
        except grpc.RpcError as exc:
            found[exc.code().name] += 1
    return found


def hold_the_worker(stub: pb_grpc.RegistryStub) -> grpc.Call:
    """A ListBundles stream read no further: its handler blocks on flow control."""
    stream = stub.ListBundles(pb.ListBundlesRequest())
    assert next(stream).csvName
    return stream


@contextmanager
def every_worker_held(server: RunningServer, workers: int) -> Iterator[None]:
    """While inside, calls queue: no worker is free to take them."""
    with grpc.insecure_channel(server.grpc_address, options=HOLDING) as channel:
        streams = [hold_the_worker(pb_grpc.RegistryStub(channel)) for _ in range(workers)]
        try:
            yield
        finally:
            for stream in streams:
                stream.cancel()


def assert_queued_then_answered(server: RunningServer, start: Callable[[], list[Any]]) -> None:
    """The calls ``start`` makes all wait while every worker is held (a refusal would
    come at once), and all succeed once the workers are free."""
    with every_worker_held(server, ServerLimits().grpc_workers):
        calls = start()
        time.sleep(0.5)
        assert not [call.code() for call in calls if call.done()]
    assert outcomes(calls) == {"OK": len(calls)}


def test_200_clients_on_their_own_connections_are_all_answered(served: RunningServer) -> None:
    with ExitStack() as stack:
        channels = [
            stack.enter_context(grpc.insecure_channel(served.grpc_address, options=OWN_CONNECTION))
            for _ in range(CLIENTS)
        ]
        for channel in channels:
            grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)
        stubs = [pb_grpc.RegistryStub(channel) for channel in channels]
        assert_queued_then_answered(served, lambda: [short_call(stub) for stub in stubs])
        # and with the workers free, two calls each at once
        assert outcomes([short_call(s) for _ in range(2) for s in stubs]) == {"OK": 2 * CLIENTS}


def test_200_calls_on_one_connection_are_all_answered(served: RunningServer) -> None:
    """What issue 25 saw refused: past the per-connection stream limit (then 32) HTTP/2
    refuses streams (UNAVAILABLE) instead of queueing them."""
    with grpc.insecure_channel(served.grpc_address) as channel:
        stub = pb_grpc.RegistryStub(channel)
        assert_queued_then_answered(served, lambda: [short_call(stub) for _ in range(CLIENTS)])


def test_the_defaults_queue_200_clients_and_refuse_before_the_stream_limit() -> None:
    limits = ServerLimits()
    assert limits.grpc_max_rpcs >= CLIENTS
    assert limits.grpc_max_streams > limits.grpc_max_rpcs  # RESOURCE_EXHAUSTED comes first


@pytest.fixture()
def big_catalog(tmp_path: Path) -> Path:
    return write_big_catalog(write_catalog(tmp_path / "operatorhub"))


def wait_until_done(calls: list[grpc.Future], count: int) -> list[grpc.Future]:
    """The calls done once ``count`` of them are (and a moment more, for any extra)."""
    deadline = time.monotonic() + CALL_TIMEOUT
    while sum(call.done() for call in calls) < count:
        assert time.monotonic() < deadline, f"{count} calls not answered"
        time.sleep(0.02)
    time.sleep(0.2)
    return [call for call in calls if call.done()]


def test_calls_past_the_limit_get_resource_exhausted_at_once(big_catalog: Path) -> None:
    limit, sent = 8, 20
    lines: list[str] = []
    limits = ServerLimits(grpc_workers=1, grpc_max_rpcs=limit)
    with (
        start_server(
            big_catalog, grpc_port=free_port(), http_port=None, limits=limits, log=lines.append
        ) as server,
        grpc.insecure_channel(server.grpc_address, options=HOLDING) as channel,
    ):
        stub = pb_grpc.RegistryStub(channel)
        stream = hold_the_worker(stub)  # the one worker, and the first of 8 places
        calls = [short_call(stub) for _ in range(sent)]
        refused = wait_until_done(calls, sent - limit + 1)  # while the worker is held
        assert len(refused) == sent - limit + 1
        for call in refused:
            assert call.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert call.details() == busy_message(limit)
        with pytest.raises(grpc.RpcError) as caught:  # a stream is refused alike
            next(stub.ListBundles(pb.ListBundlesRequest(), timeout=CALL_TIMEOUT))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        stream.cancel()
        assert outcomes(calls) == {"OK": limit - 1, "RESOURCE_EXHAUSTED": sent - limit + 1}
    assert "8 calls are in progress or queued" in busy_message(limit)
    for refusal in ("GetBundleForChannel RESOURCE_EXHAUSTED ", "ListBundles RESOURCE_EXHAUSTED (0"):
        assert any(line.startswith(f"rpc api.Registry/{refusal}") for line in lines), lines


def test_a_call_that_ends_while_queued_frees_its_place(big_catalog: Path) -> None:
    limits = ServerLimits(grpc_workers=1, grpc_max_rpcs=2)
    request = pb.GetPackageRequest(name="etcd")
    with (
        start_server(big_catalog, grpc_port=free_port(), http_port=None, limits=limits) as server,
        grpc.insecure_channel(server.grpc_address, options=HOLDING) as channel,
    ):
        stub = pb_grpc.RegistryStub(channel)
        stream = hold_the_worker(stub)
        with pytest.raises(grpc.RpcError) as caught:  # queued in the second place, expires
            stub.GetPackage(request, timeout=0.5)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        stream.cancel()
        deadline = time.monotonic() + CALL_TIMEOUT
        while True:  # both places free once the server has seen the cancellation
            try:
                assert stub.GetPackage(request, timeout=CALL_TIMEOUT).name == "etcd"
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert time.monotonic() < deadline
                time.sleep(0.05)
        stream = hold_the_worker(stub)
        queued = stub.GetPackage.future(request, timeout=CALL_TIMEOUT)
        time.sleep(0.3)
        assert not queued.done()  # queued in the second place: the expired call left it
        stream.cancel()
        assert queued.result().name == "etcd"
