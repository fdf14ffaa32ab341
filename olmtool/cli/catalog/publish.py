"""``olmtool catalog publish`` and ``catalog add``: write catalogs from bundles, atomically."""

from __future__ import annotations

from pathlib import Path

import typer

from olmtool.catalog.publish import add_bundle, catalog_image, publish
from olmtool.catalog.render import BundlePayload
from olmtool.catalog.write import CatalogFormat
from olmtool.cli.catalog import app
from olmtool.cli.output import (
    ConfigOption,
    OutputFormat,
    OutputOption,
    emit,
    escape,
    save_image,
    stderr,
    stdout,
)
from olmtool.config import load_project
from olmtool.errors import InputError, display_path


@app.command("publish")
def publish_command(
    config: Path | None = ConfigOption,
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 with a diff if the catalog is stale."
    ),
    image: str | None = typer.Option(
        None, "--image", "-i", help="Also build the catalog image REF (OCI layout)."
    ),
    layout: Path | None = typer.Option(
        None, "--layout", help="Where to write the OCI layout (default: build/oci/catalog)."
    ),
    push_image: bool = typer.Option(False, "--push", help="Push the catalog image."),
    output: OutputFormat = OutputOption,
) -> None:
    """Write catalog/<package>/ from the catalog section of olmtool.yaml.

    Every package is rendered from its bundles (or template) and validated before
    anything is written; a failure leaves the existing catalog untouched.

    Examples:

      olmtool catalog publish

      olmtool catalog publish --check        # in CI: fail if catalog/ is stale

      olmtool catalog publish --image 127.0.0.1:5000/olmtool/etcd-catalog:latest --push
    """
    if push_image and not image:
        raise InputError("--push needs --image REF")
    project = load_project(config)
    settings = project.settings.catalog
    if settings is None:
        raise InputError("has no catalog section (catalog: {packages: [...]})", path=project.file)
    with stderr.status("rendering bundles"):
        result = publish(settings, project.root, check=check)
    data: dict[str, object] = {
        "catalog": display_path(result.root),
        "check": check,
        "stale": result.stale,
        "packages": {
            name: {"added": d.added, "modified": d.modified, "removed": d.removed}
            for name, d in result.packages.items()
        },
        "dockerfile": display_path(result.dockerfile) if result.dockerfile else None,
        "warnings": [w.as_dict() for w in result.warnings],
    }
    if image:
        data.update(_image(result.root, image, layout, push_image))

    def text() -> None:
        for warning in result.warnings:
            stdout.print(f"[yellow]warning[/] [dim]\\[{warning.check}][/] {escape(str(warning))}")
        for name, difference in result.packages.items():
            if check:
                for diff in difference.diffs:
                    stdout.print(escape(diff), end="")
            state = "stale" if difference.stale else "up to date"
            verb = state if check else ("written" if difference.stale else "unchanged")
            stdout.print(f"package {escape(name)}: {verb}")
        if result.dockerfile:
            state = "stale" if result.dockerfile_stale else "up to date"
            verb = state if check else ("written" if result.dockerfile_stale else "unchanged")
            stdout.print(f"{escape(display_path(result.dockerfile))}: {verb}")
        if check and result.stale:
            stdout.print("run [bold]olmtool catalog publish[/] to update it")
        if image:
            stdout.print(f"image {escape(image)}: {data['digest']}")

    emit(data, output, text)
    if check and result.stale:
        raise typer.Exit(1)


def _image(root: Path, reference: str, layout: Path | None, push_image: bool) -> dict[str, object]:
    target = layout or Path("build/oci/catalog")
    return save_image(catalog_image(root), reference, target, push_image=push_image, tag="latest")


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
    output: OutputFormat = OutputOption,
) -> None:
    """Add one bundle to its package's channels, using its CSV's replaces/skips/skipRange.

    The package is validated with the new bundle before anything is written.

    Example:

      olmtool catalog add bundle/etcd-operator/0.3.0 --catalog catalog \\
          --image localhost:5000/olmtool/etcd-operator-bundle:0.3.0
    """
    payload = BundlePayload.csv_metadata if csv_metadata else BundlePayload.objects
    config, difference = add_bundle(
        catalog, bundle, image=image, channels=channel or None, fmt=fmt, payload=payload
    )
    added = config.bundles[-1]
    data = {
        "bundle": added.name,
        "package": added.package,
        "channels": sorted(
            c.name for c in config.channels if any(e.name == added.name for e in c.entries)
        ),
        "changed": difference.changed,
    }
    emit(
        data,
        output,
        lambda: stdout.print(
            f"[green]added[/] {escape(added.name)} to {escape(added.package)} "
            f"({', '.join(data['channels'])})"
        ),
    )
