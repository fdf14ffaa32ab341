"""``image base lock`` and ``cluster images``: olmtool's own images from Debian packages.

>>> changes = image_base_lock(check=True)   # [] when the lock matches the mirror
>>> [built.reference for built in cluster_images()]
['docker.io/library/busybox:1.35', 'docker.io/library/python:3.11', ...]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import InputError, display_path
from olmtool.images.debian import LOCK, RECIPES, BuiltImage, LockChange, build_recipe, relock


@dataclass
class BaseLockResult:
    lock: Path
    check: bool
    changes: list[LockChange]

    @property
    def current(self) -> bool:
        return not self.changes

    def as_dict(self) -> dict[str, object]:
        return {
            "lock": display_path(self.lock),
            "check": self.check,
            "current": self.current,
            "changes": [change.as_dict() for change in self.changes],
        }


@dataclass
class ClusterImagesResult:
    images: list[BuiltImage]
    seconds: float

    def as_list(self) -> list[dict[str, object]]:
        return [built.as_dict() for built in self.images]


def image_base_lock(
    *, lock: Path = LOCK, check: bool = False, progress: Callable[[str], None] | None = None
) -> BaseLockResult:
    """Resolve every image's packages on the Debian mirror and PyPI; rewrite the lock
    (or, with ``check``, only compare)."""
    return BaseLockResult(lock, check, relock(lock=lock, check=check, progress=progress))


def cluster_images(
    references: Sequence[str] = (),
    *,
    lock: Path = LOCK,
    progress: Callable[[str], None] | None = None,
) -> ClusterImagesResult:
    """The well-known images the local cluster and the tests use, built or found in the
    cache (all, or those ``references`` name), sorted by reference."""
    started = time.monotonic()
    recipes = sorted(RECIPES.values(), key=lambda recipe: recipe.reference)
    if references:
        known = {recipe.reference: recipe for recipe in recipes}
        if unknown := [ref for ref in references if ref not in known]:
            names = ", ".join(known)
            raise InputError(f"{unknown[0]} is not one of olmtool's images ({names})")
        recipes = [known[ref] for ref in dict.fromkeys(references)]
    images = [build_recipe(recipe, lock=lock, progress=progress) for recipe in recipes]
    return ClusterImagesResult(images, time.monotonic() - started)
