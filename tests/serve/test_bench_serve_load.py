"""Smoke test of benchmarks/bench_serve_load.py (what ``make bench`` runs after the
catalog table): a tiny catalog, a few clients, and a stand-in opm beside olmtool."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_serve_load.py"

# opm's arguments (serve DIR -p PORT --cache-dir D) served by olmtool
FAKE_OPM = """#!/bin/sh
[ "$1" = serve ] || exit 2
exec {python} -m olmtool catalog serve "$2" --port "$4" --cache-dir "$6" --http-port 0 --quiet
"""


def test_load_bench_prints_refusals_and_latency_side_by_side(tmp_path: Path) -> None:
    opm = tmp_path / "opm"
    opm.write_text(FAKE_OPM.format(python=sys.executable))
    opm.chmod(0o755)
    args = ["--packages", "1", "--bundles-per-package", "4", "--clients", "3", "--calls", "2"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--workdir", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPM": str(opm)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [
        [cell.strip() for cell in line.strip("│ ").split("│")]
        for line in done.stdout.splitlines()
        if line.startswith("│")
    ]
    assert [row[:3] for row in rows] == [
        ["3 clients, own channels", "olmtool", "6"],
        ["3 clients, own channels", "opm", "6"],
        ["3 clients, 1 channel", "olmtool", "6"],
        ["3 clients, 1 channel", "opm", "6"],
    ]
    assert all(row[3] == "0" and float(row[5]) > 0 for row in rows)  # refused, p99 ms
    assert "olmtool: peak RSS" in done.stdout and "opm: peak RSS" in done.stdout
