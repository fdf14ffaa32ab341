"""Running a real etcd and kube-apiserver on loopback, for tests and local clusters.

>>> with start_apiserver(ensure_assets(), Path("/tmp/state")) as plane:
...     print(plane.server, plane.kubeconfig)

Given a :class:`~olmtool.cluster.network.ClusterNetwork`, Services get ClusterIPs from
its Service network and the serving certificate also names its ``apiserver_service_ip``
(where in-cluster clients reach the ``kubernetes`` Service); without one, ClusterIPs
come from ``10.0.0.0/24`` and are not reachable.

Locked down: etcd speaks TLS only and requires a client certificate from its own CA
(:mod:`olmtool.cluster.planecerts`), peers included; kube-controller-manager and
kube-scheduler serve HTTPS only, with profiling off and every path but ``/healthz``
authenticated and authorized by the apiserver. Ports are picked at the first start and
kept in ``<state>/ports.json`` (:mod:`olmtool.cluster.portrecord`); a later start reuses
them, so the kubeconfig stays valid. A component is started on its own with
:func:`start_component` (what ``cluster up`` does for one that died).
"""

from __future__ import annotations

import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from olmtool import yamlwrite
from olmtool.cluster import pki
from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.planecerts import (
    APISERVER_NAMES as APISERVER_NAMES,  # re-exported: callers predate planecerts
)
from olmtool.cluster.planecerts import (
    EtcdCredentials,
    admin_credentials,
    etcd_credentials,
    kubelet_client_credentials,
    loopback_serving_cert,
)
from olmtool.cluster.portrecord import PortRecord, port_holder, port_in_use
from olmtool.errors import OlmtoolError, PortTaken
from olmtool.ports import LOOPBACK
from olmtool.ports import free_port as free_port  # re-exported: callers predate olmtool.ports

SERVICE_CIDR = "10.0.0.0/24"  # without a cluster network
# Controllers that need a cloud, CNI or CSR signing are off; nodelifecycle too: the node
# agent clears the not-ready taint itself and there is one node to evict nothing to.
CONTROLLERS = (
    "*,-nodeipam,-nodelifecycle,-route,-service,-cloud-node-lifecycle,"
    "-csrsigning,-csrapproving,-csrcleaner,-bootstrapsigner,-tokencleaner,-attachdetach,"
    "-persistentvolume-expander"
)


def controllers(plane: ControlPlane) -> str:
    """With a node, the node-lifecycle controller runs: it clears the not-ready taint of a
    Ready node and marks a node whose kubelet stopped NotReady. A control plane alone has
    no node to watch."""
    if plane.real_node:
        return CONTROLLERS.replace(",-nodelifecycle", "")
    return CONTROLLERS


COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
# the port names each component listens on (keys of ports.json)
COMPONENT_PORTS = {
    "etcd": ("etcd", "etcd-peer"),
    "kube-apiserver": ("kube-apiserver",),
    "kube-controller-manager": ("kube-controller-manager",),
    "kube-scheduler": ("kube-scheduler",),
}
# Addresses users hold (kubeconfigs): never moved once recorded. The others are internal
# and move to a free port, with a message, when someone else took theirs.
STABLE_PORTS = frozenset({"kube-apiserver"})
_PORT_ATTEMPTS = 3

Progress = Callable[[str], None]


class ControlPlaneError(OlmtoolError):
    """A control-plane component did not start or become healthy."""


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (+ controllers); ``kubeconfig`` authenticates as cluster admin."""

    state_dir: Path
    token: str
    ca_file: Path
    kubeconfig: Path
    ports: PortRecord
    sa_key: Path | None = None
    kubelet_client: pki.KeyPair | None = None  # the apiserver's, for the kubelet API
    etcd: EtcdCredentials | None = None
    serving: pki.KeyPair | None = None  # the apiserver's
    sa_public: Path | None = None
    service_cidr: str = SERVICE_CIDR
    # kube-controller-manager's and kube-scheduler's serving certificates
    controller_serving: dict[str, pki.KeyPair] = field(default_factory=dict)
    # Where Pods reach the apiserver (the ``kubernetes`` Service's endpoint): a real
    # node's address; loopback for a control plane without a node.
    advertise_address: str = LOOPBACK
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def real_node(self) -> bool:
        """Whether Pods run on a real node (they reach the apiserver off loopback)."""
        return self.advertise_address != LOOPBACK

    @property
    def server(self) -> str:
        return f"https://{LOOPBACK}:{self.ports['kube-apiserver']}"

    @property
    def etcd_url(self) -> str:
        return f"https://{LOOPBACK}:{self.ports['etcd']}"

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM every component (the last started first), SIGKILL what outlives ``grace``."""
        for name in reversed(list(self.processes)):
            _terminate(self.processes[name], grace)
        self.processes.clear()


