"""The project file's sections, for actions configured by ``olmtool.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from olmtool.config import Project, load_project
from olmtool.errors import InputError

# What each section needs at least, shown when it is missing.
_SHAPES = {
    "crd": "crd: {modules: [...], output: ...}",
    "bundle": "bundle: {package: ..., version: ...}",
    "catalog": "catalog: {packages: [...]}",
    "image": "image: {name: ..., packages: [...], entrypoint: [...]}",
}


def project_section(config: Path | None, section: str) -> tuple[Project, Any]:
    """The project (``config``, or ``olmtool.yaml`` found upward) and its ``section``."""
    project = load_project(config)
    settings = getattr(project.settings, section)
    if settings is None:
        raise InputError(f"has no {section} section ({_SHAPES[section]})", path=project.file)
    return project, settings
