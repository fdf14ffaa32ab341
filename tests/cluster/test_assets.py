"""Where the control-plane binaries are cached: keyed by version and build recipe."""

from __future__ import annotations

import hashlib
import subprocess
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
