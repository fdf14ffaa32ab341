"""``olmtool image``: the operator image from olmtool.yaml, built without Docker."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool import actions
from olmtool.cli import output as out
from olmtool.errors import display_path

if TYPE_CHECKING:
    from olmtool.actions import BaseLockResult, ImageBuildResult, ImageLockResult

app = typer.Typer(
    help="Build and push the operator's image (no container engine), lock its requirements.",
    no_args_is_help=True,
)

base_app = typer.Typer(
    help="olmtool's Python base image, built from Debian packages pinned in a lock.",
    no_args_is_help=True,
)
app.add_typer(base_app, name="base")

FIND_LINKS = typer.Option(
    None, "--find-links", help="A directory of wheels pip may use too (repeatable)."
)
NO_INDEX = typer.Option(False, "--no-index", help="Do not ask the package index (pip's flag).")


@app.command()
def build(
    config: Path | None = out.ConfigOption,
    tags: list[str] = typer.Option(
        None, "--tag", "-t", help="Tag to write/push (repeatable; default: image.tag)."
    ),
    bundle_tags: bool = typer.Option(
        False, "--bundle-tags", help="Also every tag the bundles' CSVs reference for image.name."
    ),
    base: str | None = typer.Option(
        None,
        "--base",
        help="Base image REF to stack on, or scratch (default: image.base, else olmtool's "
        "Python 3.11 base built from Debian packages).",
    ),
    push_image: bool = typer.Option(False, "--push", help="Push every tag."),
    registry: str | None = typer.Option(
        None, "--registry", help="Push to HOST:PORT instead of the registry in image.name."
    ),
    find_links: list[Path] = FIND_LINKS,
    no_index: bool = NO_INDEX,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Build the image of the image section of olmtool.yaml: the locked wheels in
    /app/site-packages, the packages in /app; one OCI layout per tag under image.output.

    Examples:

      olmtool image build                           # build/images/etcd-operator-<version>

      olmtool image build --bundle-tags --push --registry 127.0.0.1:5000

      olmtool image build -t dev --base docker.io/library/python:3.11-slim -o json
    """
    result = out.with_progress(
        "building image",
        actions.image_build,
        config=config,
        tags=tags or [],
        bundle_tags=bundle_tags,
        base=base,
        push=push_image,
        registry=registry,
        find_links=find_links or [],
        no_index=no_index,
    )
    out.emit(result.as_dict(), output, lambda: _print_build(result))


@app.command()
def lock(
    config: Path | None = out.ConfigOption,
    find_links: list[Path] = FIND_LINKS,
    no_index: bool = NO_INDEX,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Resolve the lock's .in file with pip and rewrite image.requirements (pins + hashes).

    Example:

      olmtool image lock          # operator/requirements.in -> operator/requirements.lock
    """
    result = out.with_progress(
        "resolving",
        actions.image_lock,
        config=config,
        find_links=find_links or [],
        no_index=no_index,
    )
    out.emit(result.as_dict(), output, lambda: _print_lock(result))


@base_app.command("lock")
def base_lock(
    check: bool = typer.Option(
        False, "--check", help="Only compare the lock with the mirror; exit 1 if they differ."
    ),
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Pin the packages of olmtool's images to what the Debian mirror and PyPI offer now.

    The Python base and the etcd and busybox stand-ins: each .deb and wheel with its
    version and sha256, in olmtool/images/debian/images.lock.

    Examples:

      olmtool image base lock            # rewrite olmtool/images/debian/images.lock

      olmtool image base lock --check    # exit 1 when the mirror moved on
    """
    result = out.with_progress("resolving", actions.image_base_lock, check=check)
    out.emit(result.as_dict(), output, lambda: _print_base_lock(result))
    out.exit_if(check and not result.current)


def _print_base_lock(result: BaseLockResult) -> None:
    lock = out.escape(display_path(result.lock))
    for change in result.changes:
        out.stdout.print(
            f"{out.escape(change.section)}: {out.escape(change.name)} "
            f"{out.escape(change.old or '(none)')} -> {out.escape(change.new or '(none)')}"
        )
    if result.current:
        out.stdout.print(f"{lock} matches the mirror")
    elif result.check:
        out.stdout.print(f"{lock} differs from the mirror in {len(result.changes)} packages")
    else:
        out.stdout.print(f"wrote {lock}: {len(result.changes)} packages changed")


def _print_build(result: ImageBuildResult) -> None:
    on = f" on {out.escape(result.base)}" if result.base else ""
    out.stdout.print(f"image {out.escape(result.name)}{on}: {result.digest}")
    for layer in result.layers:
        out.stdout.print(
            f"  {layer.name} layer {layer.digest[:19]}: {_size(layer.size)} "
            f"({_size(layer.uncompressed_size)} uncompressed)"
        )
    for saved in result.tags:
        layout = out.escape(display_path(saved.layout))
        pushed = " [green]pushed[/]" if saved.pushed else ""
        out.stdout.print(f"{out.escape(saved.reference)} (OCI layout {layout}){pushed}")
    out.stdout.print(f"built in {result.seconds:.1f} s")


def _print_lock(result: ImageLockResult) -> None:
    for pin in result.pins:
        out.stdout.print(out.escape(pin))
    out.stdout.print(
        f"wrote {out.escape(display_path(result.lock))}: {len(result.pins)} pins "
        f"for CPython {result.python}"
    )


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count / 1e3:.1f} kB"
