"""gRPC load: many concurrent clients of short calls against ``olmtool catalog serve`` and
``opm serve`` on one synthetic catalog (2,500 bundles by default, issue 25's size).

Each scenario starts every client at once and has each make ``--calls`` back-to-back
``GetBundleForChannel`` calls (the short call OLM's catalog operator makes most), spread
over the catalog's channels:

* ``N clients, own channels``: each client on its own gRPC channel and TCP connection (a
  local subchannel pool, as separate catalog-operator processes connect), for each N of
  ``--clients``;
* ``N clients, 1 channel``: the most clients, their calls multiplexed on one channel (one
  connection's HTTP/2 stream limit is what counts there).

Per scenario it prints the calls refused (UNAVAILABLE, RESOURCE_EXHAUSTED; any other
failure by its code), p50/p99/max latency and the calls per second, olmtool and opm side
by side, and each server's peak RSS. opm is measured when ``$OPM`` or
``/work/shared/peers/opm`` is an executable (``opm serve DIR -p PORT --cache-dir D``);
otherwise a line says why not. The client is one asyncio process (grpc.aio), on the same
machine: its own CPU is in every latency, for both servers alike.

    python benchmarks/bench_serve_load.py                   # 50 and 200 clients
    python benchmarks/bench_serve_load.py --clients 24,50 --calls 5 --packages 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import catalog_bench as cb  # noqa: E402  (benchmarks/ is a directory, not a package)

PEER_OPM = Path("/work/shared/peers/opm")
DEFAULT_PACKAGES = 125  # x 20 bundles = 2,500 bundles, the catalog of issue 25
DEFAULT_CLIENTS = (50, 200)
DEFAULT_CALLS = 20
CALL_TIMEOUT = 60.0  # seconds; a call still unanswered then counts as failed
REFUSALS = ("UNAVAILABLE", "RESOURCE_EXHAUSTED")
CONNECT_TIMEOUT = 60.0


# --- results ----------------------------------------------------------------------------------


@dataclass
class Scenario:
    name: str
    clients: int
    channels: int  # 1: every call on one channel; else one channel per client


@dataclass
class LoadResult:
    """One scenario against one server."""

    scenario: Scenario
    calls: int
    latencies_ms: list[float] = field(default_factory=list)  # of the calls that succeeded
    failures: Counter[str] = field(default_factory=Counter)  # status code name -> calls
    seconds: float = 0.0
    server_cpu_s: float | None = None  # the server's user + system CPU during the calls

    @property
    def refused(self) -> int:
        return sum(self.failures[code] for code in REFUSALS)

    @property
    def other_failures(self) -> int:
        return sum(n for code, n in self.failures.items() if code not in REFUSALS)

    def percentile(self, fraction: float) -> float | None:
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class ServerResult:
    tool: str
    results: list[LoadResult] = field(default_factory=list)
    peak_mb: float | None = None
    note: str = ""


# --- the load ---------------------------------------------------------------------------------


def channel_options(own_connection: bool) -> list[tuple[str, Any]]:
    """Options of a load channel; ``own_connection``: not shared with other channels
    (grpc shares one connection between channels of equal options in a process)."""
    options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", -1)]
    if own_connection:
        options.append(("grpc.use_local_subchannel_pool", 1))
    return options


async def channel_targets(target: str) -> list[tuple[str, str]]:
    """(package, channel) of every channel in the catalog, to spread the calls over."""
    import grpc

    from olmtool.proto import registry_pb2 as pb
    from olmtool.proto import registry_pb2_grpc as pb_grpc

    async with grpc.aio.insecure_channel(target, options=channel_options(False)) as channel:
        stub = pb_grpc.RegistryStub(channel)
        names = [p.name async for p in stub.ListPackages(pb.ListPackageRequest(), timeout=60)]
        found = []
        for name in names:
            package = await stub.GetPackage(pb.GetPackageRequest(name=name), timeout=60)
            found += [(name, c.name) for c in package.channels]
    return found


async def one_client(
    stub: Any, requests: list[Any], start: asyncio.Event, result: LoadResult
) -> None:
    import grpc

    await start.wait()
    for request in requests:
        began = time.perf_counter()
        try:
            await stub.GetBundleForChannel(request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            result.failures[exc.code().name] += 1
        else:
            result.latencies_ms.append((time.perf_counter() - began) * 1000)


async def run_scenario(
    target: str, scenario: Scenario, targets: list[tuple[str, str]], calls: int
) -> LoadResult:
    """Every client connected first, then all released at once; wall time of the calls."""
    import grpc

    from olmtool.proto import registry_pb2 as pb
    from olmtool.proto import registry_pb2_grpc as pb_grpc

    own = scenario.channels > 1
    channels = [
        grpc.aio.insecure_channel(target, options=channel_options(own))
        for _ in range(scenario.channels)
    ]
    result = LoadResult(scenario, calls=scenario.clients * calls)
    try:
        await asyncio.wait_for(
            asyncio.gather(*(c.channel_ready() for c in channels)), CONNECT_TIMEOUT
        )
        start = asyncio.Event()
        tasks = []
        for number in range(scenario.clients):
            stub = pb_grpc.RegistryStub(channels[number % len(channels)])
            picks = [targets[(number * calls + i) % len(targets)] for i in range(calls)]
            requests = [pb.GetBundleInChannelRequest(pkgName=p, channelName=c) for p, c in picks]
            tasks.append(asyncio.create_task(one_client(stub, requests, start, result)))
        began = time.perf_counter()
        start.set()
        await asyncio.gather(*tasks)
        result.seconds = time.perf_counter() - began
    finally:
        await asyncio.gather(*(c.close() for c in channels))
    return result


def scenarios(clients: list[int]) -> list[Scenario]:
    found = [Scenario(f"{n} clients, own channels", n, n) for n in clients]
    most = max(clients)
    return [*found, Scenario(f"{most} clients, 1 channel", most, 1)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its threads so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load_server(
    target: str, pid: int, plan: list[Scenario], calls: int, progress: Callable[[str], None]
) -> list[LoadResult]:
    targets = await channel_targets(target)
    if not targets:
        raise cb.BenchError("the catalog has no channels")
    warm = Scenario("warm-up", 4, 4)
    await run_scenario(target, warm, targets, max(1, len(targets) // 4))
    results = []
    for scenario in plan:
        cpu = cpu_seconds(pid)
        result = await run_scenario(target, scenario, targets, calls)
        result.server_cpu_s = cpu_seconds(pid) - cpu
        progress(f"  {scenario.name}: {row_text(result)}")
        results.append(result)
    return results


# --- the servers ------------------------------------------------------------------------------


def opm_path() -> tuple[str | None, str]:
    """(opm to measure, or None, and why not)."""
    given = os.environ.get("OPM")
    candidate = Path(given) if given else PEER_OPM
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate), ""
    if given:
        return None, f"OPM={given} is not an executable file"
    return None, f"no $OPM and no {PEER_OPM}"


def server_argv(tool: str, opm: str | None, directory: Path, port: int, cache: Path) -> list[str]:
    if tool == "opm":
        assert opm is not None
        return [*cb.opm_serve_argv(opm, directory, port), "--cache-dir", str(cache)]
    return [*cb.olmtool_serve_argv(directory, port), "--cache-dir", str(cache)]


@contextmanager
def running_server(argv: list[str], port: int, log_stem: Path) -> Iterator[Any]:
    """The server process, listening and answering ListPackages; stopped after."""
    err_path = log_stem.with_suffix(".err")
    with log_stem.with_suffix(".out").open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            deadline = time.perf_counter() + cb.SERVE_START_TIMEOUT
            cb.wait_for_port(port, process, deadline)
            with cb.registry_client(port) as (stub, pb2):
                cb.first_answer(stub, pb2, process, deadline)
            yield process
        finally:
            cb.stop_process(process)


def bench_server(
    tool: str,
    opm: str | None,
    directory: Path,
    logs: Path,
    plan: list[Scenario],
    calls: int,
    progress: Callable[[str], None],
) -> ServerResult:
    port = cb.free_port()
    outcome = ServerResult(tool)
    with tempfile.TemporaryDirectory(prefix=f"load-{tool}-") as cache:
        argv = server_argv(tool, opm, directory, port, Path(cache) / "cache")
        progress(f"{tool}: {' '.join(argv[-8:])}")
        try:
            with running_server(argv, port, logs / f"{directory.name}-{tool}-load") as process:
                target = f"127.0.0.1:{port}"
                outcome.results = asyncio.run(
                    load_server(target, process.pid, plan, calls, progress)
                )
                outcome.peak_mb = cb._vm_status(process.pid, "VmHWM")
        except cb.BenchError as exc:
            outcome.note = f"failed: {exc}"
            progress(f"{tool}: {outcome.note}")
    return outcome


# --- the report -------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def failures_text(result: LoadResult) -> str:
    return ", ".join(f"{code} {n}" for code, n in sorted(result.failures.items())) or "-"


def row_text(result: LoadResult) -> str:
    return (
        f"{result.calls} calls, refused {result.refused}, other failures"
        f" {result.other_failures}, p50 {_ms(result.percentile(0.5))} ms, p99"
        f" {_ms(result.percentile(0.99))} ms, {result.calls / (result.seconds or 1):,.0f}/s,"
        f" server CPU {_cpu_ms(result)} ms/call"
    )


def _cpu_ms(result: LoadResult) -> str:
    if result.server_cpu_s is None or not result.calls:
        return "-"
    return f"{result.server_cpu_s * 1000 / result.calls:.2f}"


def report_table(servers: list[ServerResult], bundles: int) -> Any:
    from rich.table import Table

    table = Table(
        title=f"gRPC load on {bundles:,} bundles: GetBundleForChannel, clients released at once"
    )
    for header in ("scenario", "server", "calls", "refused", "p50 ms", "p99 ms", "max ms"):
        table.add_column(header, justify="left" if header in ("scenario", "server") else "right")
    table.add_column("calls/s", justify="right")
    table.add_column("server CPU ms/call", justify="right")
    table.add_column("failures by code")
    names = [r.scenario.name for r in max(servers, key=lambda s: len(s.results)).results]
    for name in names:
        for server in servers:
            result = next((r for r in server.results if r.scenario.name == name), None)
            if result is None:
                continue
            table.add_row(
                name,
                server.tool,
                f"{result.calls:,}",
                f"{result.refused:,}",
                _ms(result.percentile(0.5)),
                _ms(result.percentile(0.99)),
                _ms(max(result.latencies_ms, default=None)),
                f"{result.calls / (result.seconds or 1):,.0f}",
                _cpu_ms(result),
                failures_text(result),
            )
    return table


def print_report(servers: list[ServerResult], bundles: int, opm_note: str) -> None:
    from rich.console import Console

    console = Console(width=max(shutil.get_terminal_size().columns, 160), highlight=False)
    console.print(report_table(servers, bundles))
    for server in servers:
        peak = f"peak RSS {server.peak_mb:.0f} MB" if server.peak_mb is not None else ""
        console.print(f"{server.tool}: {server.note or peak}", markup=False)
    if opm_note:
        console.print(f"opm: not measured ({opm_note})", markup=False)


# --- main -------------------------------------------------------------------------------------


def parse_counts(text: str) -> list[int]:
    counts = sorted({int(part) for part in text.split(",") if part.strip()})
    if not counts or counts[0] < 1:
        raise argparse.ArgumentTypeError("client counts are numbers >= 1, e.g. 50,200")
    return counts


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    found.add_argument("--packages", type=int, default=DEFAULT_PACKAGES)
    found.add_argument("--bundles-per-package", type=int, default=20)
    found.add_argument(
        "--clients",
        type=parse_counts,
        default=list(DEFAULT_CLIENTS),
        help="concurrent clients per scenario, comma-separated (default 50,200)",
    )
    found.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="calls per client")
    found.add_argument("--workdir", type=Path, default=cb.DEFAULT_WORKDIR)
    found.add_argument("--seed", type=int, default=1)
    found.add_argument("--no-opm", action="store_true", help="measure olmtool only")
    return found


def main(argv: list[str] | None = None, progress: Callable[[str], None] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()

    def stderr_progress(line: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {line}", file=sys.stderr, flush=True)

    progress = progress or stderr_progress
    size, directory = cb.ensure_catalog(
        args.workdir, args.packages, args.bundles_per_package, args.seed
    )
    logs = args.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    progress(f"load: {directory}: {size.bundles:,} bundles")
    opm, opm_note = (None, "--no-opm") if args.no_opm else opm_path()
    plan = scenarios(args.clients)
    servers = [
        bench_server(tool, opm, directory, logs, plan, args.calls, progress)
        for tool in (["olmtool", "opm"] if opm else ["olmtool"])
    ]
    print_report(servers, size.bundles, opm_note)
    return 0 if all(not s.note for s in servers) else 1


if __name__ == "__main__":
    sys.exit(main())
