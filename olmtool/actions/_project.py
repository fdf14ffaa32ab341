"""The project file's sections, for actions configured by ``olmtool.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from olmtool.config import Project, find_config, load_project
from olmtool.errors import InputError
from olmtool.waivers import Waiver

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


def project_waivers(config: Path | None) -> list[Waiver]:
    """The waivers of ``validate.ignore`` in ``config``, or in the ``olmtool.yaml`` found
    upward from the working directory; none without a project file."""
    path = config or find_config()
    return load_project(path).waivers if path is not None else []
