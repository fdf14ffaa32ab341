"""Defaults of the local cluster that callers name without starting anything (a leaf
module: the CLI builds its options from it, the registry client finds clusters with it)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_NAME = "olmtool"
DEFAULT_REGISTRY_PORT = 5000
STATE_FILE = "cluster.json"


def clusters_root() -> Path:
    """``$OLMTOOL_CLUSTERS_DIR``, else ``$XDG_STATE_HOME/olmtool/clusters`` (~/.local/state)."""
    explicit = os.environ.get("OLMTOOL_CLUSTERS_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "olmtool" / "clusters"
