"""Catalog benchmarks: validate, render and serve synthetic catalogs of real-world scale.

For each size (number of packages, 20 bundles each by default) a catalog is generated
with ``catalog_gen.py`` (cached under the work directory) and every measurement runs in a
fresh subprocess, so that its peak memory is its own and not what an earlier, larger
measurement left behind:

* validate: ``olmtool.catalog.validate.validate_catalog(dir)``;
* render: ``load_catalog`` + ``render_catalog`` written out as JSON (``opm render DIR``);
* serve: ``olmtool catalog serve`` until the first ``ListPackages`` answer, its resident
  memory then and after a full ``ListBundles``, and gRPC throughput (one ``ListBundles``
  stream, N sequential ``GetBundle`` calls).

With ``OPM=/path/to/opm`` the same runs against opm and the table gets olmtool/opm ratios.
Then (unless ``--quick`` or ``--no-load``) ``bench_serve_load.py``: 50 and 200 concurrent
gRPC clients against both servers, refused calls and p50/p99 latency side by side.

    python benchmarks/catalog_bench.py                      # sizes 50,125,1000
    python benchmarks/catalog_bench.py --sizes 1 --quick    # a smoke run in seconds
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_WORKDIR = Path.home() / ".cache" / "olmtool" / "bench"
SERVE_START_TIMEOUT = 600.0  # seconds; opm serve on big catalogs is known to need minutes
GET_BUNDLE_CALLS = 2000
GET_BUNDLE_CALLS_QUICK = 200
FLOOR_MAX_RATIO = 2.0  # validate's time over the floor's at the largest size
SMALL_MAX_RATIO = 0.25  # validate's time over opm's at (about) 1,000 bundles
LINEAR_MAX_RATIO = 1.5  # max/min MB per 1k bundles still called "linear"
LINEAR_MIN_DELTA = 1000  # bundles between two sizes for a slope to count in the verdict
MB = 1024 * 1024


# --- results -------------------------------------------------------------------------------


@dataclass
class Run:
    """One measured subprocess: wall seconds from spawn to exit and its own peak RSS."""

    seconds: float
    peak_mb: float
    ok: bool = True
    note: str = ""


@dataclass
class ServeRun:
    """One server: start-up to the first answer, memory, and gRPC throughput."""

    startup_s: float
    rss_first_mb: float
    rss_listed_mb: float
    peak_mb: float
    list_bundles: int
    list_bundles_per_s: float
    get_bundle_calls: int
    get_bundle_per_s: float


@dataclass
class ToolResult:
    validate: Run | None = None
    render: Run | None = None
    serve: ServeRun | None = None
    serve_note: str = ""


@dataclass
class SizeResult:
    packages: int
    bundles: int
    disk_mb: float
    generated_s: float | None  # None when the catalog came from the cache
    tools: dict[str, ToolResult] = field(default_factory=dict)
    floor: Run | None = None  # child_floor: reading and parsing, validate's lower bound


class BenchError(Exception):
    """A measurement that could not be made (the reason goes into the table's notes)."""


# --- child mode: the measured work, in a fresh interpreter --------------------------------


def _vm_status(pid: int | str, key: str) -> float:
    """A ``/proc/<pid>/status`` memory field (VmRSS, VmHWM) in MB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise BenchError(f"no {key} for pid {pid}")


def child_validate(directory: str) -> dict[str, Any]:
    import resource

    from olmtool.catalog import reduce
    from olmtool.catalog.validate import validate_catalog

    report = validate_catalog(directory)
    # a big catalog is read by worker processes: their peaks count too (each at most
    # the biggest one's, an upper bound of their sum)
    workers = min(len(os.sched_getaffinity(0)), reduce.MAX_WORKERS)
    worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "workers_mb": workers * worker_mb if worker_mb else 0.0,
    }


def child_render(directory: str) -> dict[str, Any]:
    """``opm render DIR -o json > /dev/null``: every file's text, written and dropped."""
    from olmtool.catalog.load import load_catalog
    from olmtool.catalog.write import render_catalog

    result = load_catalog(directory)
    written = 0
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for text in render_catalog(result.config).values():
            written += sink.write(text)
    return {"errors": len(result.errors), "chars": written}


def child_floor(directory: str) -> dict[str, Any]:
    """What validating cannot avoid: read every file, parse every document and decode
    every ``olm.bundle.object`` (base64, then JSON), with the standard library's JSON (the
    parser olmtool uses: it measured as fast as orjson and msgspec on catalogs, whose
    documents are mostly long base64 strings). Nothing is kept: a file's documents are
    dropped before the next file is read."""
    import base64

    decoder = json.JSONDecoder()
    documents = objects = 0
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as file:
                text = file.read().decode()
            position, length = 0, len(text)
            while True:
                while position < length and text[position] in " \t\r\n":
                    position += 1
                if position >= length:
                    break
                document, position = decoder.raw_decode(text, position)
                documents += 1
                if document.get("schema") != "olm.bundle":
                    continue
                for prop in document.get("properties") or ():
                    if prop.get("type") == "olm.bundle.object":
                        json.loads(base64.b64decode(prop["value"]["data"]))
                        objects += 1
    return {"documents": documents, "objects": objects}


CHILDREN: dict[str, Callable[[str], dict[str, Any]]] = {
    "validate": child_validate,
    "render": child_render,
    "floor": child_floor,
}


def run_child(kind: str, directory: str) -> int:
    """Entry point of ``--child``: do the work, print what it found as one JSON line."""
    started = time.perf_counter()
    found = CHILDREN[kind](directory)
    found["work_s"] = time.perf_counter() - started
    found["vm_hwm_mb"] = _vm_status("self", "VmHWM")
    print(json.dumps(found))
    return 0


# --- measuring subprocesses ------------------------------------------------------------------


def run_spawner(result_path: str, argv: list[str]) -> int:
    """Entry point of ``--spawn``: run ``argv``, write its wall time and own peak RSS.

    Linux carries the hiwater RSS of the address space that calls exec into the new
    program's ``ru_maxrss``, so a child spawned by the runner (which holds generated
    catalogs and gRPC state) would report at least the runner's RSS. Spawned from this
    small interpreter the floor is about 15 MB, below any measured program's baseline.
    """
    started = time.perf_counter()
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ)
    except OSError as exc:
        print(f"cannot run {argv[0]}: {exc}", file=sys.stderr)
        result = {"seconds": 0.0, "peak_mb": 0.0, "exit": 127}
    else:
        _, status, usage = os.wait4(pid, 0)
        result = {
            "seconds": time.perf_counter() - started,
            "peak_mb": usage.ru_maxrss / 1024,
            "exit": os.waitstatus_to_exitcode(status),
        }
    Path(result_path).write_text(json.dumps(result))
    return 0


