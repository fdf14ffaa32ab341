"""``olmtool install`` / ``uninstall``: an operator through OLM's Subscription API."""

from __future__ import annotations

from pathlib import Path

import typer

from olmtool.cli.output import OutputFormat, OutputOption, emit, escape, stdout, with_progress


def _actions():  # the Kubernetes client is imported only when a command runs
    from olmtool.actions import install

    return install


KubeconfigOption = typer.Option(
    None, "--kubeconfig", help="Cluster to use (default: $KUBECONFIG, else the local cluster)."
)


def install(
    package: str = typer.Argument(..., help="Package name in the catalog."),
    catalog: str = typer.Option(
        ...,
        "--catalog",
        help="Catalog directory (local cluster), registry address host:port, or catalog image.",
    ),
    channel: str = typer.Option("", "--channel", help="Channel (default: the package's default)."),
    version: str = typer.Option("", "--version", help="Install this version (startingCSV)."),
    namespace: str = typer.Option(
        "", "--namespace", help="Install namespace (default: the package name)."
    ),
    install_mode: str = typer.Option(
        "OwnNamespace",
        "--install-mode",
        help="OwnNamespace | SingleNamespace=NS | MultiNamespace=NS1,NS2 | AllNamespaces.",
    ),
    approval: str = typer.Option("Automatic", "--approval", help="Automatic or Manual."),
    kubeconfig: Path | None = KubeconfigOption,
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds to wait for the CSV."),
    output: OutputFormat = OutputOption,
) -> None:
    """Install an operator through OLM: CatalogSource, OperatorGroup, Subscription, then
    wait until its ClusterServiceVersion succeeds (or say why OLM failed it).

    Example: olmtool install etcd-operator --catalog catalog --version 0.2.0 --approval Manual
    """
    result = with_progress(
        f"installing {package}",
        _actions().install,
        package=package,
        catalog=catalog,
        channel=channel,
        version=version,
        namespace=namespace,
        install_mode=install_mode,
        approval=approval,
        kubeconfig=kubeconfig,
        timeout=timeout,
    )
    targets = ", ".join(result.targets) or "all namespaces"
    emit(
        result.as_dict(),
        output,
        lambda: stdout.print(
            f"[green]installed[/] {escape(result.csv)} in {escape(result.namespace)} "
            f"({result.install_mode}: {escape(targets)}) in {result.seconds:.1f} s"
        ),
    )


def uninstall(
    package: str = typer.Argument(..., help="Package name."),
    namespace: str = typer.Option(
        "", "--namespace", help="Install namespace (default: the package name)."
    ),
    delete_crds: bool = typer.Option(
        False, "--delete-crds", help="Also delete the CRDs the CSV owns (their objects go too)."
    ),
    kubeconfig: Path | None = KubeconfigOption,
) -> None:
    """Remove an operator's Subscription and CSV (CRDs are kept unless --delete-crds).

    Example: olmtool uninstall etcd-operator
    """
    for line in _actions().uninstall(
        package, namespace=namespace, delete_crds=delete_crds, kubeconfig=kubeconfig
    ):
        stdout.print(f"deleted {escape(line)}")
