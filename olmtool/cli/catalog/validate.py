"""``olmtool catalog validate``: opm's checks as an error tree, plus the ones opm misses."""

from __future__ import annotations

from pathlib import Path

import typer

from olmtool import actions
from olmtool.cli.catalog import app
from olmtool.cli.output import (
    OutputFormat,
    OutputOption,
    emit,
    emit_checks,
    escape,
    exit_if,
    stdout,
)
from olmtool.errors import display_path


@app.command()
def validate(
    directory: Path | None = typer.Argument(
        None, help="The catalog's root directory (or one file)."
    ),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
    list_checks: bool = typer.Option(
        False, "--list-checks", help="List every check: origin (upstream/olmtool), severity."
    ),
    output: OutputFormat = OutputOption,
) -> None:
    """Check a file-based catalog the way `opm validate` does, and more.

    Beyond opm (warnings; --list-checks shows each check's origin): skips naming
    nothing, skipRanges matching nothing, CSV replaces that disagree with the channel,
    bundles with no upgrade path to the head, a default channel whose head is older
    than another channel's, GVK and icon sanity.

    Exit 0 when valid, 1 on errors (or on warnings with --strict).

    Examples:

      olmtool catalog validate catalog/

      olmtool catalog validate catalog/ --strict -o json

      olmtool catalog validate --list-checks
    """
    if list_checks:
        emit_checks(actions.catalog_checks(), output)
        return
    if directory is None:
        raise typer.BadParameter("a catalog directory is required", param_hint="DIRECTORY")
    report = actions.catalog_validate(directory)
    passed = report.passed(strict=strict)

    def text() -> None:
        if report.findings:
            from olmtool.catalog import error_tree_lines

            for line in error_tree_lines(report.findings):
                stdout.print(escape(line))
        verdict = "[green]valid[/]" if passed else "[red]invalid[/]"
        stdout.print(
            f"{escape(display_path(directory))}: {verdict}: {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s)"
        )

    emit(report.as_dict(strict=strict), output, text)
    exit_if(not passed)