def _tail(log: Path, size: int = 4096) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def prepare_plane(
    state_dir: Path, *, network: ClusterNetwork | None = None, advertise: str = LOOPBACK
) -> ControlPlane:
    """Credentials, ports (recorded ones reused) and the admin kubeconfig of the control
    plane in ``state_dir`` (made 0700); nothing is started. ``advertise`` is the address
    Pods reach the apiserver at (a real node's)."""
    pki.private_dir(state_dir)
    service_ip = network.apiserver_service_ip if network else "10.0.0.1"
    ips = tuple(dict.fromkeys((LOOPBACK, service_ip, advertise)))
    ca, serving, sa, token = admin_credentials(state_dir, ips)
    kubelet_client = kubelet_client_credentials(state_dir, ca)
    ports = PortRecord.load(state_dir)
    ports.assign(name for names in COMPONENT_PORTS.values() for name in names)
    plane = ControlPlane(
        state_dir,
        token,
        ca.cert,
        state_dir / "admin.kubeconfig",
        ports,
        sa.key,
        kubelet_client,
        etcd_credentials(state_dir),
        serving,
        sa.cert,
        network.service_cidr if network else SERVICE_CIDR,
        {name: loopback_serving_cert(state_dir, ca, name) for name in COMPONENTS[2:]},
        advertise,
    )
    write_kubeconfig(plane.kubeconfig, server=plane.server, ca_file=ca.cert, token=token)
    return plane


@contextmanager
def start_apiserver(
    assets: Path,
    state_dir: Path,
    *,
    timeout: float = 90.0,
    network: ClusterNetwork | None = None,
) -> Iterator[ControlPlane]:
    """Start etcd and kube-apiserver (RBAC, TLS, SA keys) and stop them on exit."""
    plane = launch_apiserver(assets, state_dir, timeout=timeout, network=network)
    try:
        yield plane
    finally:
        plane.stop()


def launch_apiserver(
    assets: Path,
    state_dir: Path,
    *,
    timeout: float = 90.0,
    network: ClusterNetwork | None = None,
    progress: Progress | None = None,
    advertise: str = LOOPBACK,
) -> ControlPlane:
    """Start etcd and kube-apiserver on the recorded ports (picked now at a first start)."""
    plane = prepare_plane(state_dir, network=network, advertise=advertise)
    try:
        for name in ("etcd", "kube-apiserver"):
            start_component(plane, assets, name, timeout=timeout, progress=progress)
    except BaseException:
        plane.stop()
        raise
    return plane


@contextmanager
def start_control_plane(
    assets: Path,
    state_dir: Path,
    *,
    timeout: float = 90.0,
    network: ClusterNetwork | None = None,
) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-controller-manager and kube-scheduler; stopped on exit."""
    with start_apiserver(assets, state_dir, timeout=timeout, network=network) as plane:
        launch_controllers(plane, assets, timeout=timeout)
        yield plane


def launch_controllers(
    plane: ControlPlane, assets: Path, *, timeout: float = 90.0, progress: Progress | None = None
) -> None:
    """Add kube-controller-manager and kube-scheduler to a running apiserver; the whole
    plane is stopped if one does not start."""
    try:
        for name in ("kube-controller-manager", "kube-scheduler"):
            start_component(plane, assets, name, timeout=timeout, progress=progress)
    except BaseException:
        plane.stop()
        raise


def start_component(
    plane: ControlPlane,
    assets: Path,
    name: str,
    *,
    timeout: float = 90.0,
    progress: Progress | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``name`` (one of :data:`COMPONENTS`) on its recorded ports and wait until it
    is healthy. An internal port someone else holds is replaced by a free one (said
    through ``progress``); the apiserver's recorded port never moves: :class:`~olmtool.errors.PortTaken`."""
    say = progress or (lambda _message: None)
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        for port_name in COMPONENT_PORTS[name]:
            if port_in_use(plane.ports[port_name]):
                _move(plane, port_name, say)
        fresh_store = name == "etcd" and not (plane.state_dir / "etcd").exists()
        if name == "kube-apiserver":  # its port may have moved before it was ever used
            write_kubeconfig(
                plane.kubeconfig, server=plane.server, ca_file=plane.ca_file, token=plane.token
            )
        plane.processes[name] = process = _spawn(
            assets / name, _ARGS[name](plane), plane.state_dir / f"{name}.log"
        )
        try:
            _wait_healthy(plane, name, timeout)
            return process
        except PortTaken:
            _terminate(plane.processes.pop(name), 5.0)
            if fresh_store:  # a new store remembers its first peer URL: start it over
                shutil.rmtree(plane.state_dir / "etcd", ignore_errors=True)
            if attempt == _PORT_ATTEMPTS:
                raise
            for port_name in COMPONENT_PORTS[name]:
                _move(plane, port_name, say)
        except BaseException:
            _terminate(plane.processes.pop(name), 5.0)
            raise
    raise AssertionError("unreachable")


