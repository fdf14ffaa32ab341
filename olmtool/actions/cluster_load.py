"""``cluster load``: a user's own image into the local cluster's node, as ``kind load``.

>>> cluster_load(Path("build/memcached"), "docker.io/library/memcached:1.6")
'docker.io/library/memcached:1.6'
"""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster import DEFAULT_NAME, load_image


def cluster_load(source: Path, reference: str, *, name: str = DEFAULT_NAME) -> str:
    """Import the image of ``source`` (an OCI layout directory or an OCI archive) into the
    node's image store as ``reference``; Pods naming it start without a pull."""
    return load_image(source, reference, name=name)
