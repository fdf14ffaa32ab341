"""A small operator project for ``image build`` tests: one package and a lock of one
pure-Python wheel made here, so no test needs the network unless it asks for PyPI."""

from __future__ import annotations

import base64
import hashlib
import json
import textwrap
import zipfile
from pathlib import Path

import pytest

from olmtool.images import Image
from olmtool.images.image import OCI_CONFIG, canonical_json, digest_of

WHEEL_NAME = "tinydep"
NAME = "localhost:5000/test/op"


def make_wheel(directory: Path, version: str = "1.0") -> Path:
    """``tinydep-<version>``: a module and a console script (pip writes its shebang)."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"{WHEEL_NAME}-{version}.dist-info"
    files = {
        f"{WHEEL_NAME}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {WHEEL_NAME}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[console_scripts]\ntinydep = {WHEEL_NAME}:main\n",
    }
    record = "".join(
        f"{name},{_record_hash(text.encode())},{len(text)}\n" for name, text in files.items()
    )
    path = directory / f"{WHEEL_NAME}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, f"{info}/RECORD": record + f"{info}/RECORD,,\n"}.items():
            archive.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), text)
    return path


def make_project(
    root: Path, *, extra: str = "", bundle: bool = True, base: str | None = "scratch"
) -> Path:
    """``root/olmtool.yaml`` with an ``image:`` section, its package and lock; returns
    the wheels directory to pass as ``find_links``. ``base`` is ``image.base`` (scratch by
    default: unit tests do not build the Debian base; None for olmtool's default)."""
    wheels = root / "wheels"
    wheel = make_wheel(wheels)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    package = root / "src" / "op"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "__main__.py").write_text("print('op')\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    (root / "requirements.lock").write_text(f"{WHEEL_NAME}==1.0 \\\n    --hash=sha256:{sha}\n")
    bundle_section = (
        "bundle: {package: op, version: 1.2.3, channels: [stable],\n"
        "  csv: {displayName: Op, repository: https://example.com/op},\n"
        f"  deployment: {{name: op, image: '{NAME}:1.2.3'}}}}\n"
    )
    (root / "olmtool.yaml").write_text(
        (bundle_section if bundle else "")
        + textwrap.dedent(
            f"""\
            image:
              name: {NAME}
              packages: [src/op]
              requirements: requirements.lock
              entrypoint: [python3, -m, op]
              env: {{PYTHONUNBUFFERED: "1"}}
              labels: {{team: olm}}
              output: out
            """
        )
        + (f"  base: {base}\n" if base else "")
        + extra
    )
    return wheels


def offline(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """A private wheel cache, and no SOURCE_DATE_EPOCH from the developer's shell."""
    monkeypatch.setenv("OLMTOOL_CACHE", str(cache))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def with_config(image: Image, config: dict) -> Image:
    """``image`` with another config document (a base image with Env, Cmd...)."""
    data = canonical_json(config)
    manifest = json.loads(image.manifest)
    manifest["config"] = {"mediaType": OCI_CONFIG, "digest": digest_of(data), "size": len(data)}
    return Image(canonical_json(manifest), data, image.layers, image.media_type)
