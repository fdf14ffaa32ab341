"""``image lock``'s header: it names only ``olmtool image lock`` (a user's project has no
``make lock``), and the repository's own lock carries the same header."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olmtool.images.build import wheels

ROOT = Path(__file__).resolve().parents[2]
SHA = "a" * 64


def _fake_pip(args: list[str], **_: object) -> None:
    """pip's ``--report`` for one wheel, without pip or the network."""
    report = Path(args[args.index("--report") + 1])
    item = {
        "metadata": {"name": "Kopf", "version": "1.0"},
        "download_info": {"url": "x", "archive_info": {"hashes": {"sha256": SHA}}},
    }
    report.write_text(json.dumps({"install": [item]}))


def _locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(wheels, "run_pip", _fake_pip)
    source = tmp_path / "requirements.in"
    source.write_text("kopf\n")
    lock = tmp_path / "requirements.lock"
    assert wheels.lock_requirements(source, lock, python="3.11") == ["kopf==1.0"]
    return lock.read_text()


def test_the_lock_header_names_only_olmtool_image_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _locked(tmp_path, monkeypatch)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[1] == "# regenerate with `olmtool image lock`. Do not edit."
    assert "make" not in "\n".join(header)
    assert text.endswith(f"kopf==1.0 \\\n    --hash=sha256:{SHA}\n")


def test_the_repositorys_lock_has_the_header_olmtool_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _locked(tmp_path, monkeypatch).splitlines()[:2]
    committed = (ROOT / "operator" / "requirements.lock").read_text().splitlines()[:2]
    assert committed == ours
