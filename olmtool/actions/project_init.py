"""``init``: a new project's files (olmtool.yaml, a schema module, a base CSV, a sample).

>>> result = project_init(Path("foo"), package="foo-operator", group="demo.example.com",
...                       kind="Widget")
>>> [str(p) for p in result.written][:2]
['foo/olmtool.yaml', 'foo/foo_operator/__init__.py']

Nothing is written when any file exists already, unless ``force``; each file is written
atomically (:func:`olmtool.fsutil.write_atomic`), ``olmtool.yaml`` last, so a project file
never names files that are not there yet.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from olmtool.errors import InputError, display_path
from olmtool.fsutil import write_atomic
from olmtool.scaffold import (
    DEFAULT_API_VERSION,
    DEFAULT_CHANNEL,
    DEFAULT_IMAGE,
    DEFAULT_INSTALL_MODES,
    DEFAULT_VERSION,
    PROJECT_FILE,
    ProjectNames,
    bundle_dir,
    next_steps,
    project_names,
    render_project,
)


@dataclass
class ProjectInitResult:
    directory: Path
    names: ProjectNames
    written: list[Path]
    replaced: list[Path] = field(default_factory=list)
    """Files that existed before (only with ``force``)."""

    @property
    def next_steps(self) -> list[str]:
        return next_steps(self.names, shlex.quote(display_path(self.directory)))

    def as_dict(self) -> dict[str, object]:
        return {
            "directory": display_path(self.directory),
            "package": self.names.package,
            "group": self.names.group,
            "kind": self.names.kind,
            "apiVersion": self.names.api_version,
            "version": self.names.version,
            "bundle": bundle_dir(self.names),
            "written": [display_path(p) for p in self.written],
            "replaced": [display_path(p) for p in self.replaced],
            "nextSteps": self.next_steps,
        }


def project_init(
    directory: Path = Path("."),
    *,
    package: str,
    group: str,
    kind: str,
    version: str = DEFAULT_VERSION,
    api_version: str = DEFAULT_API_VERSION,
    install_modes: Sequence[str] = DEFAULT_INSTALL_MODES,
    channel: str = DEFAULT_CHANNEL,
    image: str = DEFAULT_IMAGE,
    domain: str | None = None,
    force: bool = False,
) -> ProjectInitResult:
    """Write a new project into ``directory`` (created when missing)."""
    names = project_names(
        package=package,
        group=group,
        kind=kind,
        version=version,
        api_version=api_version,
        install_modes=install_modes,
        channel=channel,
        image=image,
        domain=domain,
    )
    files = {directory / name: text for name, text in render_project(names).items()}
    existing = _existing(list(files), force=force)
    project_file = directory / PROJECT_FILE
    for path in sorted(files, key=lambda p: p == project_file):  # olmtool.yaml last
        _write(path, files[path])
    return ProjectInitResult(directory, names, list(files), existing)


def _existing(paths: list[Path], *, force: bool) -> list[Path]:
    """The paths already there; refused unless ``force`` (a directory always)."""
    existing = [p for p in paths if os.path.lexists(p)]
    for path in existing:
        if path.is_dir() and not path.is_symlink():
            raise InputError("is a directory, not a file olmtool init can write", path=path)
    if existing and not force:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise InputError(f"already exists{more}; pass --force to overwrite", path=existing[0])
    return existing


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:  # a parent that is a file, no permission, a read-only disk
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
