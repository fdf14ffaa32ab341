"""Pod network namespaces on a cluster's bridge, made with iproute2 (``ip``).

The node side (:class:`NodeBridge`): a Linux bridge ``olmtool<i>`` holding the
gateway address of the cluster's Pod network, and a ``local`` route for the Service
network (``ip route add local 10.96.<i>.0/24 dev lo``) so every ClusterIP is an address
of this host that the Service proxy (:mod:`.services`) can listen on.

One :class:`Sandbox` per Pod: a named network namespace ``olm<i>-<hash>`` (the hash of
the cluster index and the Pod's uid) holding ``lo`` and ``eth0``, one end of a veth pair
whose other end (``ov<hash>``) is a port of the bridge; ``eth0`` has the Pod's address
and a default route via the gateway. Its MAC address is derived from the Pod IP (as
OVN-Kubernetes does), and the bridge's from the gateway, so ARP caches stay right when
an address passes to a re-created Pod or the bridge's ports change.

Containers join the namespace with ``nsenter --net=/run/netns/<name>``. Everything here
needs root; :func:`unavailable_reason` says why it cannot be used.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from olmtool.cluster.network import ClusterNetwork
from olmtool.errors import InternalError

NETNS_DIR = Path("/run/netns")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
IP_TIMEOUT = 20.0


class SandboxError(InternalError):
    """An ``ip`` command failed: the Pod (or the node) cannot have its network."""


def unavailable_reason() -> str | None:
    """Why Pods cannot get network namespaces here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nsenter"):
        if not shutil.which(tool, path=SYSTEM_PATH):
            return f"{tool} is not installed"
    return None


def ip_command(*args: str, batch: str | None = None) -> None:
    """Run ``ip args`` (with ``batch`` as its ``-batch -`` input); SandboxError on failure."""
    argv = [shutil.which("ip", path=SYSTEM_PATH) or "ip", *args]
    if batch is not None:
        argv += ["-batch", "-"]
    try:
        done = subprocess.run(
            argv, input=(batch or "").encode(), capture_output=True, timeout=IP_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"{' '.join(argv)}: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        raise SandboxError(f"ip {' '.join(args)}: {message}")


def _quiet(*args: str) -> None:
    """An ``ip`` command whose failure means there was nothing to undo."""
    with contextlib.suppress(SandboxError):
        ip_command(*args)


def mac_for(address: str) -> str:
    """``0a:58:`` and the four bytes of an IPv4 address: a locally administered unicast
    MAC that belongs to the address, not to the interface that has it for now."""
    packed = ipaddress.IPv4Address(address).packed
    return ":".join(f"{byte:02x}" for byte in (0x0A, 0x58, *packed))


@dataclass(frozen=True)
class NodeBridge:
    """The cluster network's bridge and Service route on this host."""

    network: ClusterNetwork

    @property
    def prefixlen(self) -> int:
        return ipaddress.IPv4Network(self.network.pod_cidr).prefixlen

    def set_up(self) -> None:
        """Create what is missing (what a crashed agent left is reused); SandboxError."""
        bridge, gateway = self.network.bridge, self.network.gateway
        if not Path(f"/sys/class/net/{bridge}").exists():
            ip_command("link", "add", bridge, "address", mac_for(gateway), "type", "bridge")
        ip_command(
            batch=f"addr replace {gateway}/{self.prefixlen} dev {bridge}\n"
            f"link set {bridge} up\n"
            f"route replace local {self.network.service_cidr} dev lo table local\n"
        )

    def tear_down(self) -> None:
        """Remove the route and the bridge (best effort: what is gone stays gone)."""
        _quiet("route", "del", "local", self.network.service_cidr, "dev", "lo", "table", "local")
        _quiet("link", "del", self.network.bridge)


@dataclass(frozen=True)
class Sandbox:
    """One Pod's network namespace and veth pair."""

    name: str  # the namespace: /run/netns/<name>
    veth: str  # the host end, a port of the bridge

    @classmethod
    def of(cls, index: int, uid: str) -> Sandbox:
        digest = hashlib.sha256(f"{index}/{uid}".encode()).hexdigest()[:11]
        return cls(f"{sandbox_prefix(index)}{digest}", f"ov{digest}")

    @property
    def path(self) -> str:
        return str(NETNS_DIR / self.name)

    def create(self, network: ClusterNetwork, address: str) -> None:
        """Make the namespace with ``eth0`` at ``address`` (any leftover of the same name is
        removed first); on failure nothing is left behind. Raises SandboxError."""
        self.remove()
        prefixlen = ipaddress.IPv4Network(network.pod_cidr).prefixlen
        try:
            ip_command("netns", "add", self.name)
            ip_command(
                batch=f"link add {self.veth} type veth peer name eth0 address "
                f"{mac_for(address)} netns {self.name}\n"
                f"link set {self.veth} master {network.bridge} up\n"
            )
            ip_command(
                "-n",
                self.name,
                batch=f"addr add {address}/{prefixlen} dev eth0\n"
                "link set lo up\n"
                "link set eth0 up\n"
                f"route add default via {network.gateway}\n",
            )
        except SandboxError:
            self.remove()
            raise

    def remove(self) -> None:
        """Delete the veth pair (at once: deleting the namespace would free it later) and
        the namespace."""
        if Path(f"/sys/class/net/{self.veth}").exists():
            _quiet("link", "del", self.veth)
        if (NETNS_DIR / self.name).exists():
            _quiet("netns", "del", self.name)


def remove_node_network(network: ClusterNetwork) -> None:
    """Everything of ``network`` on this host: its Pods' namespaces, the Service route and
    the bridge (what an agent killed with SIGKILL leaves; nothing when there is none)."""
    if unavailable_reason():
        return
    for sandbox in leftover_sandboxes(network.index):
        sandbox.remove()
    NodeBridge(network).tear_down()


def sandbox_prefix(index: int) -> str:
    return f"olm{index}-"


def leftover_sandboxes(index: int) -> list[Sandbox]:
    """The namespaces of cluster network ``index`` on this host (all of them: one agent
    per cluster network)."""
    prefix = sandbox_prefix(index)
    try:
        names = sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix))
    except OSError:
        return []
    return [Sandbox(name, f"ov{name.removeprefix(prefix)}") for name in names]
