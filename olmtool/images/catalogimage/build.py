"""Catalog images: olmtool serving ``/configs`` on its Python base, or ``/configs`` on opm.

The serving image is four parts, bottom first, each reproducible (sorted, root-owned,
mtime 0, hash-based bytecode only; gzip without a timestamp; created at the epoch), so the same
catalog, olmtool source and pins give the same digest:

1. olmtool's Python base (:func:`olmtool.images.debian.python_base`, kept byte for byte);
2. ``/app/site-packages``: the distributions ``olmtool catalog serve`` imports
   (:data:`SERVE_REQUIREMENTS` and what they require, :func:`runtime_pins`), each at the
   version this environment runs, installed by pip for the image's platform (CPython
   3.11, manylinux2014 x86_64) and cached by the pins (``<cache>/catalog-site/``);
3. ``/app/olmtool`` (the running olmtool's package files, its own bytecode compiled) and
   ``/usr/bin/grpc_health_probe`` (a ``#!/usr/bin/python3`` script over
   :mod:`olmtool.serve.healthprobe`: on the base's merged ``/usr`` it is also
   ``/bin/grpc_health_probe``);
4. the catalog, as the caller lays it out (``configs/...``).

The config is the base's (User, PATH, LANG, ...) with ``PYTHONPATH=/app/site-packages:/app``
and the caller's Entrypoint, Cmd, ExposedPorts and labels.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmtool import __version__
from olmtool.errors import InputError
from olmtool.images.build.compose import LayerInfo, gzip_layer, merge_env, write_cache
from olmtool.images.build.wheels import (
    IMPLEMENTATION,
    PLATFORM,
    PipError,
    WheelSource,
    cache_dir,
    canonical_name,
    normalize_tree,
    run_pip,
    target_args,
)
from olmtool.images.bytecode import compile_sources
from olmtool.images.image import EPOCH, Image, digest_of, layer_tar, stack_image

Progress = Callable[[str], None] | None

PYTHON = "3.11"  # olmtool's Python base: Debian bookworm's CPython
PYTHON_FULL = "3.11.2"
# What ``olmtool catalog serve`` imports (the CLI: typer, rich; loading: PyYAML, semver,
# pathspec, orjson; serving: grpcio and its health, reflection and protobuf), the roots of
# :func:`runtime_pins`; tests/catalog/test_catalog_image.py checks a real run against it.
SERVE_REQUIREMENTS = (
    "typer",
    "rich",
    "pyyaml",
    "semver",
    "pathspec",
    "orjson",
    "grpcio",
    "grpcio-health-checking",
    "grpcio-reflection",
    "protobuf",
)
APP = "app"
SITE_PACKAGES = f"{APP}/site-packages"
PROBE_PATH = "usr/bin/grpc_health_probe"
PYTHON_ENV = {
    "PYTHONPATH": f"/{SITE_PACKAGES}:/{APP}",
    "PYTHONDONTWRITEBYTECODE": "1",  # a read-only root: nothing to write, nothing to try
    "PYTHONUNBUFFERED": "1",  # log lines reach the container log at once
}
# The probe runs however it is started (kubelet's exec, runc exec, a shell): it finds
# olmtool in /app itself when PYTHONPATH is not set. It loads healthprobe.py alone, not
# the olmtool package (whose __init__ imports more): every probe starts a Python, and
# OLM's liveness probe allows it one second.
PROBE_SCRIPT = b"""#!/usr/bin/python3
# grpc_health_probe: grpc-ecosystem/grpc-health-probe's flags and exit codes (olmtool)
import os
import sys
from importlib.machinery import PathFinder
from importlib.util import module_from_spec, spec_from_file_location

sys.path[:0] = [p for p in ("/app/site-packages", "/app") if os.path.isdir(p) and p not in sys.path]
package = PathFinder.find_spec("olmtool")
if package is None or not package.submodule_search_locations:
    sys.exit("grpc_health_probe: olmtool is not installed")
