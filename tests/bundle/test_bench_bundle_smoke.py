"""Smoke test of the bundle benchmark at a tiny size: the generated bundle must be one
that olmtool validates cleanly (else the numbers measure error paths), and the runner must
get through every stage and print its table."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from olmtool.actions import bundle_validate

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_bundle_render.py"


def test_generated_bundle_is_valid_and_has_many_crds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_bundle_render", SCRIPT)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    sizes = bench.generate_bundle(tmp_path / "bundle", 0.5)
    assert sum(sizes.values()) > 400_000 and len(sizes) > 3
    report = bundle_validate(tmp_path / "bundle")
    assert report.findings == []
    csv = (tmp_path / "bundle/manifests/widget-operator.clusterserviceversion.yaml").read_text()
    assert "createdAt: 2024-05-02T10:00:00Z\n" in csv  # unquoted, as real CSVs have it


def test_runner_prints_its_table_without_opm() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPM"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "0.05", "--repeat", "1", "--no-opm"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "render CLI" in done.stdout and "failed" not in done.stdout
    assert "opm: not measured (--no-opm)" in done.stdout
