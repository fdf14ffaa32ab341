"""Build olmtool's own images from the lock: fetch, unpack, one layer, one config.

``build_recipe`` is reproducible (a fixed time, sorted root-owned entries, gzip without a
timestamp) and cached: ``<cache>/images/<recipe>/<fingerprint>`` holds the OCI layout,
the fingerprint being the recipe's lock section and the source of the modules that
assemble it, so a warm build only reads a directory.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import InputError
from olmtool.images.build.compose import gzip_layer
from olmtool.images.build.wheels import PipError, cache_dir, target_args
from olmtool.images.debian import apt
from olmtool.images.debian import rootfs as rootfs_module
from olmtool.images.debian.lockfile import LockedPackage, format_lock, read_lock
from olmtool.images.debian.recipes import PYTHON_311, RECIPES, Recipe
from olmtool.images.debian.rootfs import RootFs
from olmtool.images.image import (
    EPOCH,
    Image,
    digest_of,
    read_oci_layout,
    stack_image,
    write_oci_layout,
)
from olmtool.images.reference import parse_reference

Progress = Callable[[str], None] | None
LOCK = Path(__file__).with_name("images.lock")


@dataclass(frozen=True)
class BuiltImage:
    key: str
    reference: str
    layout: Path  # an OCI layout tagged with the reference's tag
    image: Image
    cached: bool
    seconds: float

    @property
    def digest(self) -> str:
        return self.image.digest

    @property
    def tag(self) -> str:
        return parse_reference(self.reference).tag or "latest"

    def as_dict(self) -> dict[str, object]:
        return {"reference": self.reference, "layout": str(self.layout), "digest": self.digest}


def build_recipe(recipe: Recipe, *, lock: Path = LOCK, progress: Progress = None) -> BuiltImage:
    """The recipe's image from the cache, else built from its locked packages."""
    started = time.monotonic()
    packages = _locked(recipe, lock)
    layout = cache_dir() / "images" / recipe.key / _fingerprint(recipe, packages)
    tag = parse_reference(recipe.reference).tag or "latest"
    try:
        image = read_oci_layout(layout, tag)
        return BuiltImage(
            recipe.key, recipe.reference, layout, image, True, time.monotonic() - started
        )
    except InputError:
        pass
    if progress:
        progress(f"building {recipe.reference} from {len(packages)} locked packages")
    image = assemble(recipe, packages, progress)
    write_oci_layout(image, layout, tag)
    return BuiltImage(
        recipe.key, recipe.reference, layout, image, False, time.monotonic() - started
    )


def python_base(*, lock: Path = LOCK, progress: Progress = None) -> BuiltImage:
    """The Python 3.11 base ``olmtool image build`` and catalog images stack on."""
    return build_recipe(PYTHON_311, lock=lock, progress=progress)


def assemble(recipe: Recipe, packages: Iterable[LockedPackage], progress: Progress = None) -> Image:
    packages = list(packages)
    debs = apt.fetch_debs([p for p in packages if p.kind == "deb"], progress)
    wheels = fetch_wheels([p for p in packages if p.kind == "wheel"], progress)
    tree = RootFs()
    for package in sorted(debs):
        tree.add_deb(debs[package])
    recipe.finish(tree, {**debs, **wheels})
    if progress:
        progress(f"writing {recipe.reference}'s layer ({len(tree.nodes)} entries)")
    tar = tree.layer()
    blob = gzip_layer(tar)
    history = [{"created": EPOCH, "created_by": f"olmtool: {recipe.key} from {_what(packages)}"}]
    config = {**recipe.config, "Labels": {"org.opencontainers.image.base.name": recipe.reference}}
    return stack_image(None, [blob], [digest_of(tar)], config, history, EPOCH)


def fetch_wheels(
    packages: list[LockedPackage], progress: Progress = None
) -> dict[LockedPackage, Path]:
    """Each locked wheel from ``<cache>/wheels`` or PyPI (pip download), hash checked."""
    store = cache_dir() / "wheels"
    found: dict[LockedPackage, Path] = {}
    for package in packages:
        path = _cached_wheel(store, package)
        if path is None:
            if progress:
                progress(f"downloading {package.pin}")
            path = _download_wheel(store, package.pin)
        apt.check_hash(package, path, "the wheel")
        found[package] = path
    return found


