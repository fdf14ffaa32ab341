"""A real node's network: a network namespace of its own, linked to the host.

Like a kind node container, each cluster's node has its own network namespace
(``olmtool-<i>``; a cluster's further nodes ``olmtool-<i>-<n>``,
:class:`~olmtool.cluster.network.NodeNetwork`). It holds the Pod bridge, kube-proxy's iptables rules and the CNI
plugins' (masquerade, hostPort), so two clusters' kube-proxies never rewrite each other's
chains, and deleting the namespace takes every rule, bridge and veth with it. A veth pair
links it to the host: the host's end ``olmtool<i>`` (``10.243.i.1``) is the node's
InternalIP, where the kubelet (which runs in the host's namespace, beside containerd and
the cluster's registry on loopback) serves its API and where Pods reach the apiserver and
the cluster DNS; the host routes the Pod and Service ranges to the namespace's end
(``10.243.i.2``). containerd runs the CNI plugins through small wrappers that enter the
node's namespace, so Pods are attached to its bridge.

kubelet 1.20 rewrites host sysctls (``vm.overcommit_memory``, ``kernel.panic``,
``kernel.panic_on_oops``), and a cluster of several nodes needs the host to forward
between their links (``net.ipv4.ip_forward``, with a ``FORWARD`` rule for the cluster's
Pod range, removed with the cluster's first node): the values before the first node
started are recorded machine-wide (:data:`BASELINE`) and written back when the last node
stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

from olmtool.cluster.network import NodeNetwork
from olmtool.errors import OlmtoolError

BASELINE = Path("/run/olmtool/sysctl-baseline.json")
KUBELET_SYSCTLS = ("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops")
# the host routes between the nodes of a cluster with several (each in its namespace)
FORWARDING = "net.ipv4.ip_forward"
# inside the node's namespace: it routes between the link, the bridge and the Pods, and
# bridged traffic goes through kube-proxy's rules
NODE_SYSCTLS = {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"}
CNI_VERSION = "0.4.0"
CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins
CNI_PLUGINS = ("bridge", "host-local", "portmap", "loopback")
POD_BRIDGE = "cni0"  # inside the node's namespace
UPLINK = "uplink"  # the namespace's end of the link


class HostNetworkError(OlmtoolError):
    """The node's network or the host's sysctls could not be set up."""


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_sysctl(name: str) -> str | None:
    try:
        return _sysctl_path(name).read_text().strip()
    except OSError:
        return None


def write_sysctl(name: str, value: str) -> None:
    try:
        _sysctl_path(name).write_text(f"{value}\n")
    except OSError as exc:
        raise HostNetworkError(f"cannot set {name}={value}: {exc.strerror}") from None


def record_baseline(path: Path = BASELINE) -> None:
    """The host's values, unless an earlier node already recorded them (they are then
    already changed)."""
    if path.exists():
        return
    names = (*KUBELET_SYSCTLS, FORWARDING)
    values = {name: value for name in names if (value := read_sysctl(name)) is not None}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def restore_baseline(path: Path = BASELINE) -> dict[str, str]:
    """Write the recorded values back (when no cluster's node runs any more); returns
    what changed."""
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    changed = {}
    for name, value in sorted(values.items()):
        if read_sysctl(name) != value:
            with contextlib.suppress(HostNetworkError):
                write_sysctl(name, value)
                changed[name] = value
    path.unlink(missing_ok=True)
    return changed


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise HostNetworkError(f"{' '.join(argv)}: {result.stderr.strip()}")
    return result


def in_netns(network: NodeNetwork, *argv: str) -> list[str]:
    """``argv`` run inside the node's network namespace."""
    return ["ip", "netns", "exec", network.netns, *argv]


def netns_exists(network: NodeNetwork) -> bool:
    return Path("/run/netns", network.netns).exists()


def ensure_node_network(network: NodeNetwork) -> None:
    """The namespace, the link and the routes, made (again) where missing: also while the
    cluster runs, when something removed them."""
    if not netns_exists(network):
        _run("ip", "netns", "add", network.netns)
    host, node = network.bridge, UPLINK
    if _run("ip", "link", "show", host, check=False).returncode != 0:
        _run("ip", "link", "delete", host, check=False)
        _run("ip", "link", "add", host, "type", "veth", "peer", "name", f"{host}n")
        _run("ip", "link", "set", f"{host}n", "netns", network.netns)
        _run(*in_netns(network, "ip", "link", "set", f"{host}n", "name", node))
    prefix = network.link_cidr.split("/")[1]
    _address(["ip"], host, f"{network.host_address}/{prefix}")
    _run("ip", "link", "set", host, "up")
    _address(in_netns(network, "ip"), node, f"{network.node_netns_address}/{prefix}")
    _run(*in_netns(network, "ip", "link", "set", node, "up"))
    _run(*in_netns(network, "ip", "link", "set", "lo", "up"))
    _run(*in_netns(network, "ip", "route", "replace", "default", "via", network.host_address))
    for cidr in network.routed_cidrs:
        _run("ip", "route", "replace", cidr, "via", network.node_netns_address, "dev", host)
    for name, value in NODE_SYSCTLS.items():
        _run(*in_netns(network, "sysctl", "-q", "-w", f"{name}={value}"))
    rule = masquerade_rule(network)
    if _run(*in_netns(network, "iptables", "-t", "nat", "-C", *rule), check=False).returncode:
        _run(*in_netns(network, "iptables", "-t", "nat", "-A", *rule))
    if network.count > 1:
        write_sysctl(FORWARDING, "1")
        rule = forward_rule(network)
        if _run("iptables", "-C", *rule, check=False).returncode:
            _run("iptables", "-I", *rule[:1], "1", *rule[1:])  # before a DROP (Docker's)


def forward_rule(network: NodeNetwork) -> list[str]:
    """The host forwards Pod traffic between the cluster's nodes (whatever the
    ``FORWARD`` policy: Docker makes it DROP)."""
    cidr = network.cluster_pod_cidr
    return [
        "FORWARD", "-s", cidr, "-d", cidr,
        "-m", "comment", "--comment", "olmtool: between the nodes of a cluster", "-j", "ACCEPT",
    ]  # fmt: skip


def masquerade_rule(network: NodeNetwork) -> list[str]:
    """The node's Pods leave it under its address, except towards other nodes' Pods:
    those see the Pod's own address, as on a cluster whose CNI routes between nodes (a
    peer's address checked against its certificate, as etcd does, must be the Pod's)."""
    return [
        "POSTROUTING", "-s", network.pod_cidr, "!", "-d", network.cluster_pod_cidr,
        "-m", "comment", "--comment", "olmtool: Pods leaving the cluster network",
        "-j", "MASQUERADE",
    ]  # fmt: skip


def _address(ip: list[str], device: str, address: str) -> None:
    shown = _run(*ip, "-o", "addr", "show", "dev", device).stdout
    if f" {address} " not in shown:
        _run(*ip, "addr", "add", address, "dev", device)


def other_nodes(network: NodeNetwork) -> list[str]:
    """The network namespaces of other clusters' nodes on this machine (whatever their
    state directory): while there are any, the host's settings stay."""
    return sorted(
        path.name for path in Path("/run/netns").glob("olmtool-*") if path.name != network.netns
    )


def remove_node_network(network: NodeNetwork) -> None:
    """The namespace (and with it the bridge, the veths and every rule in it), the link's
    host end and the routes through it; with the first node, the host's forward rule."""
    _run("ip", "netns", "delete", network.netns, check=False)
    _run("ip", "link", "delete", network.bridge, check=False)
    if network.primary:
        while _run("iptables", "-D", *forward_rule(network), check=False).returncode == 0:
            pass


def write_cni_wrappers(network: NodeNetwork, bin_dir: Path) -> Path:
    """``bin_dir`` with each CNI plugin run inside the node's namespace (containerd runs
    plugins in its own, the host's)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for plugin in CNI_PLUGINS:
        script = bin_dir / plugin
        text = f'#!/bin/sh\nexec ip netns exec {network.netns} {CNI_BIN_DIR}/{plugin} "$@"\n'
        tmp = script.with_name(f".{plugin}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, script)
    return bin_dir


def cni_conflist(network: NodeNetwork, ipam_dir: Path) -> dict[str, object]:
    return {
        "cniVersion": CNI_VERSION,
        "name": network.bridge,
        "plugins": [
            {
                "type": "bridge",
                "bridge": POD_BRIDGE,
                "isGateway": True,
                "ipMasq": False,  # masquerade_rule: not between nodes
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": network.pod_cidr, "gateway": network.gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def write_cni_config(network: NodeNetwork, conf_dir: Path, ipam_dir: Path) -> Path:
    conf_dir.mkdir(parents=True, exist_ok=True)
    ipam_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "10-olmtool.conflist"
    text = json.dumps(cni_conflist(network, ipam_dir), indent=2, sort_keys=True) + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def remove_netns_mount(path: str) -> None:
    """Unmount and remove a Pod's pinned network namespace."""
    subprocess.run(["umount", path], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        Path(path).unlink()


def remove_kubelet_chains() -> list[str]:
    """The iptables chains and jumps the kubelet makes in the host's namespace
    (``KUBE-MARK-*``, ``KUBE-FIREWALL``, ``KUBE-POSTROUTING``, ``KUBE-KUBELET-CANARY``),
    once no node runs: each table rewritten without them, in one ``iptables-restore``."""
    removed = []
    for table in ("nat", "filter", "mangle"):
        saved = subprocess.run(
            ["iptables-save", "-t", table], capture_output=True, text=True, check=False
        )
        if saved.returncode != 0 or "KUBE-" not in saved.stdout:
            continue
        lines = saved.stdout.splitlines()
        kept = [line for line in lines if "KUBE-" not in line]
        removed += [f"{table}: {line}" for line in lines if "KUBE-" in line]
        subprocess.run(
            ["iptables-restore", "--table", table], input="\n".join(kept) + "\n",
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    return removed
