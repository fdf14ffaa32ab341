"""``image lock``: pip resolves ``requirements.in`` into the hash-checked lock file.

The input is the lock's sibling with the suffix ``.in`` (``operator/requirements.in`` for
``image.requirements: operator/requirements.lock``), the convention of pip-tools.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool.actions._project import project_section
from olmtool.errors import InputError, display_path
from olmtool.images import WheelSource, lock_requirements


@dataclass
class ImageLockResult:
    lock: Path
    source: Path
    python: str
    pins: list[str]

    def as_dict(self) -> dict[str, object]:
        return {
            "lock": display_path(self.lock),
            "source": display_path(self.source),
            "python": self.python,
            "pins": self.pins,
        }


def image_lock(
    *,
    config: Path | None = None,
    find_links: Sequence[Path] = (),
    no_index: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImageLockResult:
    """Rewrite ``image.requirements`` from its ``.in`` file for ``image.python``."""
    project, settings = project_section(config, "image")
    if not settings.requirements:
        raise InputError("image has no requirements (the lock file) to write", path=project.file)
    lock = project.path(settings.requirements)
    source = lock.with_suffix(".in")
    pins = lock_requirements(
        source,
        lock,
        python=settings.python,
        wheels=WheelSource(tuple(find_links), index=not no_index),
        progress=progress,
    )
    return ImageLockResult(lock, source, settings.python, pins)
