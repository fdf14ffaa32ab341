"""``olmtool cluster``: a real Kubernetes control plane on this machine, with a node agent."""

from __future__ import annotations

import typer

from olmtool import actions
from olmtool.cli.output import (
    OutputFormat,
    OutputOption,
    emit,
    escape,
    exit_if,
    stderr,
    stdout,
    with_progress,
)
from olmtool.cluster import DEFAULT_NAME, DEFAULT_REGISTRY_PORT

app = typer.Typer(
    help="Run a local Kubernetes cluster (real apiserver, controllers, scheduler; pods as processes).",
    no_args_is_help=True,
)

NameOption = typer.Option(DEFAULT_NAME, "--name", "-n", help="Cluster name.")


@app.command()
def up(
    name: str = NameOption,
    registry_port: int = typer.Option(
        DEFAULT_REGISTRY_PORT,
        "--registry-port",
        help="Image registry port at the first up (0: any free); later ups keep it.",
    ),
    no_registry: bool = typer.Option(False, "--no-registry", help="Run no image registry."),
    no_node: bool = typer.Option(False, "--no-node", help="Control plane only, no node agent."),
    no_olm: bool = typer.Option(
        False,
        "--no-olm",
        help="Neither OLM's API (the operators.coreos.com CRDs) nor olmtool's OLM engine.",
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for health."),
    output: OutputFormat = OutputOption,
) -> None:
    """Start a cluster (or restart only what died) and print its kubeconfig path.

    Examples:

      olmtool cluster up && export KUBECONFIG=$(olmtool cluster kubeconfig)

      olmtool cluster up --name ci --registry-port 0 -o json

      olmtool cluster up --no-olm    # no OLM API or engine (e.g. to install real OLM)
    """
    cluster = with_progress(
        "starting the cluster",
        actions.cluster_up,
        name=name,
        registry_port=None if no_registry else registry_port,
        node=not no_node,
        olm_crds=not no_olm,
        timeout=timeout,
    )
    emit(
        cluster.as_dict(),
        output,
        lambda: stdout.print(
            f"cluster [bold]{escape(name)}[/] is up: {escape(cluster.server)}\n"
            f"  kubeconfig: {escape(cluster.kubeconfig)}\n"
            f"  registry:   {escape(cluster.registry or 'none')}\n"
            + (
                f"  registry login: {escape(cluster.docker_config)} (REGISTRY_AUTH_FILE)\n"
                if cluster.docker_config
                else ""
            )
            + f"  network:    {_network_text(cluster.network)}"
            + "".join(f"\n  note: {escape(note)}" for note in cluster.notes)
        ),
    )


def _network_text(index: int | None) -> str:
    if index is None:
        return "none"
    from olmtool.cluster import ClusterNetwork

    network = ClusterNetwork(index)
    return f"Pods {network.pod_cidr}, Services {network.service_cidr}"


@app.command()
def down(
    name: str = NameOption,
    delete: bool = typer.Option(False, "--delete", help="Also delete its state (data, volumes)."),
) -> None:
    """Stop every process the cluster started.

    Example:

      olmtool cluster down --delete
    """
    stopped = actions.cluster_down(name, delete=delete)
    what = ", ".join(stopped) or "nothing was running"
    stdout.print(
        f"cluster {escape(name)}: stopped {escape(what)}{' and deleted' if delete else ''}"
    )


@app.command()
def status(name: str = NameOption, output: OutputFormat = OutputOption) -> None:
    """Show which components run, and whether the apiserver and node are healthy.

    Exit 1 when the apiserver is down. Example: olmtool cluster status -o json
    """
    status = actions.cluster_status(name)
    data = status.as_dict()

    def text() -> None:
        stdout.print(
            f"cluster {escape(name)}: apiserver {data['apiserver']}, node ready: {status.node_ready}"
        )
        for component, running in status.components.items():
            state = "[green]running[/]" if running else "[red]stopped[/]"
            stdout.print(f"  {component:<24} {state}")
        stdout.print(f"  OLM CRDs established: {len(status.olm_crds)}")
        if status.registry:
            stdout.print(f"  registry: {escape(status.registry)}")
        if status.docker_config:
            stdout.print(
                f"  registry login: {escape(status.docker_config)} (point REGISTRY_AUTH_FILE "
                "at it, or DOCKER_CONFIG at its folder)"
            )

    emit(data, output, text)
    exit_if(not status.healthy)


@app.command()
def kubeconfig(
    name: str = NameOption,
    show: bool = typer.Option(False, "--show", help="Print the file's content, not its path."),
) -> None:
    """Print the admin kubeconfig's path (or content).

    Example: kubectl --kubeconfig $(olmtool cluster kubeconfig) get nodes
    """
    path = actions.cluster_kubeconfig(name)
    typer.echo(path.read_text() if show else str(path), nl=not show)


@app.command()
def logs(
    pod: str = typer.Argument(..., help="Pod name."),
    namespace: str = typer.Option("default", "--namespace", help="The pod's namespace."),
    container: str | None = typer.Option(None, "--container", "-c", help="Container name."),
    name: str = NameOption,
) -> None:
    """Print a pod's container logs, kept on disk by the node agent.

    Example: olmtool cluster logs etcd-operator-7d9f --namespace operators
    """
    logs = actions.cluster_logs(pod, namespace=namespace, container=container, name=name)
    typer.echo(logs, nl=False)


@app.command()
def assets() -> None:
    """Find or build kube-apiserver, controller-manager, scheduler, etcd and kubectl.

    Uses KUBEBUILDER_ASSETS, else ~/.cache/olmtool/assets, else builds them from Debian's
    kubernetes source package (about 6 minutes on 2 cores, once).

    Example: olmtool cluster assets
    """
    with stderr.status("finding (or building) the control-plane binaries"):
        folder = _ensure_assets()
    stdout.print(str(folder))


def _ensure_assets() -> object:
    from olmtool.cluster import ensure_assets

    return ensure_assets()
