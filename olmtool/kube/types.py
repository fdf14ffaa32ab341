"""The plain shapes Kubernetes objects travel in (no client imported: cheap for any
layer): ``JSON`` for an object or answer as parsed, and the patch content types."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
"""A Kubernetes object, list or Status as JSON parses it."""
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
