"""pip does the Python work: resolving the lock file and installing its wheels.

Nothing here resolves or unpacks wheels by hand. The lock is pip's hash-checked
requirements format, written from ``pip install --dry-run --report``; the image's
``site-packages`` is ``pip install --target`` of exactly those wheels for the image's
platform (CPython ``python``, manylinux2014 x86_64), never for the host's. Downloaded
wheels are kept in ``<cache>/wheels`` (``$OLMTOOL_CACHE``, else
``$XDG_CACHE_HOME/olmtool``, else ``~/.cache/olmtool``), so a warm build needs no network.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from olmtool.errors import InputError, OlmtoolError
from olmtool.fsutil import write_atomic

PLATFORM = "manylinux2014_x86_64"
IMPLEMENTATION = "cp"
SHEBANG = b"#!/usr/bin/env python3"
# Lines of pip's output worth showing while it works.
_PROGRESS_PREFIXES = ("Collecting", "Downloading", "Saved", "File was already", "Installing")


class PipError(OlmtoolError):
    """pip could not resolve, download or install the locked requirements."""


@dataclass(frozen=True)
class WheelSource:
    """Where pip finds wheels: the index (unless ``index`` is False) and ``find_links``."""

    find_links: tuple[Path, ...] = ()
    index: bool = True

    def args(self) -> list[str]:
        args = [] if self.index else ["--no-index"]
        for directory in self.find_links:
            args += ["--find-links", str(directory)]
        return args


def cache_dir() -> Path:
    if explicit := os.environ.get("OLMTOOL_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "olmtool"


def target_args(python: str) -> list[str]:
    """pip's flags for wheels that run on the image, not on this host."""
    return [
        "--only-binary=:all:",
        f"--platform={PLATFORM}",
        f"--python-version={python}",
        f"--implementation={IMPLEMENTATION}",
    ]


def lock_requirements(
    source: Path,
    lock: Path,
    *,
    python: str,
    wheels: WheelSource = WheelSource(),
    progress: Callable[[str], None] | None = None,
) -> list[str]:
    """Resolve ``source`` (loose requirements) with pip and write ``lock``: every
    transitive pin with its wheel's sha256. Returns the pins (``name==version``)."""
    if not source.is_file():
        raise InputError("no such requirements file (the lock's input)", path=source)
    with tempfile.TemporaryDirectory(prefix="olmtool-lock-") as tmp:
        report = Path(tmp) / "report.json"
        run_pip(
            [
                "install",
                "--dry-run",
                "--ignore-installed",
                "--report",
                str(report),
                "-r",
                str(source),
                *target_args(python),
                *wheels.args(),
            ],
            what=source,
            progress=progress,
        )
        pins = _pins(json.loads(report.read_text()))
    header = (
        f"# Locked from {source.name} for CPython {python} ({PLATFORM} wheels) by pip;\n"
        "# regenerate with `olmtool image lock`. Do not edit.\n"
    )
    body = "".join(
        f"{name}=={version} \\\n    --hash=sha256:{sha}\n" for name, version, sha in pins
    )
    write_atomic(lock, header + body)
    return [f"{name}=={version}" for name, version, _ in pins]


def install_wheels(
    lock: Path,
    target: Path,
    *,
    python: str,
    wheels: WheelSource = WheelSource(),
    progress: Callable[[str], None] | None = None,
) -> None:
    """``pip install --target`` the locked wheels, from the cache (downloading what it
    lacks), then drop what would differ between two identical installs."""
    if not lock.is_file():
        raise InputError("no such lock file (image.requirements)", path=lock)
    cache = cache_dir() / "wheels"
    _download(lock, cache, python=python, wheels=wheels, progress=progress)
    if progress:
        progress("installing the locked wheels")
    run_pip(
        [
            "install",
            "--target",
            str(target),
            "--no-index",
            "--find-links",
            str(cache),
            "--no-deps",
            "--require-hashes",
            "--no-compile",
            "--no-warn-script-location",
            *target_args(python),
            "-r",
            str(lock),
        ],
        what=lock,
    )
    normalize_tree(target)


def normalize_tree(root: Path) -> None:
    """Remove bytecode and ``direct_url.json`` (they name this machine or this moment)
    and give scripts a portable shebang, fixing their RECORD rows to match."""
    for path in sorted(root.rglob("*"), reverse=True):
        if path.name == "__pycache__" and path.is_dir():
            shutil.rmtree(path)
        elif path.suffix in (".pyc", ".pyo") or path.name == "direct_url.json":
            path.unlink()
    rewritten = {p.name: p for p in _scripts(root) if _portable_shebang(p)}
    if rewritten:
        for record in root.glob("*.dist-info/RECORD"):
            _fix_record(record, rewritten)