@dataclass(frozen=True)
class LockChange:
    section: str
    name: str
    old: str | None  # "version sha256" or None
    new: str | None

    def as_dict(self) -> dict[str, object]:
        return {"image": self.section, "package": self.name, "locked": self.old, "mirror": self.new}


def relock(
    *, lock: Path = LOCK, check: bool = False, progress: Progress = None
) -> list[LockChange]:
    """Resolve every recipe's packages on the mirror (apt-cache) and PyPI; write the lock
    unless ``check``. Returns what differs from the current lock."""
    sections: dict[str, list[LockedPackage]] = {}
    for recipe in RECIPES.values():
        if progress:
            progress(f"resolving {recipe.key}")
        packages = apt.candidates(recipe.debs) if recipe.debs else []
        for pin in recipe.wheels:
            path = _cached_wheel(cache_dir() / "wheels", _pin_package(pin)) or _download_wheel(
                cache_dir() / "wheels", pin
            )
            name, version = pin.split("==")
            packages.append(LockedPackage("wheel", name, version, apt.sha256_file(path)))
        sections[recipe.key] = packages
    old = read_lock(lock) if lock.is_file() else {}
    changes = _changes(old, sections)
    if not check and (changes or not lock.is_file()):
        from olmtool.fsutil import write_atomic

        write_atomic(lock, format_lock(sections))
    return changes


def _changes(
    old: dict[str, tuple[LockedPackage, ...]], new: dict[str, list[LockedPackage]]
) -> list[LockChange]:
    changes = []
    for section in sorted(old.keys() | new.keys()):
        before = {p.name: f"{p.version} {p.sha256}" for p in old.get(section, ())}
        after = {p.name: f"{p.version} {p.sha256}" for p in new.get(section, ())}
        for name in sorted(before.keys() | after.keys()):
            if before.get(name) != after.get(name):
                changes.append(LockChange(section, name, before.get(name), after.get(name)))
    return changes


def _locked(recipe: Recipe, lock: Path) -> tuple[LockedPackage, ...]:
    sections = read_lock(lock)
    packages = sections.get(recipe.key)
    if packages is None:
        raise InputError(f"has no [{recipe.key}] section: run `olmtool image base lock`", path=lock)
    wanted = {*recipe.debs, *(pin.split("==")[0] for pin in recipe.wheels)}
    locked = {p.name for p in packages}
    if wanted != locked:
        differ = sorted(wanted ^ locked)[0]
        raise InputError(
            f"[{recipe.key}] does not match the recipe ({differ!r}): run `olmtool image base lock`",
            path=lock,
        )
    return packages


def _fingerprint(recipe: Recipe, packages: Iterable[LockedPackage]) -> str:
    digest = hashlib.sha256()
    for package in sorted(packages):
        digest.update(package.line().encode() + b"\n")
    for module in (rootfs_module.__file__, sys.modules[Recipe.__module__].__file__, __file__):
        digest.update(Path(module or "").read_bytes())
    return digest.hexdigest()[:16]


def _what(packages: list[LockedPackage]) -> str:
    kinds = sorted({p.kind for p in packages})
    return " and ".join(f"{sum(p.kind == k for p in packages)} {k}s" for k in kinds)


def _pin_package(pin: str) -> LockedPackage:
    name, version = pin.split("==")
    return LockedPackage("wheel", name, version, "sha256:" + "0" * 64)


def _cached_wheel(store: Path, package: LockedPackage) -> Path | None:
    prefix = f"{package.name.replace('-', '_')}-{package.version}-"
    matches = sorted(store.glob(f"{prefix}*.whl")) if store.is_dir() else []
    return matches[0] if matches else None


def _download_wheel(store: Path, pin: str) -> Path:
    store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=store) as tmp:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--disable-pip-version-check",
                "--progress-bar=off",
                "-d",
                tmp,
                *target_args("3.11"),
                pin,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        files = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not files:
            lines = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
            raise PipError(
                f"pip download {pin} failed: {lines[0] if lines else done.stderr.strip()[-200:]}"
            )
        target = store / files[0].name
        os.replace(files[0], target)
        return target
