"""Running a real etcd and kube-apiserver on loopback, for tests and local clusters.

>>> with start_apiserver(ensure_assets(), Path("/tmp/state")) as plane:
...     print(plane.server, plane.kubeconfig)

Given a :class:`~olmtool.cluster.network.ClusterNetwork`, Services get ClusterIPs from
its Service network and the serving certificate also names its ``apiserver_service_ip``
(where in-cluster clients reach the ``kubernetes`` Service); without one, ClusterIPs
come from ``10.0.0.0/24`` and are not reachable.
"""

from __future__ import annotations

import secrets
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from olmtool import yamlio
from olmtool.cluster import pki
from olmtool.cluster.network import ClusterNetwork
from olmtool.errors import OlmtoolError
from olmtool.ports import LOOPBACK, free_ports
from olmtool.ports import free_port as free_port  # re-exported: callers predate olmtool.ports

SERVICE_CIDR = "10.0.0.0/24"  # without a cluster network
APISERVER_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
# Controllers that need a cloud, CNI or CSR signing are off; nodelifecycle too: the node
# agent clears the not-ready taint itself and there is one node to evict nothing to.
CONTROLLERS = (
    "*,-nodeipam,-nodelifecycle,-route,-service,-cloud-node-lifecycle,"
    "-csrsigning,-csrapproving,-csrcleaner,-bootstrapsigner,-tokencleaner,-attachdetach,"
    "-persistentvolume-expander"
)


class ControlPlaneError(OlmtoolError):
    """A control-plane component did not start or become healthy."""


class _PortTaken(ControlPlaneError):
    """A free port we picked was taken by someone else before the component bound it."""


_PORT_ATTEMPTS = 3


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver; ``kubeconfig`` authenticates as cluster admin."""

    state_dir: Path
    server: str
    etcd_url: str
    token: str
    ca_file: Path
    kubeconfig: Path
    sa_key: Path | None = None
    # the node agent's kubelet API: its serving cert, and the apiserver's client cert
    kubelet_serving: pki.KeyPair | None = None
    kubelet_client: pki.KeyPair | None = None
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM every component (apiserver first), SIGKILL what outlives ``grace``."""
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
) -> ControlPlane:
    """Start etcd and kube-apiserver; retried on fresh ports if one was taken meanwhile."""
    fresh = not (state_dir / "etcd").exists()
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        try:
            return _launch_apiserver(assets, state_dir, timeout=timeout, network=network)
        except _PortTaken:
            if attempt == _PORT_ATTEMPTS:
                raise
            if fresh:  # a new store remembers its first peer URL: start it over
                shutil.rmtree(state_dir / "etcd", ignore_errors=True)
    raise AssertionError("unreachable")


def _launch_apiserver(
    assets: Path, state_dir: Path, *, timeout: float, network: ClusterNetwork | None
) -> ControlPlane:
    state_dir.mkdir(parents=True, exist_ok=True)
    service_cidr = network.service_cidr if network else SERVICE_CIDR
    service_ip = network.apiserver_service_ip if network else "10.0.0.1"
    ca, serving, sa, token = _credentials(state_dir, (LOOPBACK, service_ip))
    kubelet_serving, kubelet_client = kubelet_credentials(state_dir, ca)
    tokens = state_dir / "tokens.csv"
    etcd_port, peer_port, api_port = free_ports(3)
    etcd_url = f"http://{LOOPBACK}:{etcd_port}"
    server = f"https://{LOOPBACK}:{api_port}"
    plane = ControlPlane(
        state_dir, server, etcd_url, token, ca.cert, state_dir / "admin.kubeconfig", sa.key
    )
    plane.kubelet_serving, plane.kubelet_client = kubelet_serving, kubelet_client
    write_kubeconfig(plane.kubeconfig, server=server, ca_file=ca.cert, token=token)
    try:
        plane.processes["etcd"] = _spawn(
            assets / "etcd",
            [
                f"--data-dir={state_dir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://{LOOPBACK}:{peer_port}",
                f"--initial-advertise-peer-urls=http://{LOOPBACK}:{peer_port}",
                f"--initial-cluster=default=http://{LOOPBACK}:{peer_port}",
                "--name=default",
            ],
            state_dir / "etcd.log",
        )
        _wait_http(f"{etcd_url}/health", plane, "etcd", timeout)
        plane.processes["kube-apiserver"] = _spawn(
            assets / "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                f"--bind-address={LOOPBACK}",
                f"--advertise-address={LOOPBACK}",
                f"--secure-port={api_port}",
                "--insecure-port=0",
                f"--cert-dir={state_dir / 'apiserver-certs'}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={sa.cert}",
                f"--service-account-signing-key-file={sa.key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-cluster-ip-range={service_cidr}",
                "--allow-privileged=true",
                # logs and exec reach the node agent's kubelet API, both sides verified
                "--kubelet-preferred-address-types=InternalIP",
                f"--kubelet-client-certificate={kubelet_client.cert}",
                f"--kubelet-client-key={kubelet_client.key}",
                f"--kubelet-certificate-authority={ca.cert}",
            ],
            state_dir / "kube-apiserver.log",
        )
        _wait_http(f"{server}/readyz", plane, "kube-apiserver", timeout)
    except BaseException:
        plane.stop()
        raise
    return plane


