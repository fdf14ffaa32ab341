"""Smoke test of the upgrade-edges benchmark at a tiny size: every shape's catalog is
valid (no error findings, else the numbers measure error paths) and the table prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_upgrade_edges.py"


def test_runner_prints_every_shape_without_errors() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "60"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["stream", "window", "shared"], done.stdout
    assert "error finding" not in done.stdout and "failed" not in done.stdout
