"""The operator image: a dependencies layer and an application layer, on scratch or a base.

Layers are reproducible (:func:`olmtool.images.layer_tar`: sorted, mtime 0, root-owned;
pip's bytecode left out, hash-based bytecode compiled in: :mod:`olmtool.images.bytecode`), so the same sources and lock give the same digest, and a code change only
changes the small application layer: a push then uploads that layer, the config and the
manifest (the registry client skips blobs the registry has).
"""

from __future__ import annotations

import gzip
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from olmtool.errors import InputError
from olmtool.images.build.settings import ImageSettings
from olmtool.images.build.wheels import WheelSource, cache_dir, install_wheels
from olmtool.images.bytecode import compile_sources
from olmtool.images.image import (
    Image,
    digest_of,
    layer_tar,
    stack_image,
)
from olmtool.jsonfields import json_fields

APP = "app"
SITE_PACKAGES = f"{APP}/site-packages"
_SKIPPED_DIRS = ("__pycache__",)
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class Provenance:
    """What the OCI labels say about the sources: the git revision and a fixed time."""

    revision: str | None
    created: str
    created_from: str  # "SOURCE_DATE_EPOCH", "git commit time" or "epoch"


@dataclass(frozen=True)
class LayerInfo:
    name: str
    digest: str
    diff_id: str
    size: int
    uncompressed_size: int

    def as_dict(self) -> dict[str, object]:
        return json_fields(self, skip=("diff_id",))


@dataclass(frozen=True)
class OperatorImage:
    image: Image
    layers: tuple[LayerInfo, ...]  # ours only, bottom first
    base_layers: int


def provenance(root: Path) -> Provenance:
    """The git HEAD of ``root`` (if any) and the image time: ``$SOURCE_DATE_EPOCH``, else
    the HEAD commit's time, else 1970-01-01 (never the build's clock)."""
    revision = _git(root, "rev-parse", "HEAD")
    if epoch := os.environ.get("SOURCE_DATE_EPOCH"):
        if not epoch.isdigit():
            raise InputError(f"SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds")
        return Provenance(revision, _rfc3339(int(epoch)), "SOURCE_DATE_EPOCH")
    commit_time = _git(root, "log", "-1", "--format=%ct") if revision else None
    if commit_time and commit_time.isdigit():
        return Provenance(revision, _rfc3339(int(commit_time)), "git commit time")
    return Provenance(revision, _rfc3339(0), "epoch")


def build_operator_image(
    settings: ImageSettings,
    root: Path,
    *,
    labels: Mapping[str, str],
    created: str,
    base: Image | None = None,
    wheels: WheelSource = WheelSource(),
    progress: Callable[[str], None] | None = None,
) -> OperatorImage:
    """The image ``settings`` describes (paths relative to ``root``), stacked on ``base``."""
    app_files, app_exec = package_files(root, settings.packages)
    app_files.update(compile_sources(app_files, settings.python))
    layers: list[tuple[str, bytes, str]] = []
    if settings.requirements:
        lock = root / settings.requirements
        files, executable = dependency_files(lock, settings.python, wheels, progress)
        if progress:
            progress("compiling the dependencies' bytecode")
        files.update(compile_sources(files, settings.python))
        layers.append(("dependencies", layer_tar(files, executable=executable), lock.name))
    layers.append(("application", layer_tar(app_files, executable=app_exec), "packages"))
    if progress:
        progress("compressing layers")
    blobs = [gzip_layer(tar) for _, tar, _ in layers]
    infos = tuple(
        LayerInfo(name, digest_of(blob), digest_of(tar), len(blob), len(tar))
        for (name, tar, _), blob in zip(layers, blobs, strict=True)
    )
    history = [
        {"created": created, "created_by": f"olmtool image build: {name} ({what})"}
        for name, _, what in layers
    ]
    config = image_config(settings, labels, base, has_dependencies=bool(settings.requirements))
    image = stack_image(base, blobs, [i.diff_id for i in infos], config, history, created)
    return OperatorImage(image, infos, len(base.layers) if base else 0)


def package_files(root: Path, packages: Sequence[str]) -> tuple[dict[str, bytes], set[str]]:
    """Every file of every package directory, at ``app/<dir name>/...``."""
    files: dict[str, bytes] = {}
    executable: set[str] = set()
    for package in packages:
        directory = root / package
        if not directory.is_dir():
            raise InputError("no such package directory (image.packages)", path=directory)
        _add_tree(directory, f"{APP}/{directory.name}", files, executable)
    return files, executable


def dependency_files(
    lock: Path,
    python: str,
    wheels: WheelSource,
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, bytes], set[str]]:
    """The locked wheels as pip installs them, at ``app/site-packages/...``."""
    files: dict[str, bytes] = {}
    executable: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="olmtool-site-") as tmp:
        target = Path(tmp) / "site-packages"
        install_wheels(lock, target, python=python, wheels=wheels, progress=progress)
        if target.is_dir():
            _add_tree(target, SITE_PACKAGES, files, executable)
    return files, executable


def image_config(
    settings: ImageSettings,
    labels: Mapping[str, str],
    base: Image | None,
    *,
    has_dependencies: bool,
) -> dict[str, Any]:
    """The image config's ``config``: the base's, with our command, env and labels.

    Like a Dockerfile's ENTRYPOINT, ours replaces the base's Entrypoint and Cmd; Env is
    the base's (PATH included) with ours overriding or appended; labels likewise.
    """
    config = dict((base.config_json.get("config") or {}) if base else {})
    python_path = f"/{SITE_PACKAGES}:/{APP}" if has_dependencies else f"/{APP}"
    env = merge_env(config.get("Env") or [], {"PYTHONPATH": python_path, **settings.env})
    config.update(
        Env=env,
        Entrypoint=list(settings.entrypoint),
        WorkingDir=settings.working_dir,
        Labels={**(config.get("Labels") or {}), **labels},
    )
    config.pop("Cmd", None)
    if settings.cmd:
        config["Cmd"] = list(settings.cmd)
    return config


def merge_env(base: Sequence[str], ours: Mapping[str, str]) -> list[str]:
    """``NAME=value`` items: the base's in order (ours replacing theirs), then ours."""
    merged = dict(item.partition("=")[::2] for item in base)
    merged.update(ours)
    return [f"{name}={value}" for name, value in merged.items()]


def gzip_layer(tar: bytes) -> bytes:
    """gzip (mtime 0, so reproducible), cached by content: the dependencies layer is tens
    of MB and unchanged between most builds."""
    cached = cache_dir() / "layers" / f"{digest_of(tar).removeprefix('sha256:')}.tar.gz"
    try:
        return cached.read_bytes()
    except OSError:
        pass
    blob = gzip.compress(tar, mtime=0)
    write_cache(cached, blob)
    return blob


def write_cache(path: Path, data: bytes) -> None:
    """A cache file written whole or not at all; a cache we cannot write only costs time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
    except OSError:
        pass


def _add_tree(directory: Path, prefix: str, files: dict[str, bytes], executable: set[str]) -> None:
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        relative = Path(dirpath).relative_to(directory).as_posix()
        for name in sorted(filenames):
            if name.endswith(_SKIPPED_SUFFIXES):
                continue
            path = Path(dirpath) / name
            image_path = "/".join(p for p in (prefix, relative, name) if p and p != ".")
            files[image_path] = path.read_bytes()
            if path.stat().st_mode & 0o111:  # the mode git keeps, whoever runs this
                executable.add(image_path)


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
