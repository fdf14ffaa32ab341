"""Upgrade edges of big channels: skips and skipRange at 2,000 and 10,000 entries.

A lean one-package catalog (bundles carry only their ``olm.package`` property, so that
loading is cheap and the graph is what is measured) is written per size and shape, then a
fresh interpreter loads it, builds the model, computes every channel's upgrade edges and
runs the catalog checks (``validate``, which walks the edges for ``unreachable-head``).
Each phase is timed; peak MB is the child's own VmHWM.

Shapes (every entry replaces its predecessor; one channel ``stable`` with every entry and
one ``fast`` with the newest third):

* ``stream``: ``catalog_gen.plan_releases`` (bad releases skipped, extra skips, a quarter
  of the entries with a skipRange from the major stream's first version to themselves);
* ``window``: every entry skips the one three back and has its own skipRange over its
  minor stream (``>=M.m.0 <self``): as many distinct ranges as entries, few matches each;
* ``shared``: every entry's skipRange is one of 20 ranges (``>=0.0.0 <0.k.0``): few
  distinct ranges that each match many versions.

    python benchmarks/bench_upgrade_edges.py [--sizes 2000,10000] [--shapes stream,window,shared]

Run it against another checkout with ``PYTHONPATH=/that/checkout`` to compare.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHAPES = ("stream", "window", "shared")


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("catalog_gen", HERE / "catalog_gen.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["catalog_gen"] = module
    spec.loader.exec_module(module)
    return module


def releases(shape: str, count: int) -> list[dict[str, Any]]:
    """Entries (name, version, replaces, skips, skipRange) in upgrade order."""
    gen = _generator()
    if shape == "stream":
        spec = gen.package_spec(0, 1)
        planned = gen.plan_releases(spec, gen.package_rng(1, 0, "graph"), count)
        return [
            {
                "name": r.name,
                "version": r.semver,
                "replaces": r.replaces,
                "skips": list(r.skips),
                "skipRange": r.skip_range,
            }
            for r in planned
        ]
    out: list[dict[str, Any]] = []
    for i in range(count):
        version = (i // 400, (i // 20) % 20, i % 20)
        text = ".".join(map(str, version))
        entry: dict[str, Any] = {"name": f"bench-operator.v{text}", "version": text}
        if i:
            entry["replaces"] = out[-1]["name"]
        if shape == "window":
            if i >= 3:
                entry["skips"] = [out[i - 3]["name"]]
            if version[2]:
                entry["skipRange"] = f">={version[0]}.{version[1]}.0 <{text}"
        elif i:
            entry["skipRange"] = f">=0.0.0 <0.{1 + i % 19}.0"
        out.append(entry)
    return out


def write_catalog(directory: Path, shape: str, count: int) -> None:
    planned = releases(shape, count)
    name = "bench-operator"

    def entries(part: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keys = ("name", "replaces", "skips", "skipRange")
        return [{k: e[k] for k in keys if e.get(k)} for e in part]

    blobs: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": name, "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": name, "name": "stable", "entries": entries(planned)},
        {
            "schema": "olm.channel",
            "package": name,
            "name": "fast",
            "entries": entries(planned[len(planned) * 2 // 3 :]),
        },
    ]
    for e in planned:
        blobs.append(
            {
                "schema": "olm.bundle",
                "package": name,
                "name": e["name"],
                "image": f"quay.io/bench/{name}-bundle:v{e['version']}",
                "properties": [
                    {"type": "olm.package", "value": {"packageName": name, "version": e["version"]}}
                ],
            }
        )
    package_dir = directory / name
    package_dir.mkdir(parents=True)
    with (package_dir / "catalog.json").open("w", encoding="utf-8") as out:
        for blob in blobs:
            out.write(json.dumps(blob) + "\n")


def child(directory: str) -> int:
    """The measured work, in a fresh interpreter: one JSON line of phase seconds."""
    from olmtool.catalog.load import load_catalog
    from olmtool.catalog.model import build_model
    from olmtool.catalog.validate import check_model

    times: dict[str, Any] = {}
    started = time.perf_counter()
    config = load_catalog(directory).config
    times["load_s"] = time.perf_counter() - started
    mark = time.perf_counter()
    catalog = build_model(config)
    times["model_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    times["edges"] = sum(len(channel.edges) for channel in catalog.channels())
    times["edges_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    for channel in catalog.channels():  # validate recomputes nothing it can reuse
        channel._edges = None
    findings = check_model(catalog)
    times["validate_s"] = time.perf_counter() - mark
    times["errors"] = sum(f.severity == "error" for f in findings)
    times["total_s"] = time.perf_counter() - started
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                times["peak_mb"] = int(line.split()[1]) / 1024
    print(json.dumps(times))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,10000", help="entries, comma-separated")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=",".join(SHAPES))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    shapes = [s for s in args.shapes.split(",") if s.strip()]
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        parser.error(f"unknown shape(s): {', '.join(sorted(unknown))}")
    columns = ("load_s", "model_s", "edges_s", "validate_s", "total_s", "peak_mb")
    print(f"{'shape':8} {'entries':>8} {'edges':>9} " + " ".join(f"{c:>10}" for c in columns))
    for shape in shapes:
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="bench-edges-") as tmp:
                write_catalog(Path(tmp), shape, size)
                argv_ = [sys.executable, str(Path(__file__).resolve()), "--child", tmp]
                try:
                    done = subprocess.run(
                        argv_, capture_output=True, text=True, timeout=args.timeout, check=True
                    )
                except subprocess.TimeoutExpired:
                    print(f"{shape:8} {size:>8} timed out after {args.timeout:.0f} s")
                    continue
                except subprocess.CalledProcessError as exc:
                    print(f"{shape:8} {size:>8} failed: {exc.stderr.strip()[-300:]}")
                    continue
            found = json.loads(done.stdout.strip().splitlines()[-1])
            cells = " ".join(f"{found[c]:>10.2f}" for c in columns)
            print(f"{shape:8} {size:>8} {found['edges']:>9} {cells}", flush=True)
            if found["errors"]:
                print(f"  ({found['errors']} error finding(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