def _move(plane: ControlPlane, port_name: str, say: Progress) -> None:
    port = plane.ports[port_name]
    holder = port_holder(port) or "another process"
    if port_name in STABLE_PORTS and plane.ports.settled(port_name):
        raise PortTaken(
            f"{port_name} cannot start: its port {LOOPBACK}:{port} (recorded at the first "
            f"`up`; kubeconfigs name it) is in use by {holder}. Stop that process and run "
            "`olmtool cluster up` again, or start over on new ports with "
            "`olmtool cluster down --delete`",
            port=port,
        )
    new = plane.ports.replace(port_name)
    say(f"{port_name}: port {port} is in use by {holder}; using {new} instead")


def _etcd_args(plane: ControlPlane) -> list[str]:
    assert plane.etcd is not None
    etcd, peer = plane.etcd, f"https://{LOOPBACK}:{plane.ports['etcd-peer']}"
    return [
        f"--data-dir={plane.state_dir / 'etcd'}",
        "--name=default",
        f"--listen-client-urls={plane.etcd_url}",
        f"--advertise-client-urls={plane.etcd_url}",
        f"--cert-file={etcd.server.cert}",
        f"--key-file={etcd.server.key}",
        "--client-cert-auth=true",
        f"--trusted-ca-file={etcd.ca.cert}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=default={peer}",
        f"--peer-cert-file={etcd.peer.cert}",
        f"--peer-key-file={etcd.peer.key}",
        "--peer-client-cert-auth=true",
        f"--peer-trusted-ca-file={etcd.ca.cert}",
    ]


def _apiserver_args(plane: ControlPlane) -> list[str]:
    assert plane.etcd and plane.serving and plane.kubelet_client
    return [
        f"--etcd-servers={plane.etcd_url}",
        f"--etcd-cafile={plane.etcd.ca.cert}",
        f"--etcd-certfile={plane.etcd.client.cert}",
        f"--etcd-keyfile={plane.etcd.client.key}",
        # Pods on a real node reach it at the node's address: it then listens on every
        # address (TLS and authentication required, as in kind's node container).
        f"--bind-address={LOOPBACK if plane.advertise_address == LOOPBACK else '0.0.0.0'}",
        f"--advertise-address={plane.advertise_address}",
        f"--secure-port={plane.ports['kube-apiserver']}",
        "--insecure-port=0",
        f"--cert-dir={plane.state_dir / 'apiserver-certs'}",
        f"--tls-cert-file={plane.serving.cert}",
        f"--tls-private-key-file={plane.serving.key}",
        f"--token-auth-file={plane.state_dir / 'tokens.csv'}",
        # kubelets authenticate with certificates from the cluster CA, held to their
        # own Node and Pods (Node authorizer, NodeRestriction), as on kubeadm clusters
        f"--client-ca-file={plane.ca_file}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        f"--service-account-key-file={plane.sa_public}",
        f"--service-account-signing-key-file={plane.sa_key}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-cluster-ip-range={plane.service_cidr}",
        "--allow-privileged=true",
        # logs and exec reach the kubelet's API at the node's address, both sides verified
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={plane.kubelet_client.cert}",
        f"--kubelet-client-key={plane.kubelet_client.key}",
        f"--kubelet-certificate-authority={plane.ca_file}",
    ]


