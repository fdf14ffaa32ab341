"""``olmtool test``: checks a CI runs before releasing (upgrade paths)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool.cli.install import check_cluster_flags, kubeconfig_option, name_option
from olmtool.cli.output import (
    OutputFormat,
    OutputOption,
    emit,
    escape,
    exit_if,
    stdout,
    with_progress,
)

if TYPE_CHECKING:
    from rich.table import Table

    from olmtool.olm import UpgradePlan, UpgradeReport

app = typer.Typer(
    help="Test what OLM will do with a catalog (upgrade paths).", no_args_is_help=True
)


@app.command("upgrade")
def upgrade(
    catalog: str = typer.Option(
        ...,
        "--catalog",
        help="Catalog directory, registry address host:port, or catalog image.",
    ),
    package: str = typer.Option(..., "--package", help="Package to check."),
    channel: str = typer.Option("", "--channel", help="Channel (default: the package's default)."),
    start: str = typer.Option(
        "", "--from", help="Dynamic: install this version (or CSV name) and upgrade it to the head."
    ),
    every: bool = typer.Option(
        False, "--all", help="Dynamic: do it from every bundle of the channel but the head."
    ),
    kubeconfig: Path | None = kubeconfig_option("Dynamic: cluster with OLM"),
    name: str | None = name_option("Dynamic: local cluster to use"),
    probe: str = typer.Option(
        "",
        "--probe",
        help="The package's data probe, module:Class or DIR:module:Class (default: none).",
    ),
    probe_path: Path | None = typer.Option(
        None, "--probe-path", help="Directory put first on the import path for --probe."
    ),
    junit: Path | None = typer.Option(
        None,
        "--junit",
        help="Also write a JUnit XML report (one testcase per start version; the static "
        "check too: one per path, failed when it strands or a hop is refused).",
    ),
    timeout: float = typer.Option(
        300.0, "--timeout", help="Seconds to wait for each step (install, upgrade offer, hop)."
    ),
    reset_crds: bool = typer.Option(
        False,
        "--reset-crds",
        help="Delete the package's CRDs (and all their objects) before each start version.",
    ),
    keep: bool = typer.Option(
        False, "--keep", help="Keep each start version's namespace (default: deleted)."
    ),
    examples: str = typer.Option(
        "ready",
        "--examples",
        help="Dynamic: the CSV's alm-examples: ready (create them; each must become Ready "
        "after the install and every hop), create (create them, never wait), none.",
    ),
    output: OutputFormat = OutputOption,
) -> None:
    """Check that every bundle of a channel reaches the head through OLM v0's upgrade
    rules (replaces, skips, skipRange; nearest to the head first); exit 1 when one is
    stranded, the head is unreachable, or a skipRange is wrong.

    With --from or --all the upgrade is done for real on a cluster with OLM: each start
    version is installed (Manual approval) with its alm-examples and the probe's data,
    then upgraded hop by hop to the head; exit 1 when any run fails. A catalog directory
    is served from this process on a loopback port (a local cluster only). An apiserver
    outage of up to 60 s is ridden out (requests are retried).

    Examples: olmtool test upgrade --catalog catalog --package etcd-operator

    olmtool test upgrade --catalog catalog --package etcd-operator --all
    --probe operator:etcd_operator.probe:EtcdProbe --junit upgrade.xml

    olmtool test upgrade --catalog catalog --package etcd-operator --from 0.2.0 --name dev
    """
    from olmtool import actions

    if start or every:
        check_cluster_flags(kubeconfig, name)
        report = with_progress(
            f"upgrading {package}",
            actions.upgrade_test_dynamic,
            catalog=catalog,
            package=package,
            channel=channel or None,
            start=start or None,
            every=every,
            kubeconfig=kubeconfig,
            name=name,
            probe=probe or None,
            probe_path=probe_path,
            timeout=timeout,
            reset_crds=reset_crds,
            keep=keep,
            junit=junit,
            examples=examples,
        )
        emit(report.as_dict(), output, lambda: print_report(report))
        exit_if(not report.passed)
        return
    plan = actions.upgrade_test(catalog, package, channel or None, junit=junit)
    emit(plan.as_dict(), output, lambda: print_plan(plan))
    exit_if(not plan.passed)


def print_plan(plan: UpgradePlan) -> None:
    stdout.print(
        f"{escape(plan.package)} channel {escape(plan.channel)}, head {escape(plan.head or '-')}"
    )
    failing = {p.bundle for p in plan.problems if p.severity == "error"}
    for path in plan.paths:
        hops = " -> ".join(path.hops) if path.hops else "(head)"
        reached = path.status in ("at-head", "reaches-head")
        style = "green" if reached and path.bundle not in failing else "red"
        stdout.print(f"  [{style}]{path.status:<13}[/] {escape(path.bundle)}: {escape(hops)}")
    for problem in plan.problems:
        style = "red" if problem.severity == "error" else "yellow"
        where = f" {problem.bundle}:" if problem.bundle else ""
        stdout.print(
            f"  [{style}]{problem.severity}[/] {escape(f'[{problem.kind}]{where}')} {escape(problem.message)}"
        )
    verdict = "[green]passed[/]" if plan.passed else "[red]failed[/]"
    stdout.print(f"upgrade paths: {verdict}")


def summary_table(report: UpgradeReport) -> Table:
    """Start version, its hops with seconds each, install seconds, total and result.

    Readable at 80 columns: the title names the package, channel and head CSV; the
    cells show versions (``report.version_of``), one hop a line, so no CSV name is
    folded into fragments; a long version is folded only where nothing else fits."""
    from rich.table import Table

    from olmtool.olm import run_seconds

    table = Table(
        title=f"{report.package} channel {report.channel} -> {report.head}", title_justify="left"
    )
    table.add_column("start", overflow="fold")
    table.add_column("install s", justify="right", no_wrap=True)
    table.add_column("hops (s each)", overflow="fold")
    table.add_column("total s", justify="right", no_wrap=True)
    table.add_column("result", no_wrap=True)
    short = report.version_of
    for run in report.runs:
        hops = [f"-> {escape(short(h.to_csv))} {h.seconds:.1f}" for h in run.hops]
        if run.passed and not report.matches_plan(run):
            expected = " -> ".join(short(csv) for csv in report.expected_hops(run.start))
            hops.append(f"[yellow](static plan: {escape(expected or '-')})[/]")
        result = "[green]passed[/]" if run.passed else "[red]failed[/]"
        table.add_row(
            escape(short(run.start)),
            f"{run.install_seconds:.1f}",
            "\n".join(hops) or "-",
            f"{run_seconds(run):.1f}",
            result,
        )
    return table


def print_report(report: UpgradeReport) -> None:
    stdout.print(summary_table(report))
    for run in report.failures:
        stdout.print(f"[red]failed[/] {escape(run.start)}: {escape(run.failure or '')}")
    verdict = "[green]passed[/]" if report.passed else "[red]failed[/]"
    stdout.print(
        f"upgrades: {verdict} ({len(report.runs) - len(report.failures)}/{len(report.runs)} "
        f"start versions reached {escape(report.head)}, {report.seconds:.1f} s)"
    )
