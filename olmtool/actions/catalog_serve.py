"""``catalog serve``: OLM's registry gRPC API and catalogd's HTTP API for a catalog.

>>> stop = threading.Event()
>>> catalog_serve("catalog/", grpc_port=0, http_port=0, ready=lambda s: stop.set(), stop=stop)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from olmtool.catalog import OpmCompat
from olmtool.serve import CatalogIndex, RunningServer, build_index, start_server


def catalog_index(directory: str | Path, *, cache_dir: Path) -> CatalogIndex:
    """Build (or reuse) the serving index in ``cache_dir`` without serving: what a catalog
    image's build step runs so that serving starts from the cache."""
    return build_index(directory, cache_dir=cache_dir)


def catalog_serve(
    directory: str | Path,
    *,
    grpc_port: int = 50051,
    http_port: int | None = 8080,
    host: str = "127.0.0.1",
    catalog_name: str | None = None,
    cache_dir: Path | None = None,
    log: Callable[[str], None] | None = None,
    ready: Callable[[RunningServer], None] | None = None,
    stop: threading.Event,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> None:
    """Index the catalog, serve it until ``stop`` is set, then shut down cleanly.

    ``ready`` is called once the index is built and both servers listen; ``http_port``
    None turns the HTTP API off; port 0 picks a free one. ``opm_compat`` 1.26 answers
    gRPC byte for byte as opm v1.26 does.
    """
    server = start_server(
        directory,
        grpc_port=grpc_port,
        http_port=http_port,
        host=host,
        catalog_name=catalog_name,
        cache_dir=cache_dir,
        log=log,
        opm_compat=opm_compat,
    )
    try:
        if ready:
            ready(server)
        stop.wait()
    finally:
        server.stop()
