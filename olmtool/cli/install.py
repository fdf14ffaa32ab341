"""``olmtool install`` / ``uninstall``: an operator through OLM's Subscription API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from olmtool.cli.output import (
    OutputFormat,
    OutputOption,
    emit,
    error,
    escape,
    stdout,
    with_progress,
)
from olmtool.errors import UsageError


def _actions():  # the Kubernetes client is imported only when a command runs
    from olmtool import actions

    return actions


def kubeconfig_option(role: str = "Cluster to use") -> Any:
    """``--kubeconfig``: which cluster a client verb uses (``role`` starts its help)."""
    return typer.Option(
        None,
        "--kubeconfig",
        help=f"{role} (default: the --name local cluster, else $KUBECONFIG, else the local "
        "cluster olmtool).",
    )


def name_option(role: str = "Local cluster to use") -> Any:
    """``--name``: a local cluster by name, instead of a kubeconfig."""
    return typer.Option(
        None,
        "--name",
        help=f"{role} (olmtool cluster up --name NAME); before $KUBECONFIG, not with --kubeconfig.",
    )


KubeconfigOption = kubeconfig_option()
NameOption = name_option()
# exit code of an interrupted command (128 + SIGINT), as the shell reports it
EXIT_INTERRUPTED = 130


def check_cluster_flags(kubeconfig: Path | None, name: str | None) -> None:
    """--kubeconfig and --name both choose the cluster: one of them at most."""
    if kubeconfig is not None and name:
        raise UsageError("--kubeconfig and --name both choose the cluster: give one of them")


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
    name: str | None = NameOption,
    timeout: float = typer.Option(
        300.0, "--timeout", help="Seconds the whole install may take (CSV Succeeded)."
    ),
    keep: bool = typer.Option(
        False,
        "--keep",
        help="On failure or Ctrl-C, keep what this install created (default: removed).",
    ),
    output: OutputFormat = OutputOption,
) -> None:
    """Install an operator through OLM: CatalogSource, OperatorGroup, Subscription, then
    wait until its ClusterServiceVersion succeeds (or say why OLM failed it).

    Fails early where OLM cannot go on (catalog unreachable, minKubeVersion above the
    cluster's, an operator image the registry does not have), rides out an apiserver
    outage of up to 60 s, and on failure or Ctrl-C removes what it created (objects
    that were there before stay) unless --keep.

    Examples: olmtool install etcd-operator --catalog catalog --version 0.2.0 --approval Manual

    olmtool install etcd-operator --catalog catalog --name dev   (the local cluster dev)

    KUBECONFIG=~/.kube/staging olmtool install etcd-operator --catalog quay.io/org/catalog:1.0
    --channel stable --timeout 600
    """
    check_cluster_flags(kubeconfig, name)
    actions = _actions()
    try:
        result = with_progress(
            f"installing {package}",
            actions.install,
            package=package,
            catalog=catalog,
            channel=channel,
            version=version,
            namespace=namespace,
            install_mode=install_mode,
            approval=approval,
            kubeconfig=kubeconfig,
            name=name,
            timeout=timeout,
            keep=keep,
        )
    except actions.InstallInterrupted as exc:
        error(str(exc))
        raise typer.Exit(EXIT_INTERRUPTED) from None
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
    name: str | None = NameOption,
    output: OutputFormat = OutputOption,
) -> None:
    """Remove an operator's Subscription and CSV (CRDs are kept unless --delete-crds).

    Examples: olmtool uninstall etcd-operator

    olmtool uninstall etcd-operator --name dev --delete-crds -o json
    """
    check_cluster_flags(kubeconfig, name)
    result = _actions().uninstall(
        package, namespace=namespace, delete_crds=delete_crds, kubeconfig=kubeconfig, name=name
    )

    def text() -> None:
        for line in result.deleted:
            stdout.print(f"deleted {escape(line)}")
        if not result.deleted:
            stdout.print(f"nothing of {escape(package)} in {escape(result.namespace)}")

    emit(result.as_dict(), output, text)
