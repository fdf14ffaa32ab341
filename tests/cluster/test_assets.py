"""Where the control-plane binaries are cached: keyed by version and build recipe."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from olmtool.cluster import assets


def test_cache_folder_names_the_recipe_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    digest = hashlib.sha256(assets.BUILD_SCRIPT.read_bytes()).hexdigest()[:12]
    expected = tmp_path / "olmtool" / "assets" / f"kubernetes-1.20.2-{digest}"
    assert assets.default_assets_dir() == expected


def test_the_script_computes_the_same_default_folder(tmp_path: Path) -> None:
    """The script's own default (used when run by hand) matches the Python side."""
    script = assets.BUILD_SCRIPT.read_text()
    assert 'RECIPE="$(sha256sum "$0" | cut -c1-12)"' in script
    out = subprocess.run(
        ["sha256sum", str(assets.BUILD_SCRIPT)], capture_output=True, text=True, check=True
    )
    assert out.stdout[:12] == assets.recipe_revision()


def test_the_recipe_applies_the_zero_value_fix_or_refuses() -> None:
    script = assets.BUILD_SCRIPT.read_text()
    for vendored in (
        "vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go",
        "vendor/github.com/go-openapi/validate/type.go",
    ):
        assert vendored in script
    assert "pattern not found" in script


def test_stale_builds_are_removed_once_the_new_one_is_in_place(tmp_path: Path) -> None:
    current = tmp_path / "kubernetes-1.20.2-new"
    for name in ("kubernetes-1.20.2", "kubernetes-1.20.2-old", "kubernetes-1.20.2-new.tmp.x"):
        (tmp_path / name).mkdir()
    current.mkdir()
    (tmp_path / "other").mkdir()
    assets._remove_stale_builds(current)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["kubernetes-1.20.2-new", "kubernetes-1.20.2-new.tmp.x", "other"]


BUILD_UNDER_PYTEST = """
import subprocess
from pathlib import Path

import tests.e2e.conftest as e2e


def test_build(request, monkeypatch):
    def build():
        subprocess.run(["sh", "-c", "echo 'build-kube-assets: ==> building' >&2"], check=True)
        return Path("/built")

    monkeypatch.setattr(e2e, "build_assets", build)
    monkeypatch.setattr(e2e, "default_assets_dir", lambda: Path("/cache/assets"))
    assert e2e._build_in_sight(request.config) == Path("/built")
"""


def test_a_build_inside_pytest_shows_its_stages(tmp_path: Path) -> None:
    """The e2e fixture's build is not a silent wait: with pytest capturing output (its
    default), the header and the build script's stage lines still reach the terminal."""
    (tmp_path / "test_build.py").write_text(BUILD_UNDER_PYTEST)
    repo = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "building the Kubernetes control plane for the e2e tests into /cache/assets" in (
        run.stderr
    )
    assert "build-kube-assets: ==> building" in run.stderr
