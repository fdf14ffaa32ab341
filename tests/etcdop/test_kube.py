"""The operator's API client on a read-only root (the 0.1.0 to 0.3.0 CSVs mount no /tmp)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from etcd_operator import kube


def test_the_discovery_cache_is_in_the_temporary_directory_when_there_is_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    assert Path(kube.discovery_cache()).parent == tmp_path


def test_without_a_writable_temporary_directory_the_cache_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def none_usable() -> str:
        raise FileNotFoundError(2, "No usable temporary directory found")

    monkeypatch.setattr(tempfile, "gettempdir", none_usable)
    cache = Path(kube.discovery_cache())
    assert not cache.parent.exists()  # nothing read; the client's failed write is ignored
