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
