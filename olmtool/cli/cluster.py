"""``olmtool cluster``: a real Kubernetes cluster on this machine (kubelet and containerd)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from olmtool.cluster import Cluster

app = typer.Typer(
    help="Run a local Kubernetes cluster (real apiserver, controllers, scheduler; kubelet and containerd nodes).",
    no_args_is_help=True,
)

NameOption = typer.Option(DEFAULT_NAME, "--name", "-n", help="Cluster name.")


@app.command()
def up(
    name: str = NameOption,
    registry_port: int = typer.Option(
        DEFAULT_REGISTRY_PORT,
        "--registry-port",
        envvar="OLMTOOL_REGISTRY_PORT",
        help="Image registry port at the first up (0: any free); later ups keep it.",
    ),
    no_registry: bool = typer.Option(False, "--no-registry", help="Run no image registry."),
    no_node: bool = typer.Option(False, "--no-node", help="Control plane only, no node."),
    nodes: int | None = typer.Option(
        None, "--nodes", min=1, max=8, help="Nodes of a new cluster (default 1; fixed once made)."
    ),
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

      olmtool cluster up --name three --nodes 3    # olmtool-node, olmtool-node2, olmtool-node3
    """
    cluster = with_progress(
        "starting the cluster",
        actions.cluster_up,
        name=name,
        registry_port=None if no_registry else registry_port,
        node=not no_node,
        olm_crds=not no_olm,
        nodes=nodes,
        timeout=timeout,
    )
    emit(cluster.as_dict(), output, lambda: stdout.print(_up_text(cluster)))


def _up_text(cluster: Cluster) -> str:
    login = (
        f"  registry login: {escape(cluster.docker_config)} (REGISTRY_AUTH_FILE)\n"
        if cluster.docker_config
        else ""
    )
    names = cluster.node_names()
    nodes = f"\n  nodes:      {', '.join(names)}" if names else ""
    return (
        f"cluster [bold]{escape(cluster.name)}[/] is up: {escape(cluster.server)}\n"
        f"  kubeconfig: {escape(cluster.kubeconfig)}\n"
        f"  registry:   {escape(cluster.registry or 'none')}\n"
        f"{login}  network:    {_network_text(cluster.network)}{nodes}"
        + "".join(f"\n  note: {escape(note)}" for note in cluster.notes)
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
    done = f"stopped {', '.join(stopped)}" if stopped else "not running (nothing to stop)"
    deleted = "; its state is deleted" if delete else ""
    stdout.print(f"cluster {escape(name)}: {escape(done)}{deleted}")


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
        for node, state in status.nodes.items():
            colour = "green" if state == "Ready" else "red"
            stdout.print(f"  node {escape(node):<19} [{colour}]{state}[/]")
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
def registry(name: str = NameOption) -> None:
    """Print the host:port of the cluster's image registry (where --push sends images).

    Example: olmtool bundle build --image $(olmtool cluster registry)/foo-bundle:{version} --push
    """
    typer.echo(actions.cluster_registry(name))


@app.command()
def load(
    source: Path = typer.Argument(..., help="An OCI layout directory or an OCI archive."),
    reference: str = typer.Option(..., "--as", help="The name Pods use for the image."),
    name: str = NameOption,
) -> None:
    """Put an image into the cluster's node under its upstream name, as `kind load` does.

    Example:

      olmtool cluster load build/memcached --as docker.io/library/memcached:1.6
    """
    loaded = actions.cluster_load(source, reference, name=name)
    stdout.print(f"loaded {escape(loaded)} into cluster {escape(name)}")


# kubectl's own flags (-n, --namespace, --help after the verb) pass through: only options
# before the first argument are this command's.
PASS_THROUGH = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "allow_interspersed_args": False,
}


@app.command(context_settings=PASS_THROUGH, options_metavar="[--name NAME] [--] KUBECTL-ARGS...")
def kubectl(
    ctx: typer.Context,
    name: str = typer.Option(DEFAULT_NAME, "--name", help="Cluster name (before kubectl's args)."),
) -> None:
    """Run kubectl 1.20, the cluster's own version, with the cluster's kubeconfig.

    The kubectl comes with the control-plane binaries (make assets); the command exits
    with its exit code. A newer kubectl on PATH works too, but warns about version skew
    against the 1.20 server. Examples:

      olmtool cluster kubectl get pods -A

      olmtool cluster kubectl --name ci -- get csv -n operators -o yaml
    """
    import subprocess

    command = actions.cluster_kubectl(name)
    args = list(ctx.args)
    if args[:1] == ["--"]:
        args = args[1:]
    result = subprocess.run(command.argv(args), env=command.env(dict(os.environ)), check=False)
    raise typer.Exit(result.returncode)


