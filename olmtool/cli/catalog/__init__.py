"""``olmtool catalog``: render, validate, publish, graph and serve file-based catalogs.

Each command family lives in its own module; importing them registers their commands.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Render, validate, publish, graph and serve file-based catalogs (FBC).",
    no_args_is_help=True,
)

from olmtool.cli.catalog import graph, publish, render, serve, validate  # noqa: E402

__all__ = ["app", "graph", "publish", "render", "serve", "validate"]
