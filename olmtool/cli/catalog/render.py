"""``olmtool catalog render``: bundles and catalogs (dirs or images) as FBC blobs."""

from __future__ import annotations

import sys

import typer

from olmtool import actions
from olmtool.catalog import BundlePayload, CatalogFormat
from olmtool.cli.catalog import app


@app.command("render")
def render_command(
    sources: list[str] = typer.Argument(
        ..., help="Bundle directories, FBC directories/files, bundle or catalog image refs."
    ),
    output: CatalogFormat = typer.Option(
        CatalogFormat.json, "--output", "-o", help="json (like opm) or yaml."
    ),
    csv_metadata: bool = typer.Option(
        False,
        "--csv-metadata",
        help="Carry one olm.csv.metadata property instead of an olm.bundle.object per manifest.",
    ),
    image: str | None = typer.Option(
        None, "--image", help="The pull spec to record for a single bundle directory."
    ),
) -> None:
    """Print the olm.bundle blobs opm would render (and pass FBC through).

    Examples:

      olmtool catalog render bundle/etcd-operator/0.3.0 -o yaml

      olmtool catalog render 127.0.0.1:5000/olmtool/etcd-operator-bundle:0.3.0 --csv-metadata
    """
    payload = BundlePayload.csv_metadata if csv_metadata else BundlePayload.objects
    config = actions.catalog_render(sources, payload=payload, image=image)
    from olmtool.catalog import render_config

    sys.stdout.write(render_config(config, output, raw_values=True))
