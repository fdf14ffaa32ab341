"""A copy of the small operator project in tests/bundle/project, per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent / "project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    return root


RELEASES = Path(__file__).parent / "project-releases"


@pytest.fixture
def releases_project(tmp_path: Path) -> Path:
    """A copy of tests/bundle/project-releases: gizmo-operator's four releases."""
    root = tmp_path / "releases"
    shutil.copytree(RELEASES, root)
    return root


def beside_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, name: str) -> Path:
    """tests/bundle/``source`` copied to ``tmp_path/name``, beside a copy of
    tests/bundle/project (whose CRD and example it uses), as the working directory."""
    shutil.copytree(PROJECT, tmp_path / "project")
    shutil.copytree(PROJECT.parent / source, tmp_path / name)
    monkeypatch.chdir(tmp_path / name)
    return tmp_path / name