def measure_process(argv: list[str], log_stem: Path) -> tuple[Run, str]:
    """Run ``argv`` to completion through the spawner: wall time, own peak RSS, stdout."""
    out_path, err_path = log_stem.with_suffix(".out"), log_stem.with_suffix(".err")
    result_path = log_stem.with_suffix(".json")
    result_path.unlink(missing_ok=True)
    spawner = [sys.executable, str(Path(__file__).resolve()), "--spawn", str(result_path), *argv]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        subprocess.run(spawner, stdout=out, stderr=err, stdin=subprocess.DEVNULL, check=True)
    measured = json.loads(result_path.read_text())
    note = ""
    if measured["exit"]:
        tail = err_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no stderr"]
        note = f"exit {measured['exit']}: {tail[0][:120]}"
    run = Run(measured["seconds"], measured["peak_mb"], ok=not measured["exit"], note=note)
    return run, out_path.read_text(errors="replace")


def measure_olmtool_child(kind: str, directory: Path, log_stem: Path) -> Run:
    run, stdout = measure_process(
        [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(directory)], log_stem
    )
    if run.ok:
        found = json.loads(stdout.strip().splitlines()[-1])
        run.peak_mb += found.get("workers_mb", 0.0)
        if found.get("errors"):
            run.ok, run.note = False, f"{found['errors']} error(s) reported"
    return run


