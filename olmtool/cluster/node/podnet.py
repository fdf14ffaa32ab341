"""The node agent's Pod networking: which mode, Pod addresses and sandboxes.

With a cluster network and network namespaces available (:mod:`.netns`), every Pod
gets a namespace on the cluster's bridge and an address from its Pod network; else
(no cluster network, not root, no ``ip``) Pods share the host's network stack with
loopback addresses (:mod:`.network`), which is logged once when the agent starts.

>>> pods = PodNetwork(state_dir, network)
>>> pods.start()                      # bridge + Service route, leftovers removed
>>> ip = pods.allocate("ns", "web-0")
>>> path = pods.sandbox(uid, ip)      # /run/netns/olm1-..., or None (host network)
>>> pods.stop()                       # every sandbox, the route and the bridge go
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.node import netns
from olmtool.cluster.node.netns import NodeBridge, Sandbox, SandboxError
from olmtool.cluster.node.network import LOOPBACK_POOL, AddressPool, IPAllocator

log = logging.getLogger(__name__)

ADDRESSES_FILE = "pod-ips.json"


class PodNetwork:
    """Addresses and network namespaces of the Pods of one node agent."""

    def __init__(
        self, state_dir: Path, network: ClusterNetwork | None, *, namespaces: bool | None = None
    ) -> None:
        self.state_dir = state_dir
        self.network = network
        self._wanted = namespaces  # None: whenever the machine allows
        self.namespaces = False
        self.ips: IPAllocator  # from start(): its pool depends on the mode
        self._sandboxes: dict[str, Sandbox] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Pick the mode; in namespace mode remove what a crashed agent left and set the
        bridge and the Service route up (falling back to the host network if that fails)."""
        self.namespaces = self._namespaces_possible()
        if self.namespaces and self.network is not None:
            self._remove_leftovers()
            try:
                NodeBridge(self.network).set_up()
            except SandboxError as exc:
                log.warning("Pods share the host network: the bridge cannot be set up: %s", exc)
                NodeBridge(self.network).tear_down()
                self.namespaces = False
        self.ips = IPAllocator(self.state_dir / ADDRESSES_FILE, self._pool())

    def stop(self) -> None:
        """Remove every sandbox, the Service route and the bridge."""
        if not self.namespaces or self.network is None:
            return
        with self._lock:
            self._sandboxes.clear()
        netns.remove_node_network(self.network)

    def allocate(self, namespace: str, name: str) -> str:
        return self.ips.allocate(namespace, name)

    def release(self, namespace: str, name: str) -> None:
        self.ips.release(namespace, name)

    def sandbox(self, uid: str, address: str) -> str | None:
        """The Pod's network namespace (``/run/netns/...``), made now if it has none yet;
        None when Pods share the host network. Raises SandboxError."""
        if not self.namespaces or self.network is None:
            return None
        with self._lock:
            existing = self._sandboxes.get(uid)
        if existing is not None:
            return existing.path
        sandbox = Sandbox.of(self.network.index, uid)
        sandbox.create(self.network, address)
        with self._lock:
            self._sandboxes[uid] = sandbox
        return sandbox.path

    def remove_sandbox(self, uid: str) -> None:
        with self._lock:
            sandbox = self._sandboxes.pop(uid, None)
        if sandbox is not None:
            sandbox.remove()

    # -- the mode -------------------------------------------------------------------------

    def _namespaces_possible(self) -> bool:
        if self.network is None or self._wanted is False:
            if self.network is None:
                log.info("no cluster network: Pods share the host network (loopback IPs)")
            return False
        reason = netns.unavailable_reason()
        if reason:
            log.warning(
                "Pods share the host network with loopback IPs from %s (%s): a port one "
                "binds on 0.0.0.0 is taken for all, and Service ClusterIPs do not answer",
                self.network.loopback_cidr,
                reason,
            )
            return False
        return True

    def _pool(self) -> AddressPool:
        if self.network is None:
            return LOOPBACK_POOL
        if self.namespaces:
            return AddressPool.of(self.network.pod_cidr, reserved=[self.network.gateway])
        return AddressPool.of(self.network.loopback_cidr)

    def _remove_leftovers(self) -> None:
        assert self.network is not None
        leftovers = netns.leftover_sandboxes(self.network.index)
        for sandbox in leftovers:
            sandbox.remove()
        if leftovers:
            log.info("removed %d Pod network namespaces left by a previous agent", len(leftovers))
