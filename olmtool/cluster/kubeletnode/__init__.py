"""A real node for a local cluster: containerd and kubelet 1.20, as on kind.

``cluster up`` starts, for its node, containerd (:mod:`.containerd`: its own config, store
and socket; the cluster's registry mirrors ``quay.io``, ``docker.io``, ...), then the
kubelet (:mod:`.kubelet`: a ``system:node`` identity, its API on the node's address)
with Pods on the CNI bridge of the cluster's network (:mod:`.hostnet`). This module
prepares the host and says what to run; :mod:`olmtool.cluster.lifecycle` runs and records the
processes like every other component.

>>> node = RealNode("olmtool-node", "default", state_dir / "node", network.node(0, 1))
>>> prepare_host(node)
>>> argv = containerd_command(node, registry="127.0.0.1:5001", login=login)
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olmtool.cluster import pki
from olmtool.cluster.kubeletnode import containerd, hostnet, kubelet, mountns
from olmtool.cluster.kubeletnode.containerd import ContainerdError, ContainerdPaths
from olmtool.cluster.kubeletnode.hostnet import HostNetworkError
from olmtool.cluster.kubeletnode.kubelet import KubeletPaths
from olmtool.cluster.kubeletnode.pause import PAUSE_IMAGE, pause_image
from olmtool.cluster.network import ClusterNetwork, NodeNetwork
from olmtool.cluster.registryauth import RegistryLogin
from olmtool.errors import OlmtoolError

__all__ = [
    "NODE_BINARIES",
    "ContainerdError",
    "HostNetworkError",
    "NodeError",
    "RealNode",
    "containerd_command",
    "dns_hosts_file",
    "kubelet_command",
    "load_pause",
    "missing_tools",
    "prepare_host",
    "release_host",
    "stop_pods",
    "wait_containerd",
    "wait_kubelet",
]

NODE_BINARIES = ("kubelet", "kube-proxy", "pause")  # from the asset build (--node)
HOST_TOOLS = {"containerd": "containerd", "runc": "runc", "ip": "iproute2",
              "iptables": "iptables", "conntrack": "conntrack",
              "dnsmasq": "dnsmasq-base"}  # fmt: skip


class NodeError(OlmtoolError):
    """The real node could not be prepared or started."""


@dataclass(frozen=True)
class RealNode:
    """One node of a cluster: its name, its directory and its share of the cluster's
    network (its Pods' range, its link, its network namespace)."""

    name: str
    cluster: str
    directory: Path
    network: NodeNetwork

    @property
    def address(self) -> str:
        """The node's InternalIP: the host's end of the link to its network namespace."""
        return self.network.host_address

    @property
    def host_key(self) -> str:
        """What names the node's machine-wide resources (cgroup root, mount namespace):
        its network namespace's name, which the network's claim makes unique on the
        machine (cluster names are not: two state folders may each hold an ``e2e``)."""
        return self.network.netns

    @property
    def mount_namespace(self) -> Path:
        """The pin of the mount namespace its containerd and kubelet run in
        (:mod:`.mountns`)."""
        return mountns.pin_path(self.host_key)

    @property
    def containerd(self) -> ContainerdPaths:
        return ContainerdPaths.under(self.directory)

    @property
    def kubelet(self) -> KubeletPaths:
        return KubeletPaths(self.directory.resolve() / "kubelet")

    @property
    def cni_conf_dir(self) -> Path:
        return self.directory.resolve() / "cni" / "net.d"

    @property
    def ipam_dir(self) -> Path:
        return self.directory.resolve() / "cni" / "ipam"

    @property
    def cni_bin_dir(self) -> Path:
        return self.directory.resolve() / "cni" / "bin"


def dns_hosts_file(network: ClusterNetwork) -> Path:
    """The cluster DNS's records: outside the (0700) state directory, because dnsmasq
    reads them after dropping its privileges."""
    return Path("/run/olmtool/dns") / f"{network.netns}.hosts"


def missing_tools() -> list[str]:
    """Debian packages the node needs that are not installed (``make tools``)."""
    missing = [package for tool, package in HOST_TOOLS.items() if shutil.which(tool) is None]
    if not Path(hostnet.CNI_BIN_DIR, "bridge").exists():
        missing.append("containernetworking-plugins")
    return sorted(set(missing))


def prepare_host(node: RealNode) -> None:
    """The node's network namespace and its link, the CNI config and plugin wrappers,
    the Pods' cgroup parent, the mount namespace of its containerd and kubelet; the host's
    sysctls recorded before the kubelet changes them."""
    if missing := missing_tools():
        raise NodeError(f"a real node needs {', '.join(missing)} (make tools)")
    hostnet.record_baseline()
    hostnet.ensure_node_network(node.network)
    hostnet.write_cni_wrappers(node.network, node.cni_bin_dir)
    hostnet.write_cni_config(node.network, node.cni_conf_dir, node.ipam_dir)
    kubelet.ensure_cgroup_root(node.host_key)
    mountns.ensure(node.directory, node.host_key)


def release_host(node: RealNode, *, delete: bool = False, network: bool = True) -> dict[str, str]:
    """Undo :func:`prepare_host` once the node's processes are gone (Pods' volumes
    unmounted; ``delete``: the kubelet's root removed too; ``network`` False: the network
    namespace and link stay, for the cluster that holds the index now). The last node on
    the machine also restores the host's sysctls (returning what changed) and removes
    the kubelet's iptables chains."""
    mountns.release(node.mount_namespace)  # the Pods' mounts go with it
    kubelet.unmount_under(node.kubelet.root)  # (a node an older olmtool started)
    kubelet.unmount_under(node.directory.resolve())
    if node.network.primary:  # the cluster's DNS runs beside its first node
        from olmtool.cluster.kubeletnode.dns import stop_strays

        stop_strays(dns_hosts_file(node.network.cluster))
        dns_hosts_file(node.network.cluster).unlink(missing_ok=True)
    for socket in node.containerd.sockets:
        socket.unlink(missing_ok=True)
    if delete:
        kubelet.remove_root(node.kubelet.root)
    if network:
        hostnet.remove_node_network(node.network)
    shutil.rmtree(node.ipam_dir, ignore_errors=True)  # its Pods are gone
    kubelet.remove_cgroup_root(node.host_key)
    if hostnet.other_nodes(node.network):
        return {}
    hostnet.remove_kubelet_chains()
    return hostnet.restore_baseline()


def containerd_command(
    node: RealNode, *, registry: str | None, login: RegistryLogin | None
) -> list[str]:
    paths = node.containerd
    containerd.write_config(
        paths, cni_conf_dir=node.cni_conf_dir, cni_bin_dir=node.cni_bin_dir,
        sandbox_image=PAUSE_IMAGE,
        registry=registry, login=login,
    )  # fmt: skip
    return mountns.enter(node.mount_namespace, containerd.command(paths))


def wait_containerd(node: RealNode, alive: Callable[[], bool], timeout: float) -> None:
    """Until containerd answers on its socket (it died: NodeError)."""
    deadline = time.monotonic() + timeout
    paths = node.containerd
    while time.monotonic() < deadline:
        if not alive():
            raise NodeError(f"containerd exited; see {node.directory / 'containerd.log'}")
        if paths.socket.exists():
            try:
                containerd.ctr(paths, "version", timeout=5)
                return
            except (ContainerdError, subprocess.TimeoutExpired):
                pass
        time.sleep(0.1)
    raise NodeError(f"containerd did not answer within {timeout:.0f}s")


def wait_kubelet(
    node: RealNode, healthz_port: int, alive: Callable[[], bool], timeout: float
) -> None:
    """Until the kubelet's healthz says ok (it died: NodeError). It serves healthz only
    once it is past its start-up, which exits when containerd does not answer: a Node
    object's Ready condition, stale for 40 s, cannot tell."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{healthz_port}/healthz"
    while time.monotonic() < deadline:
        if not alive():
            raise NodeError(f"the kubelet exited; see {node.directory / 'kubelet.log'}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    raise NodeError(f"the kubelet's healthz did not say ok within {timeout:.0f}s")


def load_pause(node: RealNode, assets: Path) -> None:
    """The sandbox image, imported unless the node's store has it."""
    paths = node.containerd
    listed = containerd.ctr(paths, "images", "list", "--quiet")
    if PAUSE_IMAGE in listed.split():
        return
    from olmtool.images import write_oci_layout

    layout = node.directory.resolve() / "pause-layout"
    write_oci_layout(pause_image(assets / "pause"), layout, "3.4.1")
    containerd.import_layout(paths, layout, PAUSE_IMAGE)


def kubelet_command(
    node: RealNode,
    *,
    assets: Path,
    server: str,
    ca: pki.KeyPair,
    pki_dir: Path,
    port: int,
    healthz_port: int,
) -> list[str]:
    """Credentials and configuration written; the kubelet's argv returned."""
    identity = kubelet.node_identity(pki_dir, ca, node.name)
    serving = kubelet.serving_cert(pki_dir, ca, node.name, node.address)
    paths = node.kubelet
    config = kubelet.kubelet_config(
        address=node.address, port=port, healthz_port=healthz_port, ca_file=ca.cert,
        serving=serving, network=node.network, cgroup_root=kubelet.cgroup_root(node.host_key),
        resolv_conf=paths.resolv_conf,
    )  # fmt: skip
    kubelet.write_files(
        paths, server=server, ca_file=ca.cert, identity=identity, config=config,
        # the cluster DNS listens on the first node's address (every node reaches it)
        nameserver=node.network.cluster.host_address,
    )  # fmt: skip
    args = kubelet.kubelet_args(
        paths, node=node.name, address=node.address,
        runtime_endpoint=node.containerd.endpoint, pause_image=PAUSE_IMAGE,
    )  # fmt: skip
    return mountns.enter(node.mount_namespace, [str(assets / "kubelet"), *args])


def stop_pods(node: RealNode) -> int:
    """Every container of the node killed and every Pod's network namespace unmounted,
    through containerd, which must run; the kubelet must not (it would start them again).
    Their veths, addresses and rules go with the node's namespace
    (:func:`release_host`). Returns how many containers there were."""
    paths = node.containerd
    ids = containerd.ctr(paths, "containers", "list", "--quiet").split()
    sandboxes = []
    for container_id in ids:
        netns = containerd.sandbox_netns(paths, container_id)
        if netns is not None:
            sandboxes.append((container_id, netns))
    for container_id in ids:
        containerd.kill_task(paths, container_id)
    for _container_id, netns in sandboxes:
        hostnet.remove_netns_mount(netns)
    return len(ids)
