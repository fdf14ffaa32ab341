"""The host side of a node's Pod network: its bridge, its CNI config, and the sysctls.

The bridge ``olmtool<i>`` holds the gateway ``10.244.i.1``, which is also the node's
address (the kubelet refuses a loopback ``--node-ip``, and the apiserver reaches the
kubelet there). The CNI ``bridge`` plugin attaches Pods to it with ``host-local`` IPAM on
the cluster's Pod range (its allocations kept in the node's directory, never in
``/var/lib/cni``); ``portmap`` serves hostPorts.

kubelet 1.20 rewrites host sysctls (``vm.overcommit_memory``, ``kernel.panic``,
``kernel.panic_on_oops``) and Pod networking needs forwarding and bridged traffic through
iptables (kube-proxy's rules). The values before the first node started are recorded
machine-wide (:data:`BASELINE`) and written back when the last cluster stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

from olmtool.cluster.network import ClusterNetwork
from olmtool.errors import OlmtoolError

BASELINE = Path("/run/olmtool/sysctl-baseline.json")
# What kubelet 1.20 sets (no flag skips it) and what Pod networking needs.
KUBELET_SYSCTLS = ("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops")
NETWORK_SYSCTLS = {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"}
CNI_VERSION = "0.4.0"
CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins


class HostNetworkError(OlmtoolError):
    """The node's bridge or sysctls could not be set up."""


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
    names = (*KUBELET_SYSCTLS, *NETWORK_SYSCTLS)
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
            try:
                write_sysctl(name, value)
                changed[name] = value
            except HostNetworkError:
                continue
    path.unlink(missing_ok=True)
    return changed


def enable_pod_networking() -> None:
    for name, value in NETWORK_SYSCTLS.items():
        if read_sysctl(name) != value:
            write_sysctl(name, value)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise HostNetworkError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def ensure_bridge(network: ClusterNetwork) -> None:
    """The bridge with the gateway address, up (made again when something removed it)."""
    if _ip("link", "show", network.bridge, check=False).returncode != 0:
        _ip("link", "add", network.bridge, "type", "bridge")
    prefix = network.pod_cidr.split("/")[1]
    address = f"{network.gateway}/{prefix}"
    shown = _ip("-o", "addr", "show", "dev", network.bridge).stdout
    if f" {address} " not in shown:
        _ip("addr", "add", address, "dev", network.bridge)
    _ip("link", "set", network.bridge, "up")


def remove_bridge(network: ClusterNetwork) -> None:
    _ip("link", "delete", network.bridge, check=False)


def cni_conflist(network: ClusterNetwork, ipam_dir: Path) -> dict[str, object]:
    return {
        "cniVersion": CNI_VERSION,
        "name": network.bridge,
        "plugins": [
            {
                "type": "bridge",
                "bridge": network.bridge,
                "isGateway": True,
                "ipMasq": True,
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


def write_cni_config(network: ClusterNetwork, conf_dir: Path, ipam_dir: Path) -> Path:
    conf_dir.mkdir(parents=True, exist_ok=True)
    ipam_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "10-olmtool.conflist"
    text = json.dumps(cni_conflist(network, ipam_dir), indent=2, sort_keys=True) + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def cni_delete(
    network: ClusterNetwork, conf_dir: Path, ipam_dir: Path, container_id: str, netns: str
) -> None:
    """CNI DEL for a sandbox, its plugins in reverse (what containerd does when the kubelet
    removes a Pod): the bridge's masquerade rules, the portmap chains, the address."""
    del conf_dir  # the conflist is derived again: the same network gives the same list
    conflist = cni_conflist(network, ipam_dir)
    for plugin in reversed(conflist["plugins"]):  # type: ignore[call-overload]
        document = {"cniVersion": CNI_VERSION, "name": conflist["name"], **plugin}
        env = {
            "CNI_COMMAND": "DEL",
            "CNI_CONTAINERID": container_id,
            "CNI_NETNS": netns,
            "CNI_IFNAME": "eth0",
            "CNI_PATH": CNI_BIN_DIR,
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        }
        subprocess.run(
            [f"{CNI_BIN_DIR}/{plugin['type']}"], input=json.dumps(document), env=env,
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip


def remove_netns(path: str) -> None:
    """Unmount and remove a pinned network namespace (the veth pair goes with it)."""
    subprocess.run(["umount", path], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        Path(path).unlink()