path = os.path.join(package.submodule_search_locations[0], "serve", "healthprobe.py")
spec = spec_from_file_location("grpc_health_probe", path)
probe = module_from_spec(spec)
spec.loader.exec_module(probe)
sys.exit(probe.main())
"""
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
# Bump when what a cached site-packages tar holds changes for the same pins.
_SITE_FORMAT = "2"  # 2: with bytecode


@dataclass(frozen=True)
class ImageLayer:
    """One layer to stack: its name, uncompressed tar and what it holds (for history)."""

    name: str
    tar: bytes
    what: str


@dataclass(frozen=True)
class StackedImage:
    """An image and what was stacked: ``layers`` are ours (bottom first), on ``base``
    (a reference, None for scratch) of ``base_layers`` layers."""

    image: Image
    layers: tuple[LayerInfo, ...]
    base: str | None
    base_layers: int


def serving_image(
    configs: Mapping[str, bytes],
    *,
    labels: Mapping[str, str],
    entrypoint: Sequence[str],
    cmd: Sequence[str],
    ports: Sequence[str] = (),
    pins: Sequence[str] | None = None,
    wheels: WheelSource = WheelSource(),
    progress: Progress = None,
) -> StackedImage:
    """olmtool's Python base + the serve dependencies (``pins``, default
    :func:`runtime_pins`) + olmtool and the health probe + ``configs``."""
    from olmtool.images import debian  # apt and the Debian lock: only for this image

    if progress:
        progress("olmtool's Python base from Debian packages")
    base = debian.python_base(progress=progress)
    pins = runtime_pins() if pins is None else sorted(pins)
    layers = []
    if pins:
        layers.append(
            ImageLayer(
                "dependencies",
                site_packages_tar(pins, wheels=wheels, progress=progress),
                f"{len(pins)} distributions for CPython {PYTHON}: {' '.join(pins)}",
            )
        )
    files, executable = olmtool_files()
    files.update(compile_sources(files, PYTHON))
    files[PROBE_PATH] = PROBE_SCRIPT
    executable.add(PROBE_PATH)
    layers.append(
        ImageLayer(
            "olmtool",
            layer_tar(files, executable=executable),
            f"olmtool {__version__} and grpc_health_probe",
        )
    )
    layers.append(ImageLayer("configs", layer_tar(configs), "the catalog"))
    config = dict(base.image.config_json.get("config") or {})
    config.update(
        Env=merge_env(config.get("Env") or [], PYTHON_ENV),
        Entrypoint=list(entrypoint),
        Cmd=list(cmd),
        Labels={**(config.get("Labels") or {}), **labels},
    )
    if ports:
        config["ExposedPorts"] = {port: {} for port in ports}
    return stack_layers(base.image, layers, config, base_reference=base.reference)


def configs_on_base(
    base: Image,
    configs: Mapping[str, bytes],
    *,
    base_reference: str,
    labels: Mapping[str, str],
    entrypoint: Sequence[str],
    cmd: Sequence[str],
) -> StackedImage:
    """``configs`` in one layer on ``base``, with its Entrypoint, Cmd and labels set:
    ``FROM base``, ``ADD``, ``ENTRYPOINT``, ``CMD``, ``LABEL`` without a container engine."""
    config = dict(base.config_json.get("config") or {})
    config.update(
        Entrypoint=list(entrypoint),
        Cmd=list(cmd),
        Labels={**(config.get("Labels") or {}), **labels},
    )
    layers = [ImageLayer("configs", layer_tar(configs), "the catalog")]
    return stack_layers(base, layers, config, base_reference=base_reference)


def stack_layers(
    base: Image | None,
    layers: Sequence[ImageLayer],
    config: Mapping[str, Any],
    *,
    base_reference: str | None,
    created: str = EPOCH,
) -> StackedImage:
    blobs = [gzip_layer(layer.tar) for layer in layers]
    infos = tuple(
        LayerInfo(layer.name, digest_of(blob), digest_of(layer.tar), len(blob), len(layer.tar))
        for layer, blob in zip(layers, blobs, strict=True)
    )
    history = [
        {"created": created, "created_by": f"olmtool catalog publish: {layer.name} ({layer.what})"}
        for layer in layers
    ]
    image = stack_image(base, blobs, [info.diff_id for info in infos], config, history, created)
    return StackedImage(image, infos, base_reference, len(base.layers) if base else 0)


# --- what goes in ---------------------------------------------------------------------------


def runtime_pins(requirements: Iterable[str] = SERVE_REQUIREMENTS) -> list[str]:
    """``name==version`` for ``requirements`` and everything they require on the image's
    platform (markers evaluated for CPython 3.11 on Linux x86_64, extras followed), each
    at the version installed here (importlib.metadata), sorted."""
    requirement_class = _requirement_class()
    environment = {
        "python_version": PYTHON,
        "python_full_version": PYTHON_FULL,
        "implementation_name": "cpython",
        "implementation_version": PYTHON_FULL,
        "platform_python_implementation": "CPython",
        "os_name": "posix",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "platform_release": "",
        "platform_version": "",
    }
    versions: dict[str, str] = {}
    followed: set[tuple[str, str]] = set()  # (distribution, extra) whose requires are in
    todo = [requirement_class(text) for text in requirements]
    while todo:
        requirement = todo.pop()
        name = canonical_name(requirement.name)
        try:
            distribution = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            raise InputError(
                f"{requirement.name} is not installed here, and olmtool's catalog image "
                "needs it (`olmtool catalog serve` imports it): reinstall olmtool"
            ) from None
        versions[name] = distribution.version
        for extra in ("", *sorted(requirement.extras)):
            if (name, extra) in followed:
                continue
            followed.add((name, extra))
            for text in distribution.requires or ():
                needed = requirement_class(text)
                if needed.marker is None or needed.marker.evaluate({**environment, "extra": extra}):
                    todo.append(needed)
    return sorted(f"{name}=={version}" for name, version in versions.items())


def _requirement_class() -> Any:
    """``packaging``'s Requirement: the installed one, else the copy pip carries (pip
    installs the wheels, so it is here whenever this runs)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - packaging comes with most environments
        from pip._vendor.packaging.requirements import Requirement
    return Requirement


