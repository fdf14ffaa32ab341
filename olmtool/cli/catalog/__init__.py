"""``olmtool catalog``: render, validate, publish, graph and serve file-based catalogs.

Each command family lives in its own module; importing them registers their commands.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    help="Render, validate, publish, graph and serve file-based catalogs (FBC).",
    no_args_is_help=True,
)

# Imported for their @app.command() side effect; a module not written yet is skipped.
for _module in ("render", "validate", "publish", "graph", "serve"):
    try:
        importlib.import_module(f"olmtool.cli.catalog.{_module}")
    except ModuleNotFoundError as _exc:
        if _exc.name != f"olmtool.cli.catalog.{_module}":
            raise