@app.command("kubectl-path")
def kubectl_path() -> None:
    """Print the path of kubectl 1.20, the local cluster's version.

    Example: alias kubectl="$(olmtool cluster kubectl-path)"
    """
    from olmtool.cluster import find_kubectl

    typer.echo(str(find_kubectl()))


@app.command()
def logs(
    pod: str = typer.Argument(..., help="Pod name."),
    namespace: str = typer.Option("default", "--namespace", help="The pod's namespace."),
    container: str | None = typer.Option(None, "--container", "-c", help="Container name."),
    name: str = NameOption,
) -> None:
    """Print a pod's container logs (from the node's kubelet, as kubectl logs does).

    Example: olmtool cluster logs etcd-operator-7d9f --namespace operators
    """
    logs = actions.cluster_logs(pod, namespace=namespace, container=container, name=name)
    typer.echo(logs, nl=False)


@app.command()
def images(
    references: list[str] = typer.Argument(None, help="Only these references."),
    output: OutputFormat = OutputOption,
) -> None:
    """Build (or find in the cache) the well-known images the local cluster and the
    tests use, each an OCI layout tagged with its reference's tag: local stand-ins for
    docker.io/library/python:3.11, quay.io/coreos/etcd:v3.4.23 and v3.5.1 and
    docker.io/library/busybox:1.35, made from Debian packages and wheels of the same
    releases.

    Examples:

      olmtool cluster images

      olmtool cluster images quay.io/coreos/etcd:v3.5.1 -o json
    """
    result = with_progress("building images", actions.cluster_images, references=references or [])

    def text() -> None:
        for built in result.images:
            stdout.print(f"{escape(built.reference)} {built.digest} {escape(str(built.layout))}")

    emit(result.as_list(), output, text)


@app.command()
def assets(
    optional: bool = typer.Option(
        False,
        "--optional",
        help="Outside CI, where they cannot be built here, say why and exit 0 (the e2e tests skip).",
    ),
) -> None:
    """Find or build the cluster's Kubernetes binaries and print their folder.

    kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kubectl, and the
    node's kubelet, kube-proxy and pause. Uses KUBEBUILDER_ASSETS, else
    ~/.cache/olmtool/assets, else builds them from Debian's kubernetes source package
    (once: about 20 minutes on 2 cores, a line per stage).

    Example: olmtool cluster assets
    """
    from olmtool.cluster import build_assets, build_blocker, default_assets_dir, find_assets

    folder = find_assets()
    if folder is None:
        blocker = build_blocker()
        if optional and blocker and not os.environ.get("CI"):
            stderr.print(f"no Kubernetes binaries, and they cannot be built here: {blocker}")
            return
        stderr.print(
            "building Kubernetes 1.20 (control plane and node) from Debian's source package "
            f"into {default_assets_dir()} (once; about 20 minutes on 2 cores)"
        )
        folder = build_assets()
    stdout.print(str(folder))


node_app = typer.Typer(
    help="Stop and start one node of a cluster, as a machine fails and comes back.",
    no_args_is_help=True,
)
app.add_typer(node_app, name="node")
NodeArgument = typer.Argument(..., help="The node's name (olmtool cluster status lists them).")


@node_app.command("stop")
def node_stop(node: str = NodeArgument, name: str = NameOption) -> None:
    """Stop a node's kubelet, kube-proxy, containerd and containers, as a machine that is
    switched off: the cluster sees it NotReady after 40 s and evicts its Pods after
    their toleration (300 s by default). The first node stays up.

    Example: olmtool cluster up --nodes 3 && olmtool cluster node stop olmtool-node3
    """
    stopped = actions.cluster_node_stop(node, name=name)
    stdout.print(f"node {escape(node)}: stopped {escape(', '.join(stopped) or 'nothing')}")


@node_app.command("start")
def node_start(
    node: str = NodeArgument,
    name: str = NameOption,
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for Ready."),
) -> None:
    """Start a stopped node again, with its state, and wait until it is Ready.

    Example: olmtool cluster node start olmtool-node3
    """
    started = with_progress(
        f"starting {node}", actions.cluster_node_start, node=node, name=name, timeout=timeout
    )
    done = f"started {', '.join(started)}" if started else "already running"
    stdout.print(f"node {escape(node)}: {escape(done)}; Ready")
