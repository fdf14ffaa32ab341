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
    from olmtool.actions import BundleBuildResult, ReleaseBuild
    from olmtool.bundle import BuiltBundle
    from olmtool.fsutil import TreeDiff

app = typer.Typer(
    help="Build and validate OLM bundles (registry+v1), and bundle images without Docker.",
    no_args_is_help=True,
)


IMAGE, LAYOUT, PUSH = out.image_options("bundle", "build/oci/<package>-<version>")


VERSION = typer.Option(
    None, "--version", help="The release to build (default: the newest in olmtool.yaml)."
)
ALL = typer.Option(False, "--all", help="Build every release listed in olmtool.yaml.")


@app.command()
def build(
    config: Path | None = out.ConfigOption,
    version: str | None = VERSION,
    all_releases: bool = ALL,
    check: bool = out.check_option("a bundle is"),
    image: str | None = IMAGE,
    layout: Path | None = LAYOUT,
    push_image: bool = PUSH,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Write bundle/<package>/<version>/ from the bundle section of olmtool.yaml.

    With bundle.releases, builds the newest release, or --version X, or --all. A frozen
    release is never rewritten, and an older release whose CRDs would change to the
    shared ones is refused (exit 1): see the README's Releases section.

    Examples:

      olmtool bundle build                 # write the bundle directory

      olmtool bundle build --check --all   # in CI: fail if a committed bundle is stale

      olmtool bundle build --version 0.2.0

      olmtool bundle build --image 127.0.0.1:5000/etcd-operator-bundle:{version} --push
    """
    target = out.image_target(image, layout, push_image)
    result = out.with_progress(
        "building",
        actions.bundle_build,
        config=config,
        check=check,
        image=target,
        version=version,
        all_releases=all_releases,
    )
    out.emit(result.as_dict(), output, lambda: _print_build(result))
    out.exit_if(result.failed)


def _print_build(result: BundleBuildResult) -> None:
    for release in result.releases:
        _print_release(release, result.check)


def _print_release(release: ReleaseBuild, check: bool) -> None:
    bundle, difference = release.bundle, release.difference
    where = out.escape(display_path(bundle.directory))
    out.print_waived(bundle.waived)
    frozen = " (frozen)" if release.frozen else ""
    if release.refused:
        out.stdout.print(f"bundle {where}: [red]refused[/]: {out.escape(release.refused)}")
    elif check:
        out.print_diffs(difference.diffs)
        out.stdout.print(f"bundle {where}: {'stale' if difference.stale else 'up to date'}")
        if difference.stale:
            out.stdout.print("run [bold]olmtool bundle build[/] to update it")
    elif not difference.stale:
        out.stdout.print(f"bundle {where}: unchanged{frozen}, {len(bundle.files)} files")
    else:
        _print_written(bundle, difference)
        out.stdout.print(
            f"bundle {where}: {len(bundle.files)} files, {len(difference.changed)} changed{frozen}"
        )
    out.print_saved_image(release.image)


@app.command()
def release(
    next_version: str = typer.Argument(
        ..., metavar="NEXT", help="The new release's version, e.g. 0.4.0."
    ),
    channels: list[str] = typer.Option(
        None,
        "--channel",
        help="Its channels (repeatable; default: bundle.channels, else the newest release's).",
    ),
    skip_range: str | None = typer.Option(
        None, "--skip-range", help='Its olm.skipRange, e.g. ">=0.1.0 <0.4.0".'
    ),
    replaces: str = typer.Option(
        "auto",
        "--replaces",
        help="auto: the newest release of its channels; none; or a CSV name or version.",
    ),
    build_it: bool = typer.Option(False, "--build", help="Build the new release right away."),
    config: Path | None = out.ConfigOption,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Add release NEXT to bundle.releases in olmtool.yaml, keeping the file as written.

    replaces is set to the head (newest release) of its channels, skips to the heads of
    its other channels; NEXT must be newer than each. A one-release olmtool.yaml is
    first turned into the releases form (its version and upgrade edges become the first
    release).

    Examples:

      olmtool bundle release 0.4.0

      olmtool bundle release 1.0.0 --channel stable --skip-range ">=0.1.0 <1.0.0" --build
    """
    result = out.with_progress(
        "releasing",
        actions.bundle_release,
        next_version=next_version,
        config=config,
        channels=channels or [],
        skip_range=skip_range,
        replaces=replaces,
        build=build_it,
    )

    def text() -> None:
        where = out.escape(display_path(result.file))
        edges = [f"replaces {result.replaces}"] if result.replaces else []
        edges += [f"skips {', '.join(result.skips)}"] if result.skips else []
        edges += [f"skipRange {result.skip_range}"] if result.skip_range else []
        if result.converted:
            out.stdout.print(f"{where}: turned into the releases form")
        out.stdout.print(
            f"{where}: added release {result.version} "
            f"(channels {', '.join(result.channels)}; {'; '.join(edges) or 'no upgrade edges'})"
        )
        for note in result.notes:
            label = "warning" if note.startswith("[crd-upgrade/") else "note"
            out.stdout.print(f"[yellow]{label}[/] {out.escape(note)}")
        if result.build:
            _print_build(result.build)

    out.emit(result.as_dict(), output, text)
    out.exit_if(result.failed)


@app.command()
def image(
    directory: Path = typer.Argument(
        ..., metavar="DIR", help="A bundle directory (any: built here or not)."
    ),
    reference: str = typer.Option(
        ..., "--image", "-i", help="The image REF; {version} and {package} expand."
    ),
    layout: Path | None = LAYOUT,
    push_image: bool = typer.Option(False, "--push", help="Push it to its registry."),
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Turn a bundle directory into a bundle image (OCI layout, and pushed with --push).

    The directory must load as a bundle (metadata/annotations.yaml with the package, one
    CSV); its files go into the image as they are. Default layout:
    build/oci/<package>-<version>.

    Examples:

      olmtool bundle image bundle/etcd-operator/0.1.0 --image 127.0.0.1:5000/etcd-bundle:{version}

      olmtool bundle image old/0.9.0 -i quay.io/me/foo-bundle:v0.9.0 --push -o json
    """
    from olmtool.images import ImageTarget

    target = ImageTarget(reference, layout, push_image)
    result = out.with_progress(
        "saving", actions.bundle_dir_image, directory=directory, image=target
    )

    def text() -> None:
        out.stdout.print(f"bundle {out.escape(display_path(result.directory))}")
        out.print_saved_image(result.image)

    out.emit(result.as_dict(), output, text)


def _print_written(bundle: BuiltBundle, difference: TreeDiff) -> None:
    """One line per file the build changed: wrote, replaced (a hand-written file now
    generated), removed (olmtool's file no longer written); and the hand-added ones kept."""
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
    previous: str | None = typer.Option(
        None,
        "--previous",
        metavar="DIR|IMAGE",
        help="The release this bundle upgrades from: its CRDs must stay upgrade-safe "
        "(stored versions kept: an error; what OLM v1's preflight refuses: warnings, "
        "errors with --select olm-v1).",
    ),
    list_checks: bool = out.ListChecksOption,
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

      olmtool bundle validate bundle/etcd-operator/0.5.0 --previous bundle/etcd-operator/0.4.0

      olmtool bundle validate --list-checks
    """
    needed = "a bundle directory or image"
    if out.listed_checks(
        list_checks, actions.bundle_checks, output, given=target, needed=needed, hint="TARGET"
    ):
        return
    with out.usage_error("ignore", "--ignore"):
        report = actions.bundle_validate(
            target,
            select=select or [],
            k8s_version=k8s_version,
            ignore=ignore or [],
            config=config,
            previous=previous,
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