def measure_opm(kind: str, opm: str, directory: Path, log_stem: Path) -> Run:
    argv = {
        "validate": [opm, "validate", str(directory)],
        "render": [opm, "render", str(directory), "-o", "json"],
    }[kind]
    return measure_process(argv, log_stem)[0]


# --- serving -----------------------------------------------------------------------------------


def serve_available() -> str | None:
    """Why olmtool's serve cannot be measured, or None when it can."""
    for module in ("olmtool.cli.catalog.serve", "olmtool.proto.registry_pb2_grpc"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} does not exist yet"
        except ModuleNotFoundError:
            return f"{module} does not exist yet"
    try:
        import grpc  # noqa: F401
    except ImportError:
        return "grpcio is not installed"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen[bytes], deadline: float) -> None:
    """Poll the TCP port every 10 ms: cheaper and finer than gRPC's reconnect backoff."""
    while True:
        if process.poll() is not None:
            raise BenchError(f"server exited with {process.returncode} before listening")
        if time.perf_counter() > deadline:
            raise BenchError("server did not listen in time")
        with socket.socket() as probe:
            probe.settimeout(0.2)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.01)


@contextmanager
def registry_client(port: int) -> Iterator[tuple[Any, Any]]:
    """(stub, messages module) on a channel with short reconnect backoff, closed after."""
    import grpc

    from olmtool.proto import registry_pb2, registry_pb2_grpc

    options = [
        ("grpc.initial_reconnect_backoff_ms", 20),
        ("grpc.min_reconnect_backoff_ms", 20),
        ("grpc.max_reconnect_backoff_ms", 200),
        ("grpc.max_receive_message_length", -1),
    ]
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=options)
    try:
        yield registry_pb2_grpc.RegistryStub(channel), registry_pb2
    finally:
        channel.close()


def first_answer(stub: Any, pb2: Any, process: subprocess.Popen[bytes], deadline: float) -> int:
    """Call ListPackages until it succeeds (a listening server may still be loading)."""
    import grpc

    while True:
        try:
            return len(list(stub.ListPackages(pb2.ListPackageRequest(), timeout=30)))
        except grpc.RpcError as exc:
            if process.poll() is not None or time.perf_counter() > deadline:
                raise BenchError(f"ListPackages never answered: {exc.code()}") from None
            time.sleep(0.01)


def list_bundles(stub: Any, pb2: Any) -> tuple[list[tuple[str, str, str]], float]:
    """One full ListBundles stream: (package, channel, csv) per bundle, and seconds taken."""
    started = time.perf_counter()
    keys = [
        (b.packageName, b.channelName, b.csvName)
        for b in stub.ListBundles(pb2.ListBundlesRequest(), timeout=1800)
    ]
    return keys, time.perf_counter() - started


