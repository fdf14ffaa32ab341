"""The Makefile's first-hour promises: the control plane is found or built before pytest
starts (a build shows its stages there, not as a silent pytest), through the CLI (no
``python -m`` of a module the package face imports), and installs stay quiet."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _dry_run(target: str, tmp_path: Path) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("no make")
    run = subprocess.run(
        ["make", "-n", target, f"VENV={tmp_path / 'venv'}"],  # -n: nothing is run
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in run.stdout.splitlines() if not line.startswith("make")]


def test_make_test_finds_or_builds_the_control_plane_before_any_pytest(tmp_path: Path) -> None:
    lines = _dry_run("test", tmp_path)
    assets = [i for i, line in enumerate(lines) if "olmtool cluster assets --optional" in line]
    pytests = [i for i, line in enumerate(lines) if "/pytest " in line]
    assert assets and pytests and assets[0] < pytests[0]
    e2e = next(i for i, line in enumerate(lines) if "pytest -m e2e -q" in line)
    assert "olmtool cluster assets --optional" in lines[e2e - 1]  # make test-e2e alone too


def test_make_assets_runs_the_cli_command(tmp_path: Path) -> None:
    lines = _dry_run("assets", tmp_path)
    assert lines[-1] == f"{tmp_path / 'venv'}/bin/olmtool cluster assets"
    assert not any("-m olmtool.cluster.assets" in line for line in lines)


def test_the_editable_install_is_a_plain_path_entry() -> None:
    """``package-dir`` said outright makes setuptools' editable install a .pth entry,
    without the import-hook strategy's multi-line warning on every ``make install``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["package-dir"] == {"": "."}


def test_make_help_says_what_demo_does() -> None:
    text = (REPO / "Makefile").read_text()
    help_text = text[text.index("help:") : text.index("$(STAMP):")]
    for promise in ("bundle built and validated", "catalog published", "about 8 min"):
        assert promise in help_text
