"""What the CRD upgrade check costs ``catalog validate``: 2,000 entries with skipRanges.

One package of ``--entries`` bundles from ``catalog_gen.py`` (replaces chains, skips of
bad releases, skipRanges over each major stream, so that thousands of upgrade edges
meet; most bundles carry a CRD as olm.bundle.object), validated in fresh processes,
median of ``--repeat``:

* ``validate``: the default run, which checks stored versions on every edge, beside the
  same run with that check switched off (the cost of the edge check);
* ``validate --select crd-upgrade``: OLM v1's preflight rules on every edge too (the
  whole catalog loaded, as every suite does), beside that run with both checks off.

    python benchmarks/bench_crd_upgrade.py [--entries 2000] [--repeat 3]

Target (issue 31): the edge check adds at most 20% to ``catalog validate``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

TARGET = 0.20

_CHILD = """
import json, sys, time
started = time.perf_counter()
from olmtool.catalog import validate as v
mode, directory = sys.argv[1], sys.argv[2]
if mode.endswith("off"):
    v.check_stored_versions = lambda catalog: []
    v.check_crd_upgrade_safety = lambda config, catalog: []
report = v.validate_catalog(directory, suites=["crd-upgrade"] if mode.startswith("suite") else [])
print(json.dumps({"seconds": time.perf_counter() - started, "findings": len(report.findings),
                  "edges": sum(1 for f in report.findings if f.check.startswith("crd-upgrade/"))}))
"""


def run(mode: str, directory: Path, repeat: int) -> tuple[float, dict[str, int]]:
    times, last = [], {}
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, mode, str(directory)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        last = json.loads(done.stdout.strip().splitlines()[-1])
        times.append(last["seconds"])
    return statistics.median(times), last


def edge_count(directory: Path) -> int:
    from olmtool.catalog import load_catalog
    from olmtool.catalog.model import build_model

    catalog = build_model(load_catalog(directory).config)
    return sum(len(c.edges) for p in catalog.packages.values() for c in p.channels.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from catalog_gen import generate

    with tempfile.TemporaryDirectory(prefix="olmtool-bench-crd-") as tmp:
        directory = Path(tmp) / "catalog"
        started = time.perf_counter()
        generate(directory, 1, args.entries)
        size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
        edges = edge_count(directory)
        print(
            f"1 package, {args.entries} bundles ({size / 1e6:.0f} MB, {edges} upgrade edges), "
            f"generated in {time.perf_counter() - started:.1f} s"
        )
        off, _ = run("off", directory, args.repeat)
        on, found = run("on", directory, args.repeat)
        suite_off, _ = run("suite-off", directory, args.repeat)
        suite, found_suite = run("suite", directory, args.repeat)
    added, added_suite = on / off - 1, suite / suite_off - 1
    print(
        f"catalog validate, seconds (median of {args.repeat}, fresh processes, imports included):"
    )
    print(f"  default, without the edge check        {off:6.2f}")
    print(
        f"  default (stored versions on each edge) {on:6.2f}  ({added:+.1%}; {found['edges']} findings)"
    )
    print(f"  --select crd-upgrade, without it       {suite_off:6.2f}")
    print(
        f"  --select crd-upgrade (OLM v1's rules)  {suite:6.2f}  ({added_suite:+.1%}; "
        f"{found_suite['edges']} findings)"
    )
    passed = added <= TARGET and added_suite <= TARGET
    print(f"edge check adds at most {TARGET:.0%}: {'yes' if passed else 'NO'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
