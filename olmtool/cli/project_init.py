"""``olmtool init``: start a project (olmtool.yaml, schema module, base CSV, sample)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool.cli.output import OutputFormat, OutputOption, emit, error, escape, stdout
from olmtool.errors import ArgumentError, display_path
from olmtool.scaffold import (
    DEFAULT_API_VERSION,
    DEFAULT_CHANNEL,
    DEFAULT_IMAGE,
    DEFAULT_INSTALL_MODES,
    DEFAULT_VERSION,
)

if TYPE_CHECKING:
    from olmtool.actions import ProjectInitResult

REQUIRED = ("--package", "--group", "--kind")
EXIT_USAGE = 2  # as for any other missing or malformed flag


def init(
    directory: Path = typer.Argument(
        Path("."), metavar="DIR", help="Project directory, created when missing."
    ),
    package: str | None = typer.Option(
        None, "--package", help="OLM package name, a DNS-1123 label (foo-operator)."
    ),
    group: str | None = typer.Option(
        None, "--group", help="API group, a DNS subdomain with a dot (demo.example.com)."
    ),
    kind: str | None = typer.Option(
        None, "--kind", help="Kind of the custom resource, UpperCamelCase (Widget)."
    ),
    version: str = typer.Option(DEFAULT_VERSION, "--version", help="The first release (semver)."),
    api_version: str = typer.Option(
        DEFAULT_API_VERSION, "--api-version", help="The API's version (v1alpha1, v1, ...)."
    ),
    install_modes: list[str] = typer.Option(
        None,
        "--install-modes",
        help="Supported install modes, comma lists allowed (OwnNamespace, SingleNamespace, "
        f"MultiNamespace, AllNamespaces); default: {','.join(DEFAULT_INSTALL_MODES)}.",
    ),
    channel: str = typer.Option(DEFAULT_CHANNEL, "--channel", help="The bundle's channel."),
    image: str = typer.Option(
        DEFAULT_IMAGE, "--image", help="Operator image; {package} and {version} are filled in."
    ),
    domain: str | None = typer.Option(
        None,
        "--domain",
        help="Completes a --group without a dot (--group demo --domain example.com); the "
        "provider, links and maintainer e-mail use it (default: the group's parent domain).",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist."),
    output: OutputFormat = OutputOption,
) -> None:
    """Start a project: olmtool.yaml, a Python schema module with one kind, a base CSV,
    a sample and a placeholder icon; then crd generate, bundle build, bundle validate
    --strict --select all and catalog publish work as they are.

    On a terminal, asks for a missing --package, --group or --kind;
    in CI (CI set) or with no terminal, they are required (exit 2).

    Example:

      olmtool init foo --package foo-operator --group demo.example.com --kind Widget
    """
    from olmtool import actions

    package, group, kind = _complete(directory, package, group, kind, domain)
    result = actions.project_init(
        directory,
        package=package,
        group=group,
        kind=kind,
        version=version,
        api_version=api_version,
        install_modes=install_modes or DEFAULT_INSTALL_MODES,
        channel=channel,
        image=image,
        domain=domain,
        force=force,
    )
    emit(result.as_dict(), output, lambda: _print_init(result))


def _print_init(result: ProjectInitResult) -> None:
    for path in result.written:
        stdout.print(f"[green]wrote[/] {escape(display_path(path))}")
    stdout.print("next steps:")
    for step in result.next_steps:
        stdout.print(f"  {escape(step)}")


def _complete(
    directory: Path, package: str | None, group: str | None, kind: str | None, domain: str | None
) -> tuple[str, str, str]:
    """The three required names: given, asked for on a terminal, else a usage error."""
    missing = [
        flag for flag, value in zip(REQUIRED, (package, group, kind), strict=True) if not value
    ]
    if missing and not interactive():
        why = "CI is set" if os.environ.get("CI") else "stdin is not a terminal"
        error(f"missing {', '.join(missing)}: required when {why} (no prompts)")
        raise typer.Exit(EXIT_USAGE)
    from olmtool.scaffold import check_group, check_kind, check_package

    def full_group(answer: str) -> str:
        return check_group(answer, domain)

    package = package or _ask("Package name", check_package, _folder_name(directory))
    group = group or _ask("API group (like demo.example.com)", full_group, None)
    kind = kind or _ask("Kind (UpperCamelCase)", lambda k: check_kind(k, full_group(group)), None)
    return package, group, kind


def interactive() -> bool:
    """Prompts only for a person: stdin a terminal and not in CI."""
    return sys.stdin.isatty() and not os.environ.get("CI")


def _ask(question: str, check: Callable[[str], object], default: str | None) -> str:
    while True:
        answer = typer.prompt(question, default=default).strip()
        try:
            check(answer)
        except ArgumentError as exc:
            error(exc.message)
            continue
        return answer


def _folder_name(directory: Path) -> str | None:
    """The project directory's name, offered as the package name when it is one."""
    from olmtool.scaffold import check_package

    name = directory.resolve().name
    try:
        check_package(name)
    except ArgumentError:
        return None
    return name
