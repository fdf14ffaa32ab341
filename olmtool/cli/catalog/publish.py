"""``olmtool catalog publish`` and ``catalog add``: write catalogs from bundles, atomically."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool import actions
from olmtool.catalog import BundlePayload, CatalogFormat
from olmtool.cli import output as out
from olmtool.cli.catalog import app
from olmtool.errors import UsageError, display_path

if TYPE_CHECKING:
    from olmtool.actions import CatalogPublishResult

IMAGE, LAYOUT, PUSH = out.image_options("catalog", "build/oci/catalog")


@app.command("publish")
def publish_command(
    config: Path | None = out.ConfigOption,
    check: bool = out.check_option("the catalog is"),
    image: str | None = IMAGE,
    layout: Path | None = LAYOUT,
    push_image: bool = PUSH,
    allow_empty_image: bool = typer.Option(
        False,
        "--allow-empty-image",
        help="Publish bundle directories of a package without image: as image '' "
        "(OLM v0 installs them from their objects; OLM v1 cannot).",
    ),
    output_dir: Path | None = typer.Option(
        None,
        "--output-dir",
        "-d",
        help="Write (or --check) the catalog in this directory instead of catalog.output; "
        "its Dockerfile goes beside it, DIR.Dockerfile.",
    ),
    base: str | None = typer.Option(
        None,
        "--base",
        help="With --image: stack /configs on this opm image REF (opm's entrypoint, as "
        "catalog.Dockerfile does), or scratch for the catalog alone (default: an image "
        "serving it with olmtool on its Python base).",
    ),
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Write catalog/<package>/ from the catalog section of olmtool.yaml.

    Every package is rendered from its bundles (or template) and validated before
    anything is written; a failure leaves the existing catalog untouched. Bundle
    directories get the package's image: pattern ({package}, {version}) as pull spec;
    without one, publishing refuses unless --allow-empty-image. Findings olmtool.yaml's
    validate.ignore waives do not stop it.

    --image builds a catalog image that serves like an opm-based one: its entrypoint
    runs `olmtool catalog serve /configs` on :50051 (all addresses), and
    /bin/grpc_health_probe answers OLM's registry-pod probes; it runs as user 65532 and
    needs no writable path but /tmp.

    Examples:

      olmtool catalog publish

      olmtool catalog publish --check        # in CI: fail if catalog/ is stale

      olmtool catalog publish --image 127.0.0.1:5000/olmtool/etcd-catalog:latest --push

      olmtool catalog publish --image my/catalog:1 --base quay.io/operator-framework/opm:v1.26.0

      olmtool catalog publish --allow-empty-image -d build/catalog-inline   # a variant
    """
    target = out.image_target(image, layout, push_image)
    if base is not None and not image:
        raise UsageError("--base needs --image REF")
    result = out.with_progress(
        "publishing",
        actions.catalog_publish,
        config=config,
        check=check,
        image=target,
        allow_empty_image=allow_empty_image,
        output_dir=output_dir,
        base=base,
    )
    out.emit(result.as_dict(), output, lambda: _print_publish(result, output_dir))
    out.exit_if(result.failed)


def _state(stale: bool, check: bool) -> str:
    if check:
        return "stale" if stale else "up to date"
    return "written" if stale else "unchanged"


def _print_publish(result: CatalogPublishResult, output_dir: Path | None = None) -> None:
    published, check = result.publish, result.check
    out.print_findings(published.warnings)
    out.print_waived(published.waived)
    for name, difference in published.packages.items():
        if check:
            out.print_diffs(difference.diffs)
        out.stdout.print(f"package {out.escape(name)}: {_state(difference.stale, check)}")
    if published.dockerfile:
        where = out.escape(display_path(published.dockerfile))
        out.stdout.print(f"{where}: {_state(published.dockerfile_stale, check)}")
    if check and published.stale:
        again = f" -d {out.escape(str(output_dir))}" if output_dir else ""
        out.stdout.print(f"run [bold]olmtool catalog publish{again}[/] to update it")
    if result.image:
        on = result.base or "olmtool's Python base (serving with olmtool)"
        size = f"{result.image_size / 1e6:.1f} MB in {result.image_layers} layer(s)"
        out.stdout.print(f"catalog image on {out.escape(on)}: {size}")
    out.print_saved_image(result.image, layout=False)


@app.command("add")
def add_command(
    bundle: str = typer.Argument(..., help="A bundle directory or bundle image reference."),
    catalog: Path = typer.Option(Path("catalog"), "--catalog", help="The catalog's root."),
    channel: list[str] = typer.Option(
        None, "--channel", help="Channels to add it to (default: its annotations)."
    ),
    image: str | None = typer.Option(
        None, "--image", help="Pull spec to record for a bundle directory."
    ),
    fmt: CatalogFormat | None = typer.Option(
        None, "--format", help="json or yaml (default: what the package already uses)."
    ),
    csv_metadata: bool = typer.Option(
        False, "--csv-metadata", help="Carry olm.csv.metadata instead of olm.bundle.object."
    ),
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Add one bundle to its package's channels, using its CSV's replaces/skips/skipRange.

    The package is validated with the new bundle before anything is written.

    Example:

      olmtool catalog add bundle/etcd-operator/0.3.0 --catalog catalog \\
          --image localhost:5000/olmtool/etcd-operator-bundle:0.3.0
    """
    payload = BundlePayload.csv_metadata if csv_metadata else BundlePayload.objects
    result = actions.catalog_add(
        bundle, catalog=catalog, channels=channel or (), image=image, fmt=fmt, payload=payload
    )

    def show() -> None:
        out.print_findings(result.warnings)
        out.stdout.print(
            f"[green]added[/] {out.escape(result.bundle.name)} to {out.escape(result.bundle.package)} "
            f"({', '.join(result.channels)})"
        )

    out.emit(result.as_dict(), output, show)
