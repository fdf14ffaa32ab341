"""Rendering command results as text (rich), JSON or YAML, and reporting errors."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console

from olmtool.errors import (
    ArgumentError,
    OlmtoolError,
    ProjectNotFound,
    UsageError,
    display_path,
)

if TYPE_CHECKING:
    from olmtool.findings import CheckRow, Finding, Findings
    from olmtool.images import ImageTarget, SavedImage
    from olmtool.waivers import WaivedFinding

T = TypeVar("T")

# soft_wrap: one finding stays on one line however narrow the terminal (or CI log) is.
stdout = Console(soft_wrap=True, highlight=False)
stderr = Console(stderr=True, soft_wrap=True, highlight=False)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


ConfigOption = typer.Option(
    None, "--config", "-c", help="Project file (default: olmtool.yaml found upward)."
)


def check_option(what: str) -> Any:
    """``--check``: compare with what is on disk instead of writing."""
    return typer.Option(
        False, "--check", help=f"Write nothing; exit 1 with a diff if {what} stale."
    )


def image_options(what: str, default_layout: str) -> tuple[Any, Any, Any]:
    """``--image REF``, ``--layout DIR`` and ``--push`` for commands that build an image."""
    return (
        typer.Option(None, "--image", "-i", help=f"Also build the {what} image REF (OCI layout)."),
        typer.Option(
            None, "--layout", help=f"Where to write the OCI layout (default: {default_layout})."
        ),
        typer.Option(False, "--push", help=f"Push the {what} image to its registry."),
    )


OutputOption = typer.Option(
    OutputFormat.text, "--output", "-o", help="Output format: text for people, json/yaml for CI."
)


def emit(data: Any, fmt: OutputFormat, text: Callable[[], None]) -> None:
    """Print ``data`` as JSON/YAML, or call ``text`` to print it for people."""
    if fmt is OutputFormat.json:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif fmt is OutputFormat.yaml:
        from olmtool import yamlwrite  # ruamel.yaml: only for YAML output

        sys.stdout.write(yamlwrite.dump(data))
    else:
        text()


def error(message: str) -> None:
    stderr.print(f"[bold red]error:[/] {escape(message)}")


def escape(text: str) -> str:
    """Keep user text (which may contain [brackets]) out of rich's markup parser."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def with_progress(message: str, action: Callable[..., T], **arguments: Any) -> T:
    """Run a long action with a spinner on stderr that shows its progress lines."""
    with stderr.status(message) as spinner:
        return action(**arguments, progress=spinner.update)


def image_target(image: str | None, layout: Path | None, push_image: bool) -> ImageTarget | None:
    """The --image/--layout/--push flags as an action's image target."""
    if push_image and not image:
        raise UsageError("--push needs --image REF")
    from olmtool.images import ImageTarget

    return ImageTarget(image, layout, push_image) if image else None


def print_saved_image(saved: SavedImage | None, *, layout: bool = True) -> None:
    if saved is None:
        return
    where = f" (OCI layout {escape(display_path(saved.layout))})" if layout else ""
    stdout.print(f"image {escape(saved.reference)}: {saved.digest}{where}")
    if saved.pushed:
        stdout.print(f"[green]pushed[/] {escape(saved.reference)}")


def print_findings(findings: Iterable[Finding], *, checks: bool = True) -> None:
    """One line per finding: severity, check id (when ``checks``), location and message."""
    for finding in findings:
        style = "red" if finding.severity == "error" else "yellow"
        check = f" [dim]\\[{finding.check}][/]" if checks else ""
        stdout.print(f"[{style}]{finding.severity}[/]{check} {escape(str(finding))}")


def ignore_option(what: str) -> Any:
    """``--ignore CHECK[:FILE][=REASON]`` (repeatable): waive findings."""
    return typer.Option(
        None,
        "--ignore",
        metavar="CHECK[:FILE][=REASON]",
        help=f"Waive a check's findings (repeatable; FILE: a glob matching the end of the "
        f"file's path): listed as waived, outside the verdict. olmtool.yaml's "
        f"validate.ignore adds more. Check ids: {what} --list-checks.",
    )


@contextlib.contextmanager
def usage_error(argument: str, flag: str) -> Iterator[None]:
    """An ArgumentError about ``argument`` as a usage error of ``flag`` (exit code 2)."""
    try:
        yield
    except ArgumentError as exc:
        if exc.argument != argument:
            raise
        raise typer.BadParameter(exc.message, param_hint=f"'{flag}'") from None


