"""olmtool's own images from Debian packages and wheels, without a container engine:
the Python base of operator and catalog images, and local stand-ins for the upstream
etcd and busybox images (see :mod:`olmtool.images.debian.recipes`)."""

from olmtool.images.debian.apt import DebianError, LockMismatch
from olmtool.images.debian.build import (
    LOCK,
    BuiltImage,
    LockChange,
    build_recipe,
    python_base,
    relock,
)
from olmtool.images.debian.recipes import RECIPES, Recipe

__all__ = [
    "LOCK",
    "RECIPES",
    "BuiltImage",
    "DebianError",
    "LockChange",
    "LockMismatch",
    "Recipe",
    "build_recipe",
    "python_base",
    "relock",
]
