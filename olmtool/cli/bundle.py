"""``olmtool bundle``: build bundles from olmtool.yaml, validate bundle dirs and images."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from olmtool.bundle import build_bundle, write_bundle
from olmtool.bundle.checks import DEFAULT_SUITES, OPTIONAL_SUITES
from olmtool.bundle.image import bundle_image, load_bundle_image
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from olmtool.cli.output import (
    ConfigOption,
    OutputFormat,
    OutputOption,
    emit,
    escape,
    save_image,
    stdout,
)
from olmtool.config import load_project
from olmtool.errors import InputError, display_path
from olmtool.images import parse_reference

app = typer.Typer(
    help="Build and validate OLM bundles (registry+v1), and bundle images without Docker.",
    no_args_is_help=True,
)


@app.command()
def build(
    config: Path | None = ConfigOption,
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 with a diff if the bundle is stale."
    ),
    image: str | None = typer.Option(
        None, "--image", "-i", help="Also build the bundle image REF as an OCI layout."
    ),
    layout: Path | None = typer.Option(
        None,
        "--layout",
        help="Where to write the OCI layout (default: build/oci/<package>-<version>).",
    ),
    push_image: bool = typer.Option(False, "--push", help="Push the image to its registry."),
    output: OutputFormat = OutputOption,
) -> None:
    """Write bundle/<package>/<version>/ from the bundle section of olmtool.yaml.

    Examples:

      olmtool bundle build                 # write the bundle directory

      olmtool bundle build --check         # in CI: fail if the committed bundle is stale

      olmtool bundle build --image 127.0.0.1:5000/etcd-operator-bundle:0.3.0 --push
    """
    if push_image and not image:
        raise InputError("--push needs --image REF")
    project = load_project(config)
    settings = project.settings.bundle
    if settings is None:
        raise InputError(
            "has no bundle section (bundle: {package: ..., version: ...})", path=project.file
        )
    crd_dir = project.settings.crd.output if project.settings.crd else None
    bundle = build_bundle(settings, project.root, crd_dir=crd_dir)
    difference = write_bundle(bundle, check=check)
    data: dict[str, object] = {
        "bundle": display_path(bundle.directory),
        "check": check,
        "stale": difference.stale,
        "added": difference.added,
        "modified": difference.modified,
        "removed": difference.removed,
    }
    if image:
        data.update(_image(bundle, image, layout, push_image, settings.package, settings.version))

    def text() -> None:
        where = escape(display_path(bundle.directory))
        if check:
            for diff in difference.diffs:
                stdout.print(escape(diff), end="")
            state = "stale" if difference.stale else "up to date"
            stdout.print(f"bundle {where}: {state}")
            if difference.stale:
                stdout.print("run [bold]olmtool bundle build[/] to update it")
        else:
            for name in difference.changed:
                stdout.print(f"[green]wrote[/] {escape(name)}")
            stdout.print(
                f"bundle {where}: {len(bundle.files)} files, {len(difference.changed)} changed"
            )
        if image:
            stdout.print(
                f"image {escape(image)}: {data['digest']} (OCI layout {escape(str(data['layout']))})"
            )
            if push_image:
                stdout.print(f"[green]pushed[/] {escape(image)}")

    emit(data, output, text)
    if check and difference.stale:
        raise typer.Exit(1)


def _image(
    bundle, reference: str, layout: Path | None, push_image: bool, package: str, version: str
):
    target = layout or Path("build/oci") / f"{package}-{version}"
    return save_image(bundle_image(bundle), reference, target, push_image=push_image, tag=version)


@app.command()
def validate(
    target: str = typer.Argument(..., help="A bundle directory, or a bundle image reference."),
    select: list[str] = typer.Option(
        None,
        "--select",
        "-s",
        help=f"Optional suites to run too ({', '.join(OPTIONAL_SUITES)}, or all); comma lists allowed.",
    ),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
    k8s_version: str | None = typer.Option(
        None,
        "--k8s-version",
        help="Kubernetes version to check deprecated APIs against (default: spec.minKubeVersion).",
    ),
    output: OutputFormat = OutputOption,
) -> None:
    """Check a bundle as OLM and operator-framework's validators would, and more.

    Always-on suites: loader, format, content, csv, crd, bundle, objects.

    Exit 0 when valid, 1 on errors (or on warnings with --strict).

    Examples:

      olmtool bundle validate bundle/etcd-operator/0.3.0 --strict --select all

      olmtool bundle validate 127.0.0.1:5000/etcd-operator-bundle:0.3.0 -o json
    """
    suites = select_suites(select or [])
    path = Path(target)
    cleanup = None
    if path.exists():
        bundle = load_bundle(path)
    elif "/" in target or ":" in target:
        parse_reference(target)  # a clear error for something that is neither
        bundle = load_bundle_image(target)
        cleanup = bundle.root
    else:
        raise InputError("no such bundle directory (nor an image reference)", path=target)
    try:
        report = validate_bundle(bundle, suites=suites, k8s_version=k8s_version)
    finally:
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)

    def text() -> None:
        for finding in report.findings:
            style = "red" if finding.severity == "error" else "yellow"
            stdout.print(
                f"[{style}]{finding.severity}[/] [dim]\\[{finding.check}][/] {escape(str(finding))}"
            )
        verdict = "[green]valid[/]" if report.passed(strict=strict) else "[red]invalid[/]"
        stdout.print(
            f"{escape(report.bundle)}: {verdict}: {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s) ({', '.join(report.suites)})"
        )

    emit(report.as_dict(strict=strict), output, text)
    if not report.passed(strict=strict):
        raise typer.Exit(1)


__all__ = ["DEFAULT_SUITES", "app"]
