"""``olmtool catalog serve``: the registry gRPC API and catalogd's HTTP API for a catalog."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import typer

from olmtool import actions
from olmtool.catalog import OpmCompat
from olmtool.cli.catalog import app, opm_compat_option
from olmtool.cli.output import escape, stderr, stdout
from olmtool.errors import UsageError, display_path

if TYPE_CHECKING:
    from olmtool.serve import CatalogIndex, RunningServer


@app.command()
def serve(
    directory: Path = typer.Argument(..., help="The catalog's root directory (or one file)."),
    port: int = typer.Option(
        50051,
        "--grpc-port",
        "--port",
        "-p",
        envvar="OLMTOOL_GRPC_PORT",
        help="gRPC port (0 picks a free one).",
    ),
    http_port: int = typer.Option(
        8080,
        "--http-port",
        envvar="OLMTOOL_HTTP_PORT",
        help="catalogd HTTP port; 0 turns the HTTP API off.",
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for every interface)."
    ),
    catalog_name: str | None = typer.Option(
        None, "--catalog-name", help="The <name> in /catalogs/<name>/ (default: directory name)."
    ),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Keep the index here; reused while the catalog is unchanged."
    ),
    cache_only: bool = typer.Option(
        False, "--cache-only", help="Build the --cache-dir index and exit without serving."
    ),
    log_requests: bool = typer.Option(
        True, "--log-requests/--quiet", help="Log one line per request to stderr."
    ),
    opm_compat: OpmCompat = opm_compat_option("gRPC answers"),
) -> None:
    """Serve a file-based catalog like `opm serve`, plus catalogd's HTTP API (OLM v1).

    gRPC: api.Registry (what OLM v0 CatalogSources use), grpc.health.v1 and reflection.

    HTTP: /catalogs/<name>/api/v1/all and /catalogs/<name>/api/v1/metas?schema=&package=&name=

    Runs until SIGTERM or Ctrl-C, then exits 0.

    Examples:

      olmtool catalog serve catalog/

      olmtool catalog serve catalog/ --grpc-port 50052 --http-port 0 --quiet

      olmtool catalog serve catalog/ --cache-dir cache/ --cache-only

      olmtool catalog serve catalog/ --opm-compat 1.26   # no deprecations, as opm v1.26

      grpcurl -plaintext localhost:50051 api.Registry/ListPackages
    """
    if cache_only:
        if cache_dir is None:
            raise UsageError("--cache-only needs --cache-dir")
        index = actions.catalog_index(directory, cache_dir=cache_dir)
        _report_index(index)
        stdout.print(f"cache in {escape(display_path(cache_dir))} is up to date")
        index.close()
        return
    stop = threading.Event()
    actions.catalog_serve(
        directory,
        grpc_port=port,
        http_port=http_port or None,
        host=host,
        catalog_name=catalog_name,
        cache_dir=cache_dir,
        log=(lambda line: stderr.print(escape(line))) if log_requests else None,
        ready=lambda server: _serving(server, stop),
        stop=stop,
        opm_compat=opm_compat,
    )
    stderr.print("shutting down")


def _serving(server: RunningServer, stop: threading.Event) -> None:
    _on_signals(stop)  # only now: until the index is built, Ctrl-C interrupts as usual
    _report_index(server.index)
    stdout.print(f"serving api.Registry on {escape(server.grpc_address)}")
    if server.catalog_url:
        stdout.print(f"serving catalogd on {escape(server.catalog_url)}/api/v1/all")


def _report_index(index: CatalogIndex) -> None:
    how = "from the cache" if index.cached else f"in {index.data.build_seconds:.2f}s"
    stderr.print(f"indexed {len(index.packages)} package(s), {index.bundle_count} bundle(s) {how}")


def _on_signals(stop: threading.Event) -> None:
    """SIGTERM (kubelet, docker stop) and SIGINT (Ctrl-C) both end serving cleanly."""

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)
