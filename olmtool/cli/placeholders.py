"""Command groups whose commands arrive with later releases (bundles, catalogs)."""

from __future__ import annotations

import typer

bundle_app = typer.Typer(
    help="Build and validate OLM bundles (registry+v1): coming next, see `olmtool crd` for now.",
    no_args_is_help=True,
)
catalog_app = typer.Typer(
    help="Render, validate, publish and serve file-based catalogs: coming after bundles.",
    no_args_is_help=True,
)


@bundle_app.callback()
def _bundle() -> None:
    """Build and validate OLM bundles (registry+v1)."""


@catalog_app.callback()
def _catalog() -> None:
    """Render, validate, publish and serve file-based catalogs (FBC)."""
