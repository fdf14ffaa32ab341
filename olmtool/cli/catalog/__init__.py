"""``olmtool catalog``: render, validate, publish, graph and serve file-based catalogs.

Each command family lives in its own module; importing them registers their commands.
"""

from __future__ import annotations

from typing import Any

import typer

app = typer.Typer(
    help="Render, validate, publish, graph and serve file-based catalogs (FBC).",
    no_args_is_help=True,
)


def opm_compat_option(what: str) -> Any:
    """``--opm-compat latest|1.26``: which opm ``what`` follows (docs/opm-compat.md)."""
    from olmtool.catalog import OpmCompat

    return typer.Option(
        OpmCompat.latest,
        "--opm-compat",
        help=f"{what} as newer opm (latest, the default) or as opm v1.26.0 does (1.26), "
        "byte for byte.",
    )


from olmtool.cli.catalog import graph, publish, render, serve, validate  # noqa: E402

__all__ = ["app", "graph", "publish", "render", "serve", "validate"]
