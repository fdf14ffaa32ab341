"""``olmtool test``: checks a CI runs before releasing (upgrade paths)."""

from __future__ import annotations

import typer

from olmtool.actions.upgrade_test import upgrade_test
from olmtool.cli.output import OutputFormat, OutputOption, emit, escape, exit_if, stdout

app = typer.Typer(
    help="Test what OLM will do with a catalog (upgrade paths).", no_args_is_help=True
)


@app.command("upgrade")
def upgrade(
    catalog: str = typer.Option(
        ..., "--catalog", help="Catalog directory or registry address host:port."
    ),
    package: str = typer.Option(..., "--package", help="Package to check."),
    channel: str = typer.Option("", "--channel", help="Channel (default: the package's default)."),
    output: OutputFormat = OutputOption,
) -> None:
    """Check that every bundle of a channel reaches the head through OLM v0's upgrade
    rules (replaces, skips, skipRange; nearest to the head first); exit 1 when one is
    stranded, the head is unreachable, or a skipRange is wrong.

    Example: olmtool test upgrade --catalog catalog --package etcd-operator
    """
    plan = upgrade_test(catalog, package, channel or None)

    def text() -> None:
        stdout.print(
            f"{escape(plan.package)} channel {escape(plan.channel)}, head {escape(plan.head or '-')}"
        )
        for path in plan.paths:
            hops = " -> ".join(path.hops) if path.hops else "(head)"
            style = "green" if path.status in ("at-head", "reaches-head") else "red"
            stdout.print(f"  [{style}]{path.status:<13}[/] {escape(path.bundle)}: {escape(hops)}")
        for problem in plan.problems:
            style = "red" if problem.severity == "error" else "yellow"
            where = f" {problem.bundle}:" if problem.bundle else ""
            stdout.print(
                f"  [{style}]{problem.severity}[/] [{problem.kind}]{escape(where)} {escape(problem.message)}"
            )
        verdict = "[green]passed[/]" if plan.passed else "[red]failed[/]"
        stdout.print(f"upgrade paths: {verdict}")

    emit(plan.as_dict(), output, text)
    exit_if(not plan.passed)
