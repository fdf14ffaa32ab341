"""Image tests run without the developer's registry logins."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_user_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the developer's own registry logins and CA settings out of the tests."""
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "no-auth.json"))
    monkeypatch.delenv("OLMTOOL_REGISTRY_CA", raising=False)