def get_bundles(stub: Any, pb2: Any, keys: list[tuple[str, str, str]], calls: int) -> float:
    """``calls`` sequential GetBundle calls spread evenly over ``keys``; seconds taken."""
    picks = [keys[i * len(keys) // calls] for i in range(calls)]
    started = time.perf_counter()
    for package, channel, csv in picks:
        stub.GetBundle(pb2.GetBundleRequest(pkgName=package, channelName=channel, csvName=csv))
    return time.perf_counter() - started


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (both servers shut down on it), SIGKILL if that takes more than 20 s."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def measure_serve(argv: list[str], port: int, calls: int, log_stem: Path) -> ServeRun:
    """Start a server, time it to the first ListPackages answer, then load it with calls."""
    import grpc

    err_path = log_stem.with_suffix(".err")
    with log_stem.with_suffix(".out").open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            deadline = started + SERVE_START_TIMEOUT
            wait_for_port(port, process, deadline)
            with registry_client(port) as (stub, pb2):
                first_answer(stub, pb2, process, deadline)
                startup = time.perf_counter() - started
                rss_first = _vm_status(process.pid, "VmRSS")
                keys, list_seconds = list_bundles(stub, pb2)
                rss_listed = _vm_status(process.pid, "VmRSS")
                calls = min(calls, len(keys))
                get_seconds = get_bundles(stub, pb2, keys, calls) if calls else 0.0
                peak = _vm_status(process.pid, "VmHWM")
        except grpc.RpcError as exc:
            raise BenchError(f"gRPC call failed: {exc.code()}: {exc.details()}") from None
        except BenchError as exc:
            tail = err_path.read_text(errors="replace").strip().splitlines()[-1:]
            raise BenchError(f"{exc}{': ' + tail[0][:120] if tail else ''}") from None
        finally:
            stop_process(process)
    return ServeRun(
        startup_s=startup,
        rss_first_mb=rss_first,
        rss_listed_mb=rss_listed,
        peak_mb=peak,
        list_bundles=len(keys),
        list_bundles_per_s=len(keys) / list_seconds if list_seconds else 0.0,
        get_bundle_calls=calls,
        get_bundle_per_s=calls / get_seconds if get_seconds else 0.0,
    )


def olmtool_serve_argv(directory: Path, port: int) -> list[str]:
    # --quiet: no log line per request, so throughput measures serving, not stderr writes.
    return [
        sys.executable,
        "-m",
        "olmtool",
        "catalog",
        "serve",
        str(directory),
        "--port",
        str(port),
        "--http-port",
        "0",
        "--quiet",
    ]


def opm_serve_argv(opm: str, directory: Path, port: int) -> list[str]:
    return [opm, "serve", str(directory), "-p", str(port)]


# --- catalogs ------------------------------------------------------------------------------------


def load_generator() -> ModuleType:
    """catalog_gen.py beside this file (benchmarks/ is a directory, not a package)."""
    spec = importlib.util.spec_from_file_location("catalog_gen", HERE / "catalog_gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["catalog_gen"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def ensure_catalog(
    workdir: Path, packages: int, bundles: int, seed: int
) -> tuple[SizeResult, Path]:
    """The cached catalog for this size, generated first when missing or incomplete.

    A ``.complete`` marker (written last) holds the generator's stats, so an interrupted
    generation is never mistaken for a catalog.
    """
    generator = load_generator()
    name = f"fbc-p{packages}-b{bundles}-s{seed}-g{generator.GENERATOR_VERSION}"
    directory, marker = workdir / name, workdir / f"{name}.complete"
    generated_s = None
    if not marker.is_file():
        shutil.rmtree(directory, ignore_errors=True)
        stats = generator.generate(directory, packages, bundles, "json", seed)
        marker.write_text(json.dumps(asdict(stats)))
        generated_s = stats.seconds
    stats = json.loads(marker.read_text())
    return SizeResult(packages, stats["bundles"], stats["bytes"] / MB, generated_s), directory


# --- one size, all tools ----------------------------------------------------------------------


def median_run(runs: list[Run]) -> Run:
    """The run with the median wall time; a failed run wins so that its reason shows."""
    failed = [r for r in runs if not r.ok]
    return failed[0] if failed else sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]


def median_serve(runs: list[ServeRun]) -> ServeRun:
    """Each field's median over the repetitions (they vary independently)."""
    values = {
        name: sorted(getattr(r, name) for r in runs)[len(runs) // 2]
        for name in ServeRun.__dataclass_fields__
    }
    return ServeRun(**values)


def measure_batch(
    tool: str, kind: str, directory: Path, stem: Path, opm: str | None, repeat: int
) -> Run:
    runs = []
    for attempt in range(repeat):
        log_stem = stem.with_name(f"{stem.name}-{attempt}")
        if tool == "opm":
            assert opm is not None
            runs.append(measure_opm(kind, opm, directory, log_stem))
        else:
            runs.append(measure_olmtool_child(kind, directory, log_stem))
        if not runs[-1].ok:
            break
    return median_run(runs)


def serve_batch(
    tool: str, directory: Path, stem: Path, opm: str | None, calls: int, repeat: int
) -> ServeRun:
    runs = []
    for attempt in range(repeat):
        port = free_port()
        log_stem = stem.with_name(f"{stem.name}-{attempt}")
        if tool == "opm" and opm:
            # opm v1.26 serve without --cache-dir fails ("DirFS with empty root"); an
            # empty cache each time keeps it a cold start, as olmtool's is
            with tempfile.TemporaryDirectory(dir=stem.parent) as cache:
                argv = [*opm_serve_argv(opm, directory, port), "--cache-dir", cache]
                runs.append(measure_serve(argv, port, calls, log_stem))
        else:
            runs.append(measure_serve(olmtool_serve_argv(directory, port), port, calls, log_stem))
    return median_serve(runs)


def bench_tool(
    tool: str,
    directory: Path,
    logs: Path,
    calls: int,
    repeat: int,
    opm: str | None,
    progress: Callable[[str], None],
) -> ToolResult:
    """validate, render and serve with one tool ("olmtool" or "opm") on one catalog;
    each measurement ``repeat`` times, keeping the median."""
    result = ToolResult()
    for kind in ("validate", "render"):
        run = measure_batch(
            tool, kind, directory, logs / f"{directory.name}-{tool}-{kind}", opm, repeat
        )
        setattr(result, kind, run)
        progress(f"{tool} {kind}: {run.seconds:.2f} s, peak {run.peak_mb:.0f} MB {run.note}")
    why_not = serve_available() if tool == "olmtool" else None
    if why_not:
        result.serve_note = f"serve: not available ({why_not})"
        progress(result.serve_note)
        return result
    try:
        stem = logs / f"{directory.name}-{tool}-serve"
        result.serve = s = serve_batch(tool, directory, stem, opm, calls, repeat)
        progress(
            f"{tool} serve: first answer {s.startup_s:.2f} s, RSS {s.rss_first_mb:.0f} MB"
            f" -> {s.rss_listed_mb:.0f} MB, ListBundles {s.list_bundles:,} at"
            f" {s.list_bundles_per_s:,.0f}/s, GetBundle {s.get_bundle_per_s:,.0f}/s"
        )
    except BenchError as exc:
        result.serve_note = f"serve failed: {exc}"
        progress(result.serve_note)
    return result


# --- the report ---------------------------------------------------------------------------------


def slopes(
    results: list[SizeResult], tool: str, metric: Callable[[ToolResult], float | None]
) -> Iterator[tuple[SizeResult, float | None, int]]:
    """MB per 1k bundles between consecutive sizes: constant when memory grows linearly.

    Differences rather than ratios cancel the interpreter's fixed baseline, which would
    otherwise dominate the small sizes. Yields (size, slope or None, bundles added).
    """
    previous: tuple[int, float] | None = None
    for size in results:
        value = metric(size.tools[tool]) if tool in size.tools else None
        slope = None
        if value is not None and previous is not None and size.bundles > previous[0]:
            slope = (value - previous[1]) / ((size.bundles - previous[0]) / 1000)
        yield size, slope, size.bundles - previous[0] if previous else 0
        if value is not None:
            previous = (size.bundles, value)


def _validate_peak(t: ToolResult) -> float | None:
    return t.validate.peak_mb if t.validate and t.validate.ok else None


def _serve_rss(t: ToolResult) -> float | None:
    return t.serve.rss_listed_mb if t.serve else None


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _run_cells(run: Run | None) -> list[str]:
    if run is None:
        return ["-", "-"]
    mark = "" if run.ok else " !"
    return [f"{run.seconds:.2f}{mark}", f"{run.peak_mb:.0f}"]


def _serve_cells(serve: ServeRun | None) -> list[str]:
    if serve is None:
        return ["-"] * 6
    return [
        f"{serve.startup_s:.2f}",
        f"{serve.peak_mb:.0f}",
        f"{serve.rss_first_mb:.0f}",
        f"{serve.rss_listed_mb:.0f}",
        f"{serve.list_bundles_per_s:,.0f}",
        f"{serve.get_bundle_per_s:,.0f}",
    ]


def results_table(results: list[SizeResult], tools: list[str]) -> Any:
    from rich.table import Table

    table = Table(
        title="Catalog benchmarks: wall s from process start; MB = the process's own peak RSS"
    )
    for header in (
        "tool",
        "pkgs",
        "bundles",
        "disk MB",
        "validate s",
        "validate MB",
        "render s",
        "render MB",
        "serve up s",
        "serve peak MB",
        "RSS 1st MB",
        "RSS listed MB",
        "ListBundles/s",
        "GetBundle/s",
        "validate MB/1k",
        "serve MB/1k",
    ):
        table.add_column(header, justify="left" if header == "tool" else "right")
    for tool in tools:
        validate_slopes = {id(s): v for s, v, _ in slopes(results, tool, _validate_peak)}
        serve_slopes = {id(s): v for s, v, _ in slopes(results, tool, _serve_rss)}
        for size in results:
            result = size.tools.get(tool)
            if result is None:
                continue
            table.add_row(
                tool,
                f"{size.packages:,}",
                f"{size.bundles:,}",
                f"{size.disk_mb:.1f}",
                *_run_cells(result.validate),
                *_run_cells(result.render),
                *_serve_cells(result.serve),
                _fmt(validate_slopes.get(id(size)), ".1f"),
                _fmt(serve_slopes.get(id(size)), ".1f"),
            )
    return table


RATIO_METRICS: dict[str, Callable[[ToolResult], float | None]] = {
    "validate s": lambda t: t.validate.seconds if t.validate and t.validate.ok else None,
    "validate MB": lambda t: t.validate.peak_mb if t.validate and t.validate.ok else None,
    "render s": lambda t: t.render.seconds if t.render and t.render.ok else None,
    "render MB": lambda t: t.render.peak_mb if t.render and t.render.ok else None,
    "serve up s": lambda t: t.serve.startup_s if t.serve else None,
    "RSS listed MB": lambda t: t.serve.rss_listed_mb if t.serve else None,
    "serve peak MB": lambda t: t.serve.peak_mb if t.serve else None,
    "ListBundles/s": lambda t: t.serve.list_bundles_per_s if t.serve else None,
    "GetBundle/s": lambda t: t.serve.get_bundle_per_s if t.serve else None,
}


def ratio(size: SizeResult, metric: str) -> float | None:
    """olmtool/opm for one metric (below 1 is better for times and memory)."""
    if "opm" not in size.tools or "olmtool" not in size.tools:
        return None
    ours = RATIO_METRICS[metric](size.tools["olmtool"])
    theirs = RATIO_METRICS[metric](size.tools["opm"])
    return ours / theirs if ours is not None and theirs else None


def validate_seconds(size: SizeResult, tool: str) -> float | None:
    result = size.tools.get(tool)
    return RATIO_METRICS["validate s"](result) if result else None


def floor_ratio(size: SizeResult) -> float | None:
    """olmtool's validate time as a multiple of the floor's (1 would be the floor)."""
    ours = validate_seconds(size, "olmtool")
    floor = size.floor.seconds if size.floor and size.floor.ok else None
    return ours / floor if ours is not None and floor else None


def floor_table(results: list[SizeResult]) -> Any:
    from rich.table import Table

    table = Table(
        title="validate against its floor (read every file, parse every document, decode "
        "every olm.bundle.object) and against opm"
    )
    for header in ("bundles", "floor s", "olmtool s", "opm s", "olmtool/floor", "olmtool/opm"):
        table.add_column(header, justify="right")
    for size in results:
        table.add_row(
            f"{size.bundles:,}",
            _fmt(size.floor.seconds if size.floor and size.floor.ok else None),
            _fmt(validate_seconds(size, "olmtool")),
            _fmt(validate_seconds(size, "opm")),
            _fmt(floor_ratio(size)),
            _fmt(ratio(size, "validate s")),
        )
    return table


def ratio_table(results: list[SizeResult]) -> Any:
    from rich.table import Table

    table = Table(title="olmtool / opm (< 1: olmtool smaller; for /s metrics > 1 is faster)")
    table.add_column("bundles", justify="right")
    for metric in RATIO_METRICS:
        table.add_column(metric, justify="right")
    for size in results:
        table.add_row(f"{size.bundles:,}", *(_fmt(ratio(size, m)) for m in RATIO_METRICS))
    return table


def _verdict(passed: bool | None, text: str) -> str:
    mark = {True: "PASS", False: "FAIL", None: "n/a "}[passed]
    return f"{mark}  {text}"


def versus_opm(largest: SizeResult, metric: str, limit: float, label: str) -> str:
    value = ratio(largest, metric)
    if value is None:
        return _verdict(None, f"{label}: no opm measurement at {largest.bundles:,} bundles")
    return _verdict(value <= limit, f"{label}: olmtool/opm = {value:.2f} (limit {limit:g})")


def linearity(results: list[SizeResult], tool: str) -> tuple[float | None, str]:
    """How much the MB-per-1k-bundles slope grows: the largest later slope over the first
    (slopes that span enough bundles to be meaningful). A streaming reader's slope
    falls as the catalog grows (its memory is sublinear): only growth fails."""
    parts, worst = [], None
    for label, metric in (("validate peak", _validate_peak), ("serve RSS", _serve_rss)):
        values = [
            s
            for _, s, added in slopes(results, tool, metric)
            if s is not None and added >= LINEAR_MIN_DELTA
        ]
        if len(values) < 2:
            parts.append(f"{label}: needs 2 size steps of >= {LINEAR_MIN_DELTA:,} bundles")
            continue
        if values[0] <= 0:
            parts.append(f"{label}: slopes {', '.join(f'{v:.1f}' for v in values)} MB/1k")
            continue
        spread = max(values[1:]) / values[0]
        worst = spread if worst is None else max(worst, spread)
        parts.append(f"{label} {spread:.2f} ({', '.join(f'{v:.1f}' for v in values)} MB/1k)")
    return worst, "; ".join(parts)


def verdicts(results: list[SizeResult]) -> list[str]:
    largest = max(results, key=lambda s: s.bundles)
    small = min(results, key=lambda s: abs(s.bundles - 1000))
    worst, detail = linearity(results, "olmtool")
    linear = None if worst is None else worst <= LINEAR_MAX_RATIO
    over_floor = floor_ratio(largest)
    return [
        _verdict(
            None if over_floor is None else over_floor <= FLOOR_MAX_RATIO,
            f"validate at {largest.bundles:,} bundles <= {FLOOR_MAX_RATIO:g}x the floor: "
            + ("not measured" if over_floor is None else f"{over_floor:.2f}x"),
        ),
        versus_opm(small, "validate s", SMALL_MAX_RATIO, f"validate at {small.bundles:,} bundles"),
        versus_opm(largest, "validate s", 1.0, "validate no slower than opm"),
        versus_opm(largest, "serve up s", 1.0, "serve start-up no slower than opm"),
        versus_opm(largest, "RSS listed MB", 0.5, "serve RSS <= 1/2 opm at largest size"),
        _verdict(
            linear,
            f"memory at most linear (no later MB per 1k bundles above {LINEAR_MAX_RATIO}x "
            f"the first): {detail}",
        ),
    ]


def print_report(results: list[SizeResult], opm: str | None, total_s: float) -> None:
    from rich.console import Console

    console = Console(width=max(shutil.get_terminal_size().columns, 220), highlight=False)
    tools = ["olmtool", "opm"] if opm else ["olmtool"]
    console.print(results_table(results, tools))
    for size in results:
        for tool, result in size.tools.items():
            for note in filter(None, [*_notes(result), result.serve_note]):
                console.print(f"{tool} at {size.bundles:,} bundles: {note}", markup=False)
    console.print(floor_table(results))
    if opm:
        console.print(ratio_table(results))
    else:
        console.print("opm: not measured (set OPM=/path/to/opm)")
    for line in verdicts(results):
        console.print(line, markup=False)
    console.print(f"total wall time: {total_s:.1f} s")


def _notes(result: ToolResult) -> list[str]:
    return [
        f"{k}: {r.note}"
        for k, r in (("validate", result.validate), ("render", result.render))
        if r is not None and r.note
    ]


# --- main ------------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes are package counts >= 1, e.g. 1,10,100")
    return sizes


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--spawn"] and len(argv) > 2:
        return run_spawner(argv[1], argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[50, 125, 1000],
        help="package counts, comma-separated (default 50,125,1000: 1,000, 2,500 and "
        "20,000 bundles)",
    )
    parser.add_argument("--bundles-per-package", type=int, default=20)
    parser.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help=f"generated catalogs and logs (default {DEFAULT_WORKDIR})",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{GET_BUNDLE_CALLS_QUICK} GetBundle calls instead of {GET_BUNDLE_CALLS}",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        help="runs per measurement, the median is kept (default 3; 1 with --quick)",
    )
    parser.add_argument(
        "--load",
        action=argparse.BooleanOptionalAction,
        help="then the gRPC load section, bench_serve_load.py (default: on, off with --quick)",
    )
    parser.add_argument("--child", nargs=2, metavar=("KIND", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(*args.child)

    started = time.perf_counter()
    opm = os.environ.get("OPM") or None
    if opm and not (Path(opm).is_file() and os.access(opm, os.X_OK)):
        parser.error(f"OPM={opm} is not an executable file")
    calls = GET_BUNDLE_CALLS_QUICK if args.quick else GET_BUNDLE_CALLS
    repeat = args.repeat or (1 if args.quick else 3)
    logs = args.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def progress(line: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {line}", file=sys.stderr, flush=True)

    results = []
    for packages in args.sizes:
        size, directory = ensure_catalog(
            args.workdir, packages, args.bundles_per_package, args.seed
        )
        how = f"generated in {size.generated_s:.1f} s" if size.generated_s else "cached"
        progress(f"{directory}: {size.bundles:,} bundles, {size.disk_mb:.1f} MB ({how})")
        for tool in ["olmtool", "opm"] if opm else ["olmtool"]:
            size.tools[tool] = bench_tool(tool, directory, logs, calls, repeat, opm, progress)
        stem = logs / f"{directory.name}-floor"
        size.floor = floor = measure_batch("olmtool", "floor", directory, stem, None, repeat)
        progress(f"floor (read + parse + decode objects): {floor.seconds:.2f} s {floor.note}")
        results.append(size)
    print_report(results, opm, time.perf_counter() - started)
    if args.load if args.load is not None else not args.quick:
        return run_load_section(args.workdir, args.seed)
    return 0


def run_load_section(workdir: Path, seed: int) -> int:
    """bench_serve_load.py: concurrent clients against olmtool and opm (when found)."""
    sys.path.insert(0, str(HERE))
    import bench_serve_load

    print(flush=True)
    return bench_serve_load.main(["--workdir", str(workdir), "--seed", str(seed)])


if __name__ == "__main__":
    sys.exit(main())
