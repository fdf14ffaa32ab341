"""Smoke test of the catalog benchmarks at the smallest size.

The benchmark numbers are only worth something when the generated catalog is one that
olmtool (and opm) accept, so the generator's output must validate without a finding; the
runner must get through every stage and print its table and verdicts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from olmtool.catalog import declcfg as dc
from olmtool.catalog.load import load_catalog
from olmtool.catalog.validate import validate_catalog

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


# Stands in for opm: olmtool's own commands behind opm's arguments (serve DIR -p PORT).
FAKE_OPM = """#!/bin/sh
command=$1; shift
case $command in
  validate) exec {python} -m olmtool catalog validate "$1" ;;
  render) exec {python} -m olmtool catalog render "$1" -o json ;;
  serve) exec {python} -m olmtool catalog serve "$1" --port "$3" --http-port 0 --quiet ;;
esac
exit 2
"""


def run(script: str, *args: str, opm: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPM"}  # opm is optional
    if opm is not None:
        env["OPM"] = str(opm)
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_generated_catalog_is_valid_and_realistic(tmp_path: Path) -> None:
    out = tmp_path / "catalog"
    done = run("catalog_gen.py", str(out), "--packages", "1", "--bundles-per-package", "20")
    assert done.returncode == 0, done.stderr
    assert "1 packages" in done.stdout

    report = validate_catalog(out)
    assert report.findings == []

    config = load_catalog(out).config
    assert len(config.bundles) == 20
    assert config.packages[0].icon is not None
    assert config.deprecations
    payloads = {p.type for b in config.bundles for p in b.properties}
    assert {dc.PROP_BUNDLE_OBJECT, dc.PROP_CSV_METADATA, dc.PROP_GVK} <= payloads
    entries = [e for c in config.channels for e in c.entries]
    assert any(e.skips for e in entries)
    assert any(e.skip_range for e in entries)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert 15_000 < size / len(config.bundles) < 30_000  # ~22 KB a bundle, as real catalogs


def test_generator_is_deterministic(tmp_path: Path) -> None:
    for name in ("a", "b"):
        args = ("--packages", "2", "--bundles-per-package", "3", "--seed", "7")
        assert run("catalog_gen.py", str(tmp_path / name), *args).returncode == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.json"))
    assert len(files) == 2
    for file in files:
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


def test_runner_prints_table(tmp_path: Path) -> None:
    done = run("catalog_bench.py", "--sizes", "1", "--quick", "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Catalog benchmarks" in out
    row = next(line for line in out.splitlines() if "olmtool" in line and "│" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells[:3] == ["olmtool", "1", "20"]
    assert float(cells[4]) > 0 and float(cells[5]) > 0  # validate s, MB
    assert "serve: not available" in out or float(cells[8]) > 0  # serve up s
    assert "opm: not measured (set OPM=/path/to/opm)" in out
    assert "memory at most linear" in out
    assert "olmtool/floor" in out and "x the floor: " in out  # validate beside its floor
    assert "total wall time" in out


def test_runner_compares_with_opm(tmp_path: Path) -> None:
    opm = tmp_path / "opm"
    opm.write_text(FAKE_OPM.format(python=sys.executable))
    opm.chmod(0o755)
    done = run("catalog_bench.py", "--sizes", "1", "--quick", "--workdir", str(tmp_path), opm=opm)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert any(line.startswith("│ opm") for line in out.splitlines())
    assert "olmtool / opm" in out
    assert "validate no slower than opm: olmtool/opm = " in out
    assert "serve RSS <= 1/2 opm at largest size: olmtool/opm = " in out