def _secure_serving(plane: ControlPlane, name: str) -> list[str]:
    """HTTPS only, a certificate from the cluster CA, no profiling, and every path but
    /healthz authenticated and authorized by the apiserver (RBAC: anonymous gets 403)."""
    serving = plane.controller_serving[name]
    return [
        f"--kubeconfig={plane.kubeconfig}",
        "--leader-elect=false",
        "--port=0",  # no insecure HTTP
        f"--bind-address={LOOPBACK}",
        f"--secure-port={plane.ports[name]}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        "--profiling=false",
        f"--authentication-kubeconfig={plane.kubeconfig}",
        # bearer tokens only (TokenReview): no client-CA look-up in kube-system
        "--authentication-skip-lookup=true",
        f"--authorization-kubeconfig={plane.kubeconfig}",
        "--authorization-always-allow-paths=/healthz",
    ]


def _controller_manager_args(plane: ControlPlane) -> list[str]:
    return [
        *_secure_serving(plane, "kube-controller-manager"),
        f"--service-account-private-key-file={plane.sa_key}",
        f"--root-ca-file={plane.ca_file}",
        "--use-service-account-credentials=true",
        f"--controllers={controllers(plane)}",
        # the node-lifecycle controller looks at the node every 5 s by default: the first
        # Pods of a new cluster would wait that long for the not-ready taint to go
        "--node-monitor-period=1s",
    ]


def _scheduler_args(plane: ControlPlane) -> list[str]:
    return _secure_serving(plane, "kube-scheduler")


_ARGS: dict[str, Callable[[ControlPlane], list[str]]] = {
    "etcd": _etcd_args,
    "kube-apiserver": _apiserver_args,
    "kube-controller-manager": _controller_manager_args,
    "kube-scheduler": _scheduler_args,
}


def etcd_client_context(plane: ControlPlane) -> ssl.SSLContext:
    """TLS to etcd as its one accepted client (the apiserver's certificate)."""
    assert plane.etcd is not None
    context = ssl.create_default_context(cafile=str(plane.etcd.ca.cert))
    context.load_cert_chain(str(plane.etcd.client.cert), str(plane.etcd.client.key))
    return context


def _wait_healthy(plane: ControlPlane, name: str, timeout: float) -> None:
    if name == "etcd":
        _wait_http(f"{plane.etcd_url}/health", plane, name, timeout, etcd_client_context(plane))
        return
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    if name == "kube-apiserver":
        headers = {"Authorization": f"Bearer {plane.token}"}
        _wait_http(f"{plane.server}/readyz", plane, name, timeout, context, headers)
    else:  # /healthz is the one path they serve without authentication
        url = f"https://{LOOPBACK}:{plane.ports[name]}/healthz"
        _wait_http(url, plane, name, timeout, context)


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca_file: Path,
    token: str | None = None,
    client: pki.KeyPair | None = None,
    name: str = "olmtool",
) -> None:
    """A kubeconfig for ``server`` that authenticates with ``token`` or with the
    ``client`` certificate (a kubelet's identity)."""
    user: dict[str, str] = {"token": token} if token else {}
    if client is not None:
        user = {"client-certificate": str(client.cert), "client-key": str(client.key)}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [{"name": "admin", "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }
    pki.write_private(path, yamlwrite.dump(config, sort_keys=False).encode())


def _spawn(binary: Path, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(binary), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal does not reach it first
        )


def _wait_http(
    url: str,
    plane: ControlPlane,
    component: str,
    timeout: float,
    context: ssl.SSLContext,
    headers: dict[str, str] | None = None,
) -> None:
    request = urllib.request.Request(url, headers=headers or {})
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        process = plane.processes[component]
        if process.poll() is not None:
            log = plane.state_dir / f"{component}.log"
            taken = "address already in use" in _tail(log)
            message = f"{component} exited with code {process.returncode}; see {log}"
            if taken:
                raise PortTaken(message, port=plane.ports[COMPONENT_PORTS[component][0]])
            raise ControlPlaneError(message)
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.25)
    raise ControlPlaneError(
        f"{component} not healthy after {timeout:.0f}s ({last}); see {plane.state_dir}"
    )


def _terminate(process: subprocess.Popen[bytes], grace: float) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