def site_packages_tar(
    pins: Sequence[str],
    *,
    python: str = PYTHON,
    wheels: WheelSource = WheelSource(),
    progress: Progress = None,
) -> bytes:
    """The ``app/site-packages`` layer's tar: ``pip install --target`` of exactly ``pins``
    (no dependency resolution) for the image's platform, normalized; cached by the pins."""
    pins = sorted(pins)
    key = "\0".join([*pins, python, PLATFORM, IMPLEMENTATION, _SITE_FORMAT]).encode()
    cached = cache_dir() / "catalog-site" / f"{hashlib.sha256(key).hexdigest()[:32]}.tar"
    try:
        return cached.read_bytes()
    except OSError:
        pass
    store = cache_dir() / "wheels"
    store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="olmtool-catalog-site-") as tmp:
        target = Path(tmp) / "site-packages"
        if progress:
            progress(f"downloading {len(pins)} wheels for CPython {python}")
        try:
            download = ["download", "--dest", str(store), "--no-deps", *target_args(python)]
            run_pip([*download, *wheels.args(), *pins], what=store, progress=progress)
            if progress:
                progress(f"installing {len(pins)} wheels")
            install = ["install", "--target", str(target), "--no-index", "--find-links", str(store)]
            install += ["--no-deps", "--no-compile", "--no-warn-script-location"]
            run_pip([*install, *target_args(python), *pins], what=store)
        except PipError as exc:
            raise PipError(f"the catalog image's Python dependencies: {exc.message}") from None
        normalize_tree(target)
        files: dict[str, bytes] = {}
        executable: set[str] = set()
        _add_tree(target, SITE_PACKAGES, files, executable)
    files.update(compile_sources(files, python))
    tar = layer_tar(files, executable=executable)
    write_cache(cached, tar)
    return tar


def olmtool_files() -> tuple[dict[str, bytes], set[str]]:
    """The running olmtool's package, every file at ``app/olmtool/...`` (bytecode and
    hidden files left out)."""
    import olmtool

    root = Path(olmtool.__file__).parent
    files: dict[str, bytes] = {}
    executable: set[str] = set()
    _add_tree(root, f"{APP}/olmtool", files, executable)
    return files, executable


def _add_tree(directory: Path, prefix: str, files: dict[str, bytes], executable: set[str]) -> None:
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        relative = Path(dirpath).relative_to(directory).as_posix()
        for name in sorted(filenames):
            if name.endswith(_SKIPPED_SUFFIXES) or name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            image_path = "/".join(p for p in (prefix, relative, name) if p and p != ".")
            files[image_path] = path.read_bytes()
            if path.stat().st_mode & 0o111:
                executable.add(image_path)
