"""``olmtool bundle``: build bundles from olmtool.yaml, validate bundle dirs and images."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool import actions
from olmtool.bundle import OPTIONAL_SUITES, TARGET_SUITES
from olmtool.cli import output as out
from olmtool.errors import display_path

if TYPE_CHECKING:
    from olmtool.actions import BundleBuildResult

app = typer.Typer(
    help="Build and validate OLM bundles (registry+v1), and bundle images without Docker.",
    no_args_is_help=True,
)


IMAGE, LAYOUT, PUSH = out.image_options("bundle", "build/oci/<package>-<version>")


@app.command()
def build(
    config: Path | None = out.ConfigOption,
    check: bool = out.check_option("the bundle is"),
    image: str | None = IMAGE,
    layout: Path | None = LAYOUT,
    push_image: bool = PUSH,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Write bundle/<package>/<version>/ from the bundle section of olmtool.yaml.

    Examples:

      olmtool bundle build                 # write the bundle directory

      olmtool bundle build --check         # in CI: fail if the committed bundle is stale

      olmtool bundle build --image 127.0.0.1:5000/etcd-operator-bundle:0.3.0 --push
    """
    target = out.image_target(image, layout, push_image)
    result = out.with_progress(
        "building", actions.bundle_build, config=config, check=check, image=target
    )
    out.emit(result.as_dict(), output, lambda: _print_build(result))
    out.exit_if(result.failed)


def _print_build(result: BundleBuildResult) -> None:
    bundle, difference = result.bundle, result.difference
    where = out.escape(display_path(bundle.directory))
    out.print_waived(bundle.waived)
    if result.check:
        out.print_diffs(difference.diffs)
        out.stdout.print(f"bundle {where}: {'stale' if difference.stale else 'up to date'}")
        if difference.stale:
            out.stdout.print("run [bold]olmtool bundle build[/] to update it")
    else:
        _print_written(result)
        out.stdout.print(
            f"bundle {where}: {len(bundle.files)} files, {len(difference.changed)} changed"
        )
    out.print_saved_image(result.image)


def _print_written(result: BundleBuildResult) -> None:
    """One line per file the build changed: wrote, replaced (a hand-written file now
    generated), removed (olmtool's file no longer written); and the hand-added ones kept."""
    bundle, difference = result.bundle, result.difference
    for name in [*difference.added, *difference.modified]:
        if name in bundle.replaced:
            out.stdout.print(
                f"[yellow]replaced[/] {out.escape(name)} (hand-written; now generated)"
            )
        else:
            out.stdout.print(f"[green]wrote[/] {out.escape(name)}")
    for name in difference.removed:
        out.stdout.print(f"[red]removed[/] {out.escape(name)}")
    for name in bundle.kept:
        out.stdout.print(f"kept {out.escape(name)} (hand-added, not written by olmtool)")


@app.command()
def validate(
    target: str | None = typer.Argument(
        None, help="A bundle directory, or a bundle image reference."
    ),
    select: list[str] = typer.Option(
        None,
        "--select",
        "-s",
        help=f"Optional suites to run too ({', '.join(OPTIONAL_SUITES)}, or all; "
        f"{', '.join(TARGET_SUITES)} only by name); comma lists allowed.",
    ),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
    k8s_version: str | None = typer.Option(
        None,
        "--k8s-version",
        help="Kubernetes version to check removed APIs against (default: the newest olmtool knows, 1.32; a newer spec.minKubeVersion wins).",
    ),
    list_checks: bool = typer.Option(
        False, "--list-checks", help="List every check: origin (upstream/olmtool), severity."
    ),
    ignore: list[str] = out.ignore_option("bundle validate"),
    config: Path | None = out.ConfigOption,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Check a bundle as OLM and operator-framework's validators would, and more.

    Always-on suites: loader, format, content, csv, crd, bundle, objects. The olm-v1
    suite (--select olm-v1) reports what OLM v1 (operator-controller) refuses.

    Upstream checks give operator-framework/api's and opm's verdict; olmtool's own
    checks are errors only where OLM, opm or the apiserver would refuse the bundle
    (--list-checks says which is which).

    Exit 0 when valid, 1 on errors (or on warnings with --strict); waived findings
    (--ignore, olmtool.yaml's validate.ignore) do not count.

    Examples:

      olmtool bundle validate bundle/etcd-operator/0.3.0 --strict --select all

      olmtool bundle validate DIR --strict --select all --ignore good-practices/channel-name="alpha is our preview channel"

      olmtool bundle validate 127.0.0.1:5000/etcd-operator-bundle:0.3.0 --select olm-v1 -o json

      olmtool bundle validate --list-checks
    """
    if list_checks:
        out.emit_checks(actions.bundle_checks(), output)
        return
    if target is None:
        raise typer.BadParameter("a bundle directory or image is required", param_hint="TARGET")
    with out.usage_error("ignore", "--ignore"):
        report = actions.bundle_validate(
            target,
            select=select or [],
            k8s_version=k8s_version,
            ignore=ignore or [],
            config=config,
        )

    def text() -> None:
        out.print_findings(report.findings)
        out.print_waivers(report)
        verdict = "[green]valid[/]" if report.passed(strict=strict) else "[red]invalid[/]"
        out.stdout.print(
            f"{out.escape(report.bundle)}: {verdict}: {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s){out.waived_count(report)} "
            f"({', '.join(report.suites)})"
        )

    out.emit(report.as_dict(strict=strict), output, text)
    crashed = any(f.check.startswith("internal/") for f in report.findings)
    out.exit_if(not report.passed(strict=strict), crashed=crashed)
