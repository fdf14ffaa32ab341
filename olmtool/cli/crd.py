"""``olmtool crd``: generate CRDs from Python schemas and check CRD files."""

from __future__ import annotations

from pathlib import Path

import typer

from olmtool.cli.output import ConfigOption, OutputFormat, OutputOption, emit, escape, stdout
from olmtool.config import load_project
from olmtool.crd import generate_crds, load_resources, sync_files
from olmtool.crd.lint import check_crd_files
from olmtool.errors import InputError, display_path

app = typer.Typer(
    help="Generate CustomResourceDefinitions from Python schemas and check CRDs.",
    no_args_is_help=True,
)


@app.command()
def generate(
    sources: list[str] = typer.Argument(
        None,
        help="Modules (dotted names) or .py files declaring CustomResources; default: olmtool.yaml.",
    ),
    path: list[Path] = typer.Option(
        None, "--path", "-p", help="Directory to import schema modules from (repeatable)."
    ),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", "-d", help="Where to write the CRDs."
    ),
    config: Path | None = ConfigOption,
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 with a diff if files are stale."
    ),
    output: OutputFormat = OutputOption,
) -> None:
    """Write a CRD per CustomResource declared in Python schemas.

    Examples:

      olmtool crd generate                  # as configured in olmtool.yaml

      olmtool crd generate --check          # in CI: fail if generated CRDs are stale

      olmtool crd generate api.py -d config/crd
    """
    modules, search_path, base_dir, out_dir = _resolve(
        sources or [], path or [], output_dir, config
    )
    files = generate_crds(load_resources(modules, search_path=search_path, base_dir=base_dir))
    result = sync_files(files, out_dir, check=check)
    stale = {*result.added, *result.modified}
    written = [out_dir / f.name for f in files if f.name in stale]  # in generation order
    unchanged = [out_dir / name for name in result.unchanged]
    removed = [out_dir / name for name in result.removed]
    data = {
        "outputDir": display_path(out_dir),
        "check": check,
        "stale": result.stale,
        "written": [display_path(p) for p in written],
        "unchanged": [display_path(p) for p in unchanged],
        "removed": [display_path(p) for p in removed],
    }

    def text() -> None:
        if check:
            for diff in result.diffs:
                stdout.print(escape(diff), end="")
            verb = "stale" if result.stale else "up to date"
            for p in (*written, *removed):
                stdout.print(f"[yellow]stale:[/] {escape(display_path(p))}")
            stdout.print(f"{len(files)} CRD(s) in {escape(display_path(out_dir))}: {verb}")
            if result.stale:
                stdout.print("run [bold]olmtool crd generate[/] to update them")
            return
        for p in written:
            stdout.print(f"[green]wrote[/] {escape(display_path(p))}")
        for p in removed:
            stdout.print(f"[yellow]removed[/] {escape(display_path(p))}")
        stdout.print(
            f"{len(files)} CRD(s) in {escape(display_path(out_dir))}: {len(written)} written, "
            f"{len(unchanged)} unchanged, {len(removed)} removed"
        )

    emit(data, output, text)
    if check and result.stale:
        raise typer.Exit(1)


@app.command()
def validate(
    paths: list[Path] = typer.Argument(..., help="CRD files, or directories to search for them."),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
    output: OutputFormat = OutputOption,
) -> None:
    """Check CRDs as the kube-apiserver would, structural-schema rules included.

    Every violation is reported with its file, line and JSON path; exit 1 on errors
    (and on warnings with --strict).

    Example: olmtool crd validate operator/config/crd
    """
    result = check_crd_files(paths)
    data = {
        "crds": result.crds_checked,
        "errors": len(result.errors),
        "warnings": len(result.warnings),
        "findings": [f.as_dict() for f in result.findings],
    }

    def text() -> None:
        for finding in result.findings:
            style = "red" if finding.severity == "error" else "yellow"
            stdout.print(f"[{style}]{finding.severity}[/] {escape(str(finding))}")
        stdout.print(
            f"{result.crds_checked} CRD(s) checked: {len(result.errors)} error(s), "
            f"{len(result.warnings)} warning(s)"
        )

    emit(data, output, text)
    if result.errors or (strict and result.warnings):
        raise typer.Exit(1)


def _resolve(
    sources: list[str], paths: list[Path], output_dir: Path | None, config: Path | None
) -> tuple[list[str], list[Path], Path, Path]:
    """Modules, import path, base directory and output directory, from the command line
    or olmtool.yaml."""
    if sources:
        return sources, [*paths, Path.cwd()], Path.cwd(), output_dir or Path("config/crd")
    project = load_project(config)
    settings = project.settings.crd
    if settings is None:
        raise InputError(
            "has no crd section (crd: {modules: [...], output: ...})", path=project.file
        )
    search = [*paths, *(project.path(p) for p in settings.paths)]
    return settings.modules, search, project.root, output_dir or project.path(settings.output)