def print_waivers(report: Findings) -> None:
    """The findings waivers accepted, with their reasons; waivers that matched nothing."""
    print_waived(report.waived)
    for waiver in report.unused_waivers:
        stdout.print(
            f"note: waiver {escape(waiver.label)} ({escape(waiver.source)}) matched no finding"
        )


def print_waived(waived: Iterable[WaivedFinding], *, checks: bool = True) -> None:
    """One line per waived finding: check, location, message, the reason and its source."""
    for item in waived:
        finding, waiver = item.finding, item.waiver
        check = f" [dim]\\[{finding.check}][/]" if checks else ""
        reason = f"{waiver.reason}; " if waiver.reason else ""
        stdout.print(
            f"[dim]waived[/]{check} {escape(str(finding))} "
            f"[dim]({escape(reason)}{escape(waiver.source)})[/]"
        )


def waived_count(report: Findings) -> str:
    """``, 2 waived`` for a verdict line (nothing when no finding was waived)."""
    return f", {len(report.waived)} waived" if report.waived else ""


def emit_checks(rows: list[CheckRow], fmt: OutputFormat) -> None:
    """``--list-checks``: every check id with its origin, severity and summary."""

    def text() -> None:
        width = max(len(row.check) for row in rows)
        for row in rows:
            stdout.print(
                f"{escape(row.check):<{width}}  {row.origin:<8}  {row.severity:<13}  "
                f"{escape(row.summary)}"
            )

    emit({"checks": [row.as_dict() for row in rows]}, fmt, text)


ListChecksOption = typer.Option(
    False, "--list-checks", help="List every check: origin (upstream/olmtool), severity."
)


def listed_checks(
    list_checks: bool,
    checks: Callable[[], list[CheckRow]],
    fmt: OutputFormat,
    *,
    given: object,
    needed: str,
    hint: str,
) -> bool:
    """``--list-checks`` prints the validator's ``checks`` (True: the command is done);
    without it, what to validate (``given``) is required: ``needed`` names it."""
    if list_checks:
        emit_checks(checks(), fmt)
        return True
    if given is None:
        raise typer.BadParameter(f"{needed} is required", param_hint=hint)
    return False


def print_diffs(diffs: Iterable[str]) -> None:
    for diff in diffs:
        stdout.print(escape(diff), end="")


EXIT_USAGE = 2  # the command was called wrongly (click's own code for a bad flag)
EXIT_INTERNAL_ERROR = 3  # a bug in olmtool, never a verdict on the input


def exit_if(failed: bool, *, crashed: bool = False) -> None:
    """Exit 1 (findings, staleness) once the result has been printed; 3 when a check
    crashed (an ``internal/`` finding), so that CI tells a bug from a verdict."""
    if crashed:
        raise typer.Exit(EXIT_INTERNAL_ERROR)
    if failed:
        raise typer.Exit(1)


# Library errors name the keyword argument; these are the flags behind them.
FLAGS = {
    "all_releases": "--all",
    "allow_empty_image": "--allow-empty-image",
    "base": "--base",
    "api_version": "--api-version",
    "approval": "--approval",
    "bundle_tags": "--bundle-tags",
    "catalog": "--catalog",
    "install_mode": "--install-mode",
    "channel": "--channel",
    "channels": "--channel",
    "domain": "--domain",
    "examples": "--examples",
    "group": "--group",
    "grpc_port": "--grpc-port",
    "http_port": "--http-port",
    "image": "--image",
    "install_modes": "--install-modes",
    "k8s_version": "--k8s-version",
    "layout": "--layout",
    "kind": "--kind",
    "minimum_version": "--minimum-version",
    "name": "--name",
    "next_version": "NEXT",
    "node": "--no-node",
    "package": "--package",
    "opm_compat": "--opm-compat",
    "output_dir": "--output-dir",
    "probe": "--probe",
    "probe_path": "--probe-path",
    "registry": "--registry",
    "registry_port": "--registry-port",
    "replaces": "--replaces",
    "skip_range": "--skip-range",
    "start": "--from/--all",
    "tags": "--tag",
    "version": "--version",
}


def exit_code(exc: OlmtoolError) -> int:
    """What ``olmtool`` exits with for a user error: 2 for a usage error, else 1."""
    return EXIT_USAGE if isinstance(exc, UsageError) else 1


def error_line(exc: OlmtoolError) -> str:
    """A user error as the CLI shows it: flags instead of argument names, and a hint."""
    if isinstance(exc, ArgumentError) and exc.argument:
        return f"{FLAGS.get(exc.argument, exc.argument)} {exc.message}"
    if isinstance(exc, ProjectNotFound):
        return f"{exc}; pass --config FILE for one elsewhere"
    return str(exc)
