"""Named local clusters that outlive the command that started them.

``up`` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a loopback
OCI registry and a node (containerd, kubelet and kube-proxy, with the cluster DNS and the
volume provisioner: :mod:`olmtool.cluster.kubeletnode`) as detached processes and records
them in
``<state>/<name>/cluster.json``; ``down`` stops exactly those processes (checked by pid
and start time, so a recycled pid is never signalled); ``status`` reports what runs.
``up`` on a running cluster returns it unchanged; on one where some components died it
restarts only those (the rest, and the pods, run on); on a stopped one it restarts it
with the same etcd data, certificates, kubeconfig and ports (``ports.json``, picked at
the first ``up``: the apiserver's and the registry's never move, see
:mod:`olmtool.cluster.portrecord`). The state directory is 0700; the registry requires
the cluster's login (:mod:`olmtool.cluster.registryauth`). ``up`` claims the cluster a network
(:mod:`olmtool.cluster.network`: its Pod and Service ranges, the same one again when it
is free) before the apiserver starts, and ``down`` releases it. ``up`` installs OLM's API
(the ``operators.coreos.com`` CRDs, :mod:`olmtool.cluster.olmcrds`) and starts olmtool's
OLM engine (:mod:`olmtool.engine`, component ``olm-engine``) unless told not to.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path

from olmtool.cluster import pki
from olmtool.cluster.assets import ensure_assets
from olmtool.cluster.controlplane import (
    COMPONENTS,
    ControlPlane,
    launch_apiserver,
    launch_controllers,
    prepare_plane,
    start_component,
)
from olmtool.cluster.defaults import DEFAULT_NAME, DEFAULT_REGISTRY_PORT, STATE_FILE, clusters_root
from olmtool.cluster.kubeletnode import stop_pods
from olmtool.cluster.localnode import (
    REAL_NODE,
    base_component,
    component_name,
    load_into_node,
    node_names,
    node_of,
    real_node,
    release_node,
    running_nodes,
    start_node,
)
from olmtool.cluster.network import MAX_NODES, ClusterNetwork, claim_network, release_network
from olmtool.cluster.olmcrds import Api, apply_crds, wait_established
from olmtool.cluster.portrecord import PORTS_FILE, PortRecord, port_holder, port_in_use
from olmtool.cluster.processes import ClusterError, Component, detach, terminate
from olmtool.cluster.registryauth import ensure_registry_auth, read_login, remember_root
from olmtool.cluster.standins import push_standins
from olmtool.errors import ArgumentError, OlmtoolError, PortTaken
from olmtool.ports import LOOPBACK

# Stopped in this order: the OLM engine, the node (its Pods are stopped between the kubelet
# and containerd), the store last.
STOP_ORDER = (
    "olm-engine",
    "provisioner",
    "cluster-dns",
    "kube-proxy",
    "kubelet",
    "containerd",
    "kube-scheduler",
    "kube-controller-manager",
    "kube-apiserver",
    "etcd",
    "registry",
)
# the control plane, the registry, the node (localnode.REAL_NODE), the OLM engine
START_ORDER = (*COMPONENTS, "registry", *REAL_NODE, "olm-engine")

Progress = Callable[[str], None]


@dataclass
class Cluster:
    """What ``up`` recorded: where things live and which processes are the cluster."""

    name: str
    state_dir: str
    server: str
    kubeconfig: str
    ca_file: str
    token: str
    registry: str | None = None
    node: str | None = None  # the first node's name
    nodes: int = 1  # how many nodes (set at the first up)
    stopped_nodes: list[str] = field(default_factory=list)  # by `cluster node stop`
    network: int | None = None  # the claimed cluster network's index
    components: dict[str, Component] = field(default_factory=dict)
    docker_config: str | None = None  # the registry's login, as a docker config.json
    # "containerd" when the cluster has its node (None: control plane only, or a cluster
    # made by an olmtool whose node was the retired node agent)
    runtime: str | None = None
    # what this `up` did that the user should know (restarts, moved ports); not saved
    notes: list[str] = field(default_factory=list)

    def running(self) -> dict[str, bool]:
        return {name: component.alive() for name, component in self.components.items()}

    def node_names(self) -> list[str]:
        """Its nodes' names, the first node's first (none without a node)."""
        return node_names(self.nodes) if self.runtime == "containerd" else []

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("token")
        return data


# kind's rule for cluster names: they become folder names, bridge owners and log labels.
_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")


def cluster_dir(name: str, root: Path | None = None) -> Path:
    if not _CLUSTER_NAME.match(name) or ".." in name:
        raise ArgumentError(
            f"{name!r}: invalid cluster name; use lowercase letters, digits, '-' and '.' "
            "(at most 63, starting and ending with a letter or digit)",
            argument="name",
        )
    return (root or clusters_root()) / name


def read_cluster(name: str, root: Path | None = None) -> Cluster | None:
    path = cluster_dir(name, root) / STATE_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    data["components"] = {k: Component(**v) for k, v in data.get("components", {}).items()}
    data.pop("notes", None)
    return Cluster(**data)


def save_cluster(cluster: Cluster) -> None:
    data = asdict(cluster)
    data.pop("notes")
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    pki.write_private(Path(cluster.state_dir) / STATE_FILE, text.encode())  # the admin token


# --- up ---------------------------------------------------------------------------------


def require_cluster(name: str, root: Path | None = None) -> Cluster:
    """The cluster ``name`` as ``up`` recorded it; ClusterError when there is none."""
    cluster = read_cluster(name, root)
    if cluster is None:
        raise ClusterError(f"no cluster named {name!r} (start one: olmtool cluster up)")
    return cluster


def up(
    name: str = DEFAULT_NAME,
    *,
    root: Path | None = None,
    assets: Path | None = None,
    registry_port: int | None = DEFAULT_REGISTRY_PORT,
    node: bool = True,
    olm_crds: bool = True,
    engine: bool = True,
    nodes: int | None = None,
    progress: Progress | None = None,
    timeout: float = 120.0,
) -> Cluster:
    """Start the cluster ``name`` (or return it if it already runs; restart only the
    components that died if some still run); ``registry_port`` None runs no registry, 0
    picks a free port (at the first ``up``: later ones keep the recorded port);
    ``olm_crds`` installs OLM's CRDs (also on a running cluster; False removes none
    that are there) and ``engine`` (with them) starts olmtool's OLM engine (False: to
    run real OLM on the cluster). ``node`` False starts no node (containerd, kubelet,
    kube-proxy, DNS and provisioner: :mod:`olmtool.cluster.kubeletnode`). ``nodes`` is
    how many nodes the cluster has (1 to 8), fixed at its first ``up`` (None: as it was
    made, else 1)."""
    say = progress or (lambda _message: None)
    notes: list[str] = []

    def note(message: str) -> None:  # said now, and printed with the result
        notes.append(message)
        say(message)

    state_dir = cluster_dir(name, root)
    existing = read_cluster(name, root)
    nodes = _node_count(name, existing, nodes)
    if existing is not None:
        running = existing.running()
        dead = [component for component, alive in running.items() if not alive]
        partial = dead and len(dead) < len(running) and (state_dir / PORTS_FILE).is_file()
        if partial or (running and not dead and _healthy(existing)):
            if partial:
                _restart_dead(existing, dead, assets, timeout, say, note)
                existing.notes = [f"restarted {', '.join(dead)}", *notes]
            else:
                say("already running")
            if olm_crds:
                _install_olm_crds(existing, say, timeout)
                if engine and "olm-engine" not in existing.components:
                    _start_engine(existing, state_dir, say)
                    save_cluster(existing)
            return existing
        if any(running.values()):
            say("stopping leftovers of an earlier run")
            stop_components(existing)
    pki.private_dir(state_dir)
    _seed_ports(state_dir, existing)
    say("finding kube-apiserver, controller-manager, scheduler and etcd")
    assets = assets or ensure_assets()
    runtime = "containerd" if node else None
    plane, network = _launch_on_network(assets, state_dir, timeout, say, note, runtime)
    cluster = Cluster(
        name=name,
        state_dir=str(state_dir),
        server=plane.server,
        kubeconfig=str(plane.kubeconfig),
        ca_file=str(plane.ca_file),
        token=plane.token,
        network=network.index,
        runtime=runtime,
        nodes=nodes,
    )
    try:
        # Applied first, waited for last: the apiserver sets them up while the rest starts.
        olm_names = _apply_olm_crds(cluster, say) if olm_crds else []
        say("starting kube-controller-manager and kube-scheduler")
        launch_controllers(plane, assets, timeout=timeout, progress=note)
        _record(cluster, plane)
        pushing = None
        if registry_port is not None:
            say("starting the image registry")
            _start_registry(cluster, state_dir, registry_port)
            if runtime == "containerd" and cluster.registry:
                # while the node starts: no Pod runs before `up` returns
                say("pushing the stand-ins of upstream images (built once from Debian packages)")
                pushing = _in_background(_push_standins, cluster)
        save_cluster(cluster)
        if node:
            start_node(cluster, plane, assets, network, timeout, say)
            save_cluster(cluster)
            say(
                "waiting for the node to be Ready"
                if nodes == 1
                else f"waiting for {nodes} nodes to be Ready"
            )
            wait_nodes_ready(cluster, timeout)
        if pushing is not None:
            pushing.result()
        if olm_names:
            say("waiting for OLM's CRDs to be Established")
            wait_established(_api(cluster), olm_names, timeout)
            if engine:
                _start_engine(cluster, state_dir, say)
    except BaseException:
        _record(cluster, plane)
        stop_components(cluster)
        release_node(cluster)
        release_network(state_dir)
        raise
    save_cluster(cluster)
    cluster.notes = notes
    return cluster


def _node_count(name: str, existing: Cluster | None, nodes: int | None) -> int:
    recorded = existing.nodes if existing is not None else None
    if nodes is not None and not 1 <= nodes <= MAX_NODES:
        raise ArgumentError(
            f"--nodes {nodes}: a cluster has 1 to {MAX_NODES} nodes", argument="nodes"
        )
    if nodes is not None and recorded is not None and nodes != recorded:
        raise ArgumentError(
            f"cluster {name!r} has {recorded} node(s), fixed when it was made; to have "
            f"{nodes}: olmtool cluster down --name {name} --delete, then up --nodes {nodes}",
            argument="nodes",
        )
    return nodes or recorded or 1


def _push_standins(cluster: Cluster) -> None:
    assert cluster.registry
    login = read_login(Path(cluster.docker_config)) if cluster.docker_config else None
    push_standins(cluster.registry, login)


def _in_background(work: Callable[[Cluster], None], cluster: Cluster) -> Future[None]:
    """``work(cluster)`` on a thread of its own; its result (or exception) waits in the
    future."""
    future: Future[None] = Future()

    def run() -> None:
        try:
            work(cluster)
        except BaseException as exc:  # handed to whoever waits for the result
            future.set_exception(exc)
        else:
            future.set_result(None)

    threading.Thread(target=run, name=work.__name__, daemon=True).start()
    return future


def _seed_ports(state_dir: Path, cluster: Cluster | None) -> None:
    """A cluster made before ports were recorded keeps the apiserver and registry
    ports its cluster.json names."""
    ports = PortRecord.load(state_dir)
    if cluster is None or ports.ports:
        return
    for port_name, address in (("kube-apiserver", cluster.server), ("registry", cluster.registry)):
        port = (address or "").rpartition(":")[2]
        if port.isdigit():
            ports.ports[port_name] = int(port)
    ports.save()


def _restart_dead(
    cluster: Cluster,
    dead: list[str],
    assets: Path | None,
    timeout: float,
    say: Progress,
    note: Progress,
) -> None:
    """Start again, on their recorded ports, the components of ``cluster`` that died;
    the others (and the node's Pods) run on."""
    state_dir = Path(cluster.state_dir)
    say(f"restarting {', '.join(dead)}; the rest runs on")
    network = claim_network(state_dir)
    plane = prepare_plane(
        state_dir, network=network, advertise=advertise_address(cluster.runtime, network)
    )
    etcd_port = plane.ports["etcd"]
    for component in sorted(dead, key=lambda name: START_ORDER.index(base_component(name))):
        if component in COMPONENTS:
            assets = assets or ensure_assets()
            start_component(plane, assets, component, timeout=timeout, progress=note)
            if (
                component == "etcd"
                and plane.ports["etcd"] != etcd_port
                and "kube-apiserver" not in dead
            ):
                note("etcd moved: restarted kube-apiserver too, which dials it")
                terminate(cluster.components["kube-apiserver"], 20.0)
                start_component(plane, assets, "kube-apiserver", timeout=timeout, progress=note)
            _record(cluster, plane)
        elif component == "registry":
            _start_registry(cluster, state_dir, 0)
        elif base_component(component) in REAL_NODE:
            assets = assets or ensure_assets()
            start_node(cluster, plane, assets, network, timeout, say, only=component)
            save_cluster(cluster)
            if base_component(component) == "kubelet":
                wait_nodes_ready(cluster, timeout)
        elif component == "olm-engine":
            _start_engine(cluster, state_dir, say)
        save_cluster(cluster)


def advertise_address(runtime: str | None, network: ClusterNetwork) -> str:
    """Where Pods reach the apiserver: the node's address (loopback without a node)."""
    return network.host_address if runtime == "containerd" else LOOPBACK


def _launch_on_network(
    assets: Path,
    state_dir: Path,
    timeout: float,
    say: Progress,
    note: Progress,
    runtime: str | None = None,
) -> tuple[ControlPlane, ClusterNetwork]:
    """Claim the cluster's network (its own again when free), then start etcd and the
    apiserver on it; the claim is given up if they do not start."""
    network = claim_network(state_dir)
    ranges = f"Pods {network.pod_cidr}, Services {network.service_cidr}"
    say(f"starting etcd and kube-apiserver ({ranges})")
    try:
        plane = launch_apiserver(
            assets, state_dir, timeout=timeout, network=network, progress=note,
            advertise=advertise_address(runtime, network),
        )  # fmt: skip
    except BaseException:
        release_network(state_dir)
        raise
    return plane, network


def _api(cluster: Cluster) -> Api:
    return Api(cluster.server, cluster.ca_file, cluster.token)


def _apply_olm_crds(cluster: Cluster, say: Progress) -> list[str]:
    """OLM's API, and the prometheus-operator's ServiceMonitor and PrometheusRule APIs:
    OLM fails a bundle shipping those kinds where they are not served, and OpenShift
    serves them (the local cluster runs no prometheus-operator: objects are only kept)."""
    from olmtool.bundle import monitoring_crds
    from olmtool.olm import olm_crds  # the packaged files; no schemas imported

    say("installing OLM's API (operators.coreos.com CRDs) and the monitoring CRDs")
    return apply_crds(_api(cluster), [*olm_crds(), *monitoring_crds()])


def _install_olm_crds(cluster: Cluster, say: Progress, timeout: float) -> None:
    names = _apply_olm_crds(cluster, say)
    wait_established(_api(cluster), names, timeout)


def _record(cluster: Cluster, plane: ControlPlane) -> None:
    for component, process in plane.processes.items():
        if process.poll() is None:
            cluster.components[component] = Component.of(process.pid)


def _start_registry(cluster: Cluster, state_dir: Path, port: int) -> None:
    """The registry with the cluster's login, on its recorded port (``port`` at the first
    start: 0 picks a free one); sets ``cluster.registry`` and ``docker_config``."""
    from olmtool.images import LocalRegistryError, start_registry

    ports = PortRecord.load(state_dir)
    for attempt in range(1, 4):
        chosen = ports.assign(["registry"], {"registry": port})["registry"]
        if ports.settled("registry") and port_in_use(chosen):
            raise ClusterError(
                f"the registry cannot start: its port 127.0.0.1:{chosen} (recorded at the "
                "first `up`; image references and the docker config name it) is in use by "
                f"{port_holder(chosen) or 'another process'}. Stop that process and run "
                "`olmtool cluster up` again, or start over with `olmtool cluster down --delete`"
            )
        auth = ensure_registry_auth(state_dir, f"127.0.0.1:{chosen}")
        remember_root(state_dir.parent)  # pushes from this process find the login
        try:
            registry = start_registry(state_dir / "registry", port=chosen, htpasswd=auth.htpasswd)
            break
        except (LocalRegistryError, PortTaken) as exc:
            if ports.settled("registry"):
                raise ClusterError(f"registry on port {chosen}: {exc}") from None
            ports.forget("registry")  # not used yet: the next up may pick another
            if port:  # the port the caller chose is taken
                raise ArgumentError(
                    f"{port} cannot serve the registry (another registry on it? 0 picks a "
                    f"free port): {exc}",
                    argument="registry_port",
                ) from None
            if not isinstance(exc, PortTaken) or attempt == 3:
                raise ClusterError(f"registry on port {chosen}: {exc}") from None
    pid = registry.process.pid
    cluster.components["registry"] = Component.of(pid)
    cluster.registry = registry.address
    cluster.docker_config = str(auth.docker_config)


def load_image(
    source: Path, reference: str, *, name: str = DEFAULT_NAME, root: Path | None = None
) -> str:
    """Put the image of ``source`` (an OCI layout or archive) into the cluster's node as
    ``reference``, as ``kind load`` does; returns the name Pods find it under."""
    return load_into_node(require_cluster(name, root), source, reference)


def _detach(cluster: Cluster, component: str, args: list[str], log_file: Path) -> None:
    clusters_dir = Path(cluster.state_dir).parent
    cluster.components[component] = detach(args, log_file, clusters_dir=clusters_dir)


def _start_engine(cluster: Cluster, state_dir: Path, say: Progress) -> None:
    """olmtool's OLM engine (:mod:`olmtool.engine`) as its own process; its global catalog
    namespace is ``olm``, as in an OLM install."""
    say("starting the OLM engine")
    args = [sys.executable, "-m", "olmtool.engine", f"--kubeconfig={cluster.kubeconfig}"]
    if cluster.registry:
        args.append(f"--registry={cluster.registry}")
    _detach(cluster, "olm-engine", args, state_dir / "olm-engine.log")


def _api_get(cluster: Cluster, path: str) -> dict[str, object] | None:
    context = ssl.create_default_context(cafile=cluster.ca_file)
    request = urllib.request.Request(
        cluster.server + path, headers={"Authorization": f"Bearer {cluster.token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            body = response.read()
            return json.loads(body) if body.strip().startswith(b"{") else {"text": body.decode()}
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _healthy(cluster: Cluster) -> bool:
    return _api_get(cluster, "/readyz") is not None


def node_ready(cluster: Cluster, node: str | None = None) -> bool:
    """The node (the first one by default) is Ready and schedulable: its not-ready taint
    is gone too."""
    node = node or cluster.node
    if not node:
        return False
    found = _api_get(cluster, f"/api/v1/nodes/{node}") or {}
    conditions = (found.get("status") or {}).get("conditions") or []  # type: ignore[union-attr]
    taints = (found.get("spec") or {}).get("taints") or []  # type: ignore[union-attr]
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not any(t.get("key") == "node.kubernetes.io/not-ready" for t in taints)


def wait_nodes_ready(cluster: Cluster, timeout: float, nodes: list[str] | None = None) -> None:
    """Until every running node (or each of ``nodes``) is Ready; a kubelet that exits
    meanwhile is an error naming its log."""
    waiting = list(nodes if nodes is not None else running_nodes(cluster))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        waiting = [node for node in waiting if not node_ready(cluster, node)]
        if not waiting:
            return
        for node in waiting:
            kubelet = cluster.components.get(_kubelet_of(node))
            if kubelet is not None and not kubelet.alive():
                log = real_node(cluster, name=node).directory / "kubelet.log"
                raise ClusterError(f"the kubelet of {node} exited; see {log}")
        time.sleep(0.2)
    raise ClusterError(f"node {', '.join(waiting)} not Ready after {timeout:.0f}s")


def _kubelet_of(node: str) -> str:
    return component_name("kubelet", node)


# --- down and status -------------------------------------------------------------------------


def down(name: str = DEFAULT_NAME, *, root: Path | None = None, delete: bool = False) -> list[str]:
    """Stop what ``up`` started; ``delete`` also removes the state (etcd data, volumes)."""
    cluster = read_cluster(name, root)
    state_dir = cluster_dir(name, root)
    if cluster is None:
        if not state_dir.exists():
            raise ClusterError(f"no cluster named {name!r} (looked in {state_dir})")
        stopped: list[str] = []
    else:
        stopped = stop_components(cluster)
        cluster.components.clear()
        save_cluster(cluster)
        release_node(cluster, delete=delete)
    release_network(state_dir)
    if delete:
        shutil.rmtree(state_dir, ignore_errors=True)
    return stopped


def _stop_order(component: str) -> int:
    base = base_component(component)
    return STOP_ORDER.index(base) if base in STOP_ORDER else -1


def stop_components(
    cluster: Cluster, grace: float = 20.0, names: list[str] | None = None
) -> list[str]:
    """Stop the recorded components (or ``names`` of them) in :data:`STOP_ORDER`."""
    stopped = []
    for component in sorted(cluster.components if names is None else names, key=_stop_order):
        process = cluster.components[component]
        if base_component(component) == "containerd" and process.alive():
            # the kubelet is stopped: the Pods go now, while containerd can still tell
            # which they are (their shims outlive containerd)
            with contextlib.suppress(OlmtoolError):
                stop_pods(real_node(cluster, name=node_of(component) or ""))
        if terminate(process, grace):
            stopped.append(component)
    return stopped
