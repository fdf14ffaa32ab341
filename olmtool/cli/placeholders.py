"""Command groups whose commands arrive with later releases (catalogs)."""

from __future__ import annotations

import typer

catalog_app = typer.Typer(
    help="Render, validate, publish and serve file-based catalogs: coming after bundles.",
    no_args_is_help=True,
)


@catalog_app.callback()
def _catalog() -> None:
    """Render, validate, publish and serve file-based catalogs (FBC)."""
