"""``olmtool crd``: generate CRDs from Python schemas and check CRD files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool import actions
from olmtool.cli import output as out
from olmtool.errors import ProjectNotFound, UsageError, display_path

if TYPE_CHECKING:
    from olmtool.actions import CrdGenerateResult

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
    config: Path | None = out.ConfigOption,
    check: bool = out.check_option("files are"),
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Write a CRD per CustomResource declared in Python schemas.

    Examples:

      olmtool crd generate                  # as configured in olmtool.yaml

      olmtool crd generate --check          # in CI: fail if generated CRDs are stale

      olmtool crd generate api.py -d config/crd
    """
    try:
        result = actions.crd_generate(
            sources or (), paths=path or (), output_dir=output_dir, config=config, check=check
        )
    except ProjectNotFound as exc:
        raise UsageError(
            f"{exc}; pass --config FILE, or the schema modules (olmtool crd generate api.py)"
        ) from None
    out.emit(result.as_dict(), output, lambda: _print_generate(result))
    out.exit_if(result.failed)


def _print_generate(result: CrdGenerateResult) -> None:
    where = out.escape(display_path(result.output_dir))
    count = len(result.files)
    if result.check:
        out.print_diffs(result.difference.diffs)
        for p in (*result.written, *result.removed):
            out.stdout.print(f"[yellow]stale:[/] {out.escape(display_path(p))}")
        stale = result.difference.stale
        out.stdout.print(f"{count} CRD(s) in {where}: {'stale' if stale else 'up to date'}")
        if stale:
            out.stdout.print("run [bold]olmtool crd generate[/] to update them")
        return
    for p in result.written:
        out.stdout.print(f"[green]wrote[/] {out.escape(display_path(p))}")
    for p in result.removed:
        out.stdout.print(f"[yellow]removed[/] {out.escape(display_path(p))}")
    out.stdout.print(
        f"{count} CRD(s) in {where}: {len(result.written)} written, "
        f"{len(result.unchanged)} unchanged, {len(result.removed)} removed"
    )


@app.command()
def validate(
    paths: list[Path] = typer.Argument(..., help="CRD files, or directories to search for them."),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Check CRDs as the kube-apiserver would, structural-schema rules included.

    Every violation is reported with its file, line and JSON path; exit 1 on errors
    (and on warnings with --strict).

    Example: olmtool crd validate operator/config/crd
    """
    result = actions.crd_validate(paths)
    data = {
        "crds": result.crds_checked,
        "errors": len(result.errors),
        "warnings": len(result.warnings),
        # `crd validate -o json` has never reported the check: its keys stay as they were
        "findings": [
            {**{k: v for k, v in f.as_dict().items() if k != "check"}, "path": f.path or ""}
            for f in result.findings
        ],
    }

    def text() -> None:
        out.print_findings(result.findings, checks=False)
        out.stdout.print(
            f"{result.crds_checked} CRD(s) checked: {len(result.errors)} error(s), "
            f"{len(result.warnings)} warning(s)"
        )

    out.emit(data, output, text)
    out.exit_if(not result.passed(strict=strict))
