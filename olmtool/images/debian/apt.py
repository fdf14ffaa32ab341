"""Debian packages through the machine's own client: ``apt-cache`` to lock, ``apt-get
download`` to fetch (no root needed, no maintainer script ever runs), every file checked
against the lock's sha256 and kept by hash under ``<cache>/debs``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from olmtool.errors import InputError, OlmtoolError
from olmtool.images.build.wheels import cache_dir
from olmtool.images.debian.lockfile import LockedPackage

_TIMEOUT = 600


class DebianError(OlmtoolError):
    """The Debian client is missing or the mirror lacks a locked package."""


class LockMismatch(InputError):
    """A fetched file's hash is not the lock's."""


def require_apt() -> None:
    if shutil.which("apt-get") is None or shutil.which("apt-cache") is None:
        raise DebianError(
            "apt-get not found: olmtool builds its base images from Debian packages; "
            "on this host pass --base REF to stack on a registry image instead "
            "(for example --base docker.io/library/python:3.11-slim)"
        )


def candidates(names: Sequence[str]) -> list[LockedPackage]:
    """The version apt would install of each package, with its sha256 from the index."""
    require_apt()
    done = _run(["apt-cache", "show", "--no-all-versions", *names])
    found: dict[str, LockedPackage] = {}
    for stanza in done.stdout.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        if "Package" in fields and "SHA256" in fields and fields["Package"] not in found:
            found[fields["Package"]] = LockedPackage(
                "deb", fields["Package"], fields["Version"], f"sha256:{fields['SHA256']}"
            )
    if missing := [name for name in names if name not in found]:
        raise DebianError(
            f"Debian package {missing[0]!r} is not known to apt-cache (a typo, or run apt-get update)"
        )
    return [found[name] for name in names]


def fetch_debs(
    packages: Iterable[LockedPackage], progress: Callable[[str], None] | None = None
) -> dict[LockedPackage, Path]:
    """Each locked ``.deb`` from the cache, else from the mirror; hashes checked."""
    store = cache_dir() / "debs"
    wanted = {package: store / _cache_name(package) for package in packages}
    missing = [package for package, path in wanted.items() if not path.is_file()]
    if missing:
        require_apt()
        store.mkdir(parents=True, exist_ok=True)
        if progress:
            progress(f"downloading {len(missing)} Debian packages")
        with tempfile.TemporaryDirectory(prefix=".download-", dir=store) as tmp:
            _download(missing, Path(tmp))
            for package in missing:
                _take(package, Path(tmp), wanted[package])
    return wanted


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def check_hash(package: LockedPackage, path: Path, source: str) -> None:
    actual = sha256_file(path)
    if actual != package.sha256:
        raise LockMismatch(
            f"{package.kind} {package.name} {package.version}: the lock says {package.sha256}, "
            f"{source} has {actual}"
        )


def _download(packages: Sequence[LockedPackage], directory: Path) -> None:
    done = subprocess.run(
        ["apt-get", "download", "-q", *(package.pin for package in packages)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
    )
    if done.returncode != 0:
        raise DebianError(_download_problem(packages, done.stderr))


def _download_problem(packages: Sequence[LockedPackage], stderr: str) -> str:
    errors = [line[3:] for line in stderr.splitlines() if line.startswith("E: ")]
    text = errors[0] if errors else stderr.strip().splitlines()[-1] if stderr.strip() else "failed"
    for package in packages:
        if f"'{package.name}" in text or f" {package.name}" in text:
            return (
                f"Debian package {package.name} {package.version} is not on the mirror "
                f"({text}); regenerate the lock with `olmtool image base lock`"
            )
    return f"apt-get download failed: {text}"


def _take(package: LockedPackage, directory: Path, target: Path) -> None:
    files = sorted(directory.glob(f"{package.name}_*.deb"))
    if not files:
        raise DebianError(f"apt-get download wrote no file for {package.name} {package.version}")
    check_hash(package, files[0], "the mirror's file")
    os.replace(files[0], target)


def _cache_name(package: LockedPackage) -> str:
    return f"{package.name}_{package.sha256.removeprefix('sha256:')[:20]}.deb"


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT)
    if done.returncode != 0:
        errors = [line[3:] for line in done.stderr.splitlines() if line.startswith("E: ")]
        raise DebianError(
            f"{command[0]} {command[1]}: {errors[0] if errors else done.stderr.strip()}"
        )
    return done
