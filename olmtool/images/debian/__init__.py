"""olmtool's own images from Debian packages and wheels, without a container engine:
the Python base of operator and catalog images, and local stand-ins for the upstream
etcd and busybox images (see :mod:`olmtool.images.debian.recipes`)."""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.images.debian.apt": (
            "DebianError",
            "LockMismatch",
        ),
        "olmtool.images.debian.build": (
            "LOCK",
            "BuiltImage",
            "LockChange",
            "build_recipe",
            "python_base",
            "relock",
        ),
        "olmtool.images.debian.recipes": (
            "RECIPES",
            "Recipe",
        ),
    },
)