def _download(
    lock: Path,
    cache: Path,
    *,
    python: str,
    wheels: WheelSource,
    progress: Callable[[str], None] | None,
) -> None:
    """Fill the wheel cache for ``lock`` once; a marker per lock content says it is full."""
    key = hashlib.sha256(lock.read_bytes() + f"\0{python}\0{PLATFORM}".encode()).hexdigest()
    marker = cache / ".complete" / key[:32]
    if marker.is_file():
        return
    if progress:
        progress("downloading the locked wheels")
    cache.mkdir(parents=True, exist_ok=True)
    run_pip(
        [
            "download",
            "--dest",
            str(cache),
            "--no-deps",
            "--require-hashes",
            *target_args(python),
            *wheels.args(),
            "-r",
            str(lock),
        ],
        what=lock,
        progress=progress,
    )
    marker.parent.mkdir(exist_ok=True)
    marker.write_text(f"{lock}\n")


def run_pip(args: list[str], *, what: Path, progress: Callable[[str], None] | None = None) -> None:
    command = [sys.executable, "-m", "pip", *args]
    command += ["--disable-pip-version-check", "--no-input", "--progress-bar=off"]
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
    except OSError as exc:
        raise PipError(f"cannot run pip ({exc})", path=what) from None
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip())
        if progress and line.lstrip().startswith(_PROGRESS_PREFIXES):
            progress(" ".join(line.split())[:100])
    if process.wait() != 0:
        raise PipError(f"pip {args[0]} failed: {_pip_problem(lines)}", path=what)


def _pip_problem(lines: list[str]) -> str:
    """pip's own explanation: its first ERROR line and the line after (often the reason)."""
    for index, line in enumerate(lines):
        if line.startswith("ERROR:"):
            detail = " ".join(lines[index : index + 2]) if line.endswith(":") else line
            return " ".join(detail.removeprefix("ERROR:").split())[:400]
    if any("No module named pip" in line for line in lines):
        return f"pip is not installed for {sys.executable}"
    return " ".join(" ".join(lines[-3:]).split())[:400] or "no output"


def _pins(report: dict) -> list[tuple[str, str, str]]:
    pins = []
    for item in report.get("install", []):
        metadata, info = item["metadata"], item.get("download_info", {})
        archive = info.get("archive_info", {})
        sha = archive.get("hashes", {}).get("sha256") or _legacy_hash(archive.get("hash", ""))
        if not sha:
            raise PipError(f"pip reported no sha256 for {metadata['name']} ({info.get('url')})")
        pins.append((canonical_name(metadata["name"]), metadata["version"], sha))
    return sorted(pins)


def _legacy_hash(value: str) -> str:
    name, _, digest = value.partition("=")
    return digest if name == "sha256" else ""


def canonical_name(name: str) -> str:
    """PEP 503's normal form, so the lock sorts and diffs the same however names are cased."""
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


def _scripts(root: Path) -> Iterable[Path]:
    scripts = root / "bin"
    return sorted(p for p in scripts.iterdir() if p.is_file()) if scripts.is_dir() else []


def _portable_shebang(path: Path) -> bool:
    """Point a pip-written script at ``python3`` instead of the interpreter running pip."""
    data = path.read_bytes()
    first, newline, rest = data.partition(b"\n")
    if not first.startswith(b"#!") or b"python" not in first or first == SHEBANG:
        return False
    path.write_bytes(SHEBANG + newline + rest)
    return True


def _fix_record(record: Path, scripts: dict[str, Path]) -> None:
    """Update the hash and size of rewritten scripts. pip's ``--target`` rows name them
    from where it staged the install (``../../bin/kopf``), so match ``bin/<name>``."""
    text = record.read_bytes().decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    changed = False
    for row in rows:
        parts = PurePosixPath(row[0]).parts[-2:] if row else ()
        if len(parts) == 2 and parts[0] == "bin" and parts[1] in scripts and len(row) >= 3:
            data = scripts[parts[1]].read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            row[1:3] = [f"sha256={digest.decode()}", str(len(data))]
            changed = True
    if changed:
        out = io.StringIO(newline="")
        terminator = "\r\n" if "\r\n" in text else "\n"
        csv.writer(out, lineterminator=terminator).writerows(rows)
        record.write_bytes(out.getvalue().encode("utf-8"))