def _credentials(
    state_dir: Path, ips: tuple[str, ...]
) -> tuple[pki.KeyPair, pki.KeyPair, pki.KeyPair, str]:
    """CA, serving cert (for ``ips``), SA signing key and admin token: reused when the
    state dir has them, so a restarted cluster keeps its kubeconfig and service-account
    tokens valid; a serving cert lacking one of ``ips`` (the cluster moved to another
    network) is issued again by the same CA."""
    pki_dir = state_dir / "pki"
    tokens = state_dir / "tokens.csv"
    ca = pki.KeyPair(pki_dir / "olmtool-ca.crt", pki_dir / "olmtool-ca.key")
    serving = pki.KeyPair(pki_dir / "kube-apiserver.crt", pki_dir / "kube-apiserver.key")
    sa = pki.KeyPair(pki_dir / "service-account.pub", pki_dir / "service-account.key")
    paths = (ca.cert, ca.key, serving.cert, serving.key, sa.cert, sa.key, tokens)
    if all(path.is_file() for path in paths):
        if not set(ips) <= pki.certificate_ips(serving.cert):
            serving = _serving_cert(pki_dir, ca, ips)
        return ca, serving, sa, tokens.read_text().split(",", 1)[0]
    pki_dir.mkdir(exist_ok=True)
    ca = pki.create_ca(pki_dir)
    serving = _serving_cert(pki_dir, ca, ips)
    sa = pki.create_signing_key(pki_dir)
    token = secrets.token_hex(16)
    tokens.write_text(f'{token},admin,admin,"system:masters"\n')
    tokens.chmod(0o600)
    return ca, serving, sa, token


def _serving_cert(pki_dir: Path, ca: pki.KeyPair, ips: tuple[str, ...]) -> pki.KeyPair:
    return pki.create_serving_cert(pki_dir, ca, "kube-apiserver", hosts=APISERVER_NAMES, ips=ips)


def kubelet_credentials(state_dir: Path, ca: pki.KeyPair) -> tuple[pki.KeyPair, pki.KeyPair]:
    """The node agent's kubelet serving cert (127.0.0.1) and the apiserver's client cert
    for it, signed by the cluster CA; issued again when missing or from another CA."""
    pki_dir = state_dir / "pki"
    serving = pki.KeyPair(pki_dir / "kubelet.crt", pki_dir / "kubelet.key")
    client = pki.KeyPair(
        pki_dir / "kube-apiserver-kubelet-client.crt",
        pki_dir / "kube-apiserver-kubelet-client.key",
    )
    if not pki.issued_by(serving, ca):
        serving = pki.create_serving_cert(
            pki_dir, ca, "kubelet", hosts=("localhost",), ips=(LOOPBACK,)
        )
    if not pki.issued_by(client, ca):
        # the user and group a kubeadm apiserver presents to kubelets
        client = pki.create_client_cert(
            pki_dir, ca, "kube-apiserver-kubelet-client", organization="system:masters"
        )
    return serving, client


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


def launch_controllers(plane: ControlPlane, assets: Path, *, timeout: float = 90.0) -> None:
    """Add kube-controller-manager and kube-scheduler to a running apiserver (retried on
    fresh ports if one was taken meanwhile)."""
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        try:
            _launch_controllers(plane, assets, timeout=timeout)
            return
        except _PortTaken:
            for name in ("kube-scheduler", "kube-controller-manager"):
                if name in plane.processes:
                    _terminate(plane.processes.pop(name), 5.0)
            if attempt == _PORT_ATTEMPTS:
                plane.stop()
                raise


def _launch_controllers(plane: ControlPlane, assets: Path, *, timeout: float) -> None:
    state_dir = plane.state_dir
    try:
        manager_port, scheduler_port = free_ports(2)
        plane.processes["kube-controller-manager"] = _spawn(
            assets / "kube-controller-manager",
            [
                f"--kubeconfig={plane.kubeconfig}",
                f"--service-account-private-key-file={plane.sa_key}",
                f"--root-ca-file={plane.ca_file}",
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                f"--controllers={CONTROLLERS}",
                f"--address={LOOPBACK}",
                f"--port={manager_port}",
                "--secure-port=0",
            ],
            state_dir / "kube-controller-manager.log",
        )
        plane.processes["kube-scheduler"] = _spawn(
            assets / "kube-scheduler",
            [
                f"--kubeconfig={plane.kubeconfig}",
                "--leader-elect=false",
                f"--address={LOOPBACK}",
                f"--port={scheduler_port}",
                "--secure-port=0",
            ],
            state_dir / "kube-scheduler.log",
        )
        _wait_http(
            f"http://{LOOPBACK}:{manager_port}/healthz", plane, "kube-controller-manager", timeout
        )
        _wait_http(f"http://{LOOPBACK}:{scheduler_port}/healthz", plane, "kube-scheduler", timeout)
    except _PortTaken:
        raise  # launch_controllers retries on fresh ports, keeping the apiserver
    except BaseException:
        plane.stop()
        raise


def write_kubeconfig(
    path: Path, *, server: str, ca_file: Path, token: str, name: str = "olmtool"
) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }
    path.write_text(yamlio.dump(config, sort_keys=False))
    path.chmod(0o600)


def _spawn(binary: Path, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(binary), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal does not reach it first
        )


def _wait_http(url: str, plane: ControlPlane, component: str, timeout: float) -> None:
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {plane.token}"})
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        process = plane.processes[component]
        if process.poll() is not None:
            log = plane.state_dir / f"{component}.log"
            taken = "address already in use" in _tail(log)
            error = _PortTaken if taken else ControlPlaneError
            raise error(f"{component} exited with code {process.returncode}; see {log}")
        try:
            with urllib.request.urlopen(
                request, timeout=5, context=context if url.startswith("https") else None
            ) as response:
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
