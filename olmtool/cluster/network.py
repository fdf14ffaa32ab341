"""Cluster networks: address ranges that one local cluster holds on this machine.

Every cluster gets an *index* ``i`` (1-254) and with it a Pod network ``10.244.i.0/24``
(the Pod bridge in the node's network namespace ``olmtool-<i>`` holds the gateway
``10.244.i.1``), a Service network ``10.96.i.0/24`` (the apiserver's
``--service-cluster-ip-range``; the ``kubernetes`` Service gets ``10.96.i.1``, the cluster
DNS ``10.96.i.10``) and a link ``10.243.i.0/30`` between the host (``olmtool<i>``,
``10.243.i.1``: the node's address) and the node's namespace (``10.243.i.2``), through
which the host routes the Pod and Service networks. Two clusters on one machine
therefore never hand out the same address.

An index is *claimed* machine-wide: ``/run/olmtool/networks/<i>`` (a file created with
``O_EXCL``, under a lock) names the cluster's state directory, and the state directory's
``network.json`` names the index. A cluster keeps its index across restarts (what
``network.json`` recorded is tried first); a claim whose owner directory is gone, or
whose ``network.json`` names another index, is stale and taken over. Indexes whose /24s
overlap a route of the host are never picked. Without root the claims live in the
user's cache directory (``~/.cache/olmtool/networks``).

>>> network = claim_network(state_dir)       # ClusterNetwork(index=1, ...)
>>> network.service_cidr, network.apiserver_service_ip
('10.96.1.0/24', '10.96.1.1')
>>> release_network(state_dir)
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from olmtool.errors import OlmtoolError

NETWORK_FILE = "network.json"
RUN_CLAIMS = Path("/run/olmtool/networks")
MAX_INDEX = 254
MAX_NODES = 8  # nodes of one cluster: the Pod /24 split in eighths at most
Network = ipaddress.IPv4Network


class NetworkError(OlmtoolError):
    """No cluster network could be claimed."""


@dataclass(frozen=True)
class Route:
    """A destination of the host's routing table and the device it goes through."""

    network: Network
    device: str = ""


@dataclass(frozen=True)
class ClusterNetwork:
    """The address ranges of cluster ``index``; the others default from it."""

    index: int
    pod_cidr: str = ""
    service_cidr: str = ""
    bridge: str = ""  # the host's end of the link to the node (a veth)

    def __post_init__(self) -> None:
        if not 1 <= self.index <= MAX_INDEX:
            raise ValueError(f"network index {self.index} is not in 1..{MAX_INDEX}")
        defaults = {
            "pod_cidr": f"10.244.{self.index}.0/24",
            "service_cidr": f"10.96.{self.index}.0/24",
            "bridge": f"olmtool{self.index}",
        }
        for name, value in defaults.items():
            if not getattr(self, name):
                object.__setattr__(self, name, value)

    @property
    def gateway(self) -> str:
        """The Pod bridge's address, the Pods' default route."""
        return str(Network(self.pod_cidr).network_address + 1)

    @property
    def apiserver_service_ip(self) -> str:
        """The ``kubernetes`` Service's ClusterIP: the first address of the range."""
        return str(Network(self.service_cidr).network_address + 1)

    @property
    def link_cidr(self) -> str:
        """The link between the host and a real node's network namespace."""
        return f"10.243.{self.index}.0/30"

    @property
    def host_address(self) -> str:
        """The host's end of the link: the node's InternalIP (its kubelet listens there)
        and where Pods reach the apiserver and the cluster DNS."""
        return str(Network(self.link_cidr).network_address + 1)

    @property
    def node_netns_address(self) -> str:
        """The node network namespace's end of the link: the host routes Pod and Service
        addresses to it."""
        return str(Network(self.link_cidr).network_address + 2)

    @property
    def netns(self) -> str:
        """The real node's network namespace (kube-proxy's rules and the Pod bridge)."""
        return f"olmtool-{self.index}"

    @property
    def dns_ip(self) -> str:
        """The cluster DNS Service's ClusterIP (kubeadm's ``.10``)."""
        return str(Network(self.service_cidr).network_address + 10)

    @property
    def links_cidr(self) -> str:
        """Where the links of all the cluster's nodes lie (a /30 each)."""
        return f"10.243.{self.index}.0/{32 - (4 * MAX_NODES - 1).bit_length()}"

    def node(self, ordinal: int, count: int) -> NodeNetwork:
        """The part of this network node ``ordinal`` (0-based) of ``count`` holds."""
        return NodeNetwork(self, ordinal, count)

    def owns_device(self, device: str) -> bool:
        """Whether ``device`` is the host's end of one of this cluster's node links."""
        return device == self.bridge or device.startswith(f"{self.bridge}n")

    def overlaps(self, routes: Iterable[Route]) -> bool:
        """Whether a host route uses these ranges; routes through this network's own
        links are left out (a link a cluster killed with SIGKILL left behind)."""
        mine = (Network(self.pod_cidr), Network(self.service_cidr), Network(self.links_cidr))
        return any(
            net.overlaps(route.network)
            for net in mine
            for route in routes
            if not self.owns_device(route.device)
        )


@dataclass(frozen=True)
class NodeNetwork:
    """One node's share of a cluster network, as a kind node has its own: a slice of
    the Pod range (the whole range for a one-node cluster; halves, quarters, eighths for
    more), a /30 link to the host (node ``k``'s at ``10.243.i.4k``) and a network
    namespace. The first node (``ordinal`` 0) keeps the names a one-node cluster always
    had and carries the Service range's route for the host."""

    cluster: ClusterNetwork
    ordinal: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_NODES or not 0 <= self.ordinal < self.count:
            raise ValueError(f"node {self.ordinal} of {self.count}: at most {MAX_NODES} nodes")

    @property
    def index(self) -> int:
        return self.cluster.index

    @property
    def primary(self) -> bool:
        return self.ordinal == 0

    @property
    def pod_cidr(self) -> str:
        """This node's Pods' addresses."""
        whole = Network(self.cluster.pod_cidr)
        bits = (self.count - 1).bit_length()
        return str(list(whole.subnets(prefixlen_diff=bits))[self.ordinal])

    @property
    def cluster_pod_cidr(self) -> str:
        """Every node's Pods: traffic within it is never masqueraded."""
        return self.cluster.pod_cidr

    @property
    def service_cidr(self) -> str:
        return self.cluster.service_cidr

    @property
    def dns_ip(self) -> str:
        return self.cluster.dns_ip

    @property
    def gateway(self) -> str:
        """The Pod bridge's address on this node, its Pods' default route."""
        return str(Network(self.pod_cidr).network_address + 1)

    @property
    def link_cidr(self) -> str:
        base = Network(self.cluster.links_cidr).network_address + 4 * self.ordinal
        return f"{base}/30"

    @property
    def host_address(self) -> str:
        """The host's end of the node's link: the node's InternalIP (its kubelet
        listens there)."""
        return str(Network(self.link_cidr).network_address + 1)

    @property
    def node_netns_address(self) -> str:
        """The node namespace's end of the link, where the host routes its Pods."""
        return str(Network(self.link_cidr).network_address + 2)

    @property
    def netns(self) -> str:
        base = self.cluster.netns
        return base if self.primary else f"{base}-{self.ordinal + 1}"

    @property
    def bridge(self) -> str:
        """The host's end of the link (a veth; at most 15 characters)."""
        base = self.cluster.bridge
        return base if self.primary else f"{base}n{self.ordinal + 1}"

    @property
    def routed_cidrs(self) -> tuple[str, ...]:
        """What the host routes into this node's namespace: its Pods, and on the first
        node the Services (kube-proxy's rules there send them on to any node)."""
        return (self.pod_cidr, self.service_cidr) if self.primary else (self.pod_cidr,)


def default_claims_dir() -> Path:
    """``/run/olmtool/networks`` as root (gone at reboot, like the links), else the
    user's cache directory."""
    if os.geteuid() == 0:
        return RUN_CLAIMS
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "olmtool" / "networks"


def host_routes(path: Path = Path("/proc/net/route")) -> list[Route]:
    """The IPv4 destinations of the host's main routing table, default routes left out
    (they overlap everything and say nothing about which addresses are in use)."""
    routes = []
    try:
        lines = path.read_text().splitlines()[1:]
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        # little-endian hex, as the kernel prints them
        destination = ipaddress.IPv4Address(int(fields[1], 16).to_bytes(4, "little"))
        mask = ipaddress.IPv4Address(int(fields[7], 16).to_bytes(4, "little"))
        network = Network(f"{destination}/{mask}", strict=False)
        if network.prefixlen:
            routes.append(Route(network, fields[0]))
    return routes


def recorded_network(state_dir: Path) -> ClusterNetwork | None:
    """What ``state_dir/network.json`` says, or None."""
    try:
        data = json.loads((state_dir / NETWORK_FILE).read_text())
        return ClusterNetwork(**data)
    except (OSError, ValueError, TypeError):
        return None


def claim_network(
    state_dir: Path,
    *,
    claims_dir: Path | None = None,
    routes: Iterable[Route] | None = None,
) -> ClusterNetwork:
    """The cluster network of ``state_dir``: the one it holds, the one it recorded if that
    is free, else the lowest free index whose ranges no host route overlaps. Recorded in
    ``state_dir/network.json``. Raises :class:`NetworkError` when every index is taken."""
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    claims = claims_dir or default_claims_dir()
    host = list(host_routes() if routes is None else routes)
    recorded = recorded_network(state_dir)
    with _locked(claims):
        if recorded is not None and _owner(claims, recorded.index) == state_dir:
            return recorded  # still ours (its link's routes are among the host's routes)
        preferred = [recorded.index] if recorded is not None else []
        for index in [*preferred, *range(1, MAX_INDEX + 1)]:
            network = ClusterNetwork(index)
            if network.overlaps(host) or not _take(claims, index, state_dir):
                continue
            _write_record(state_dir, network)
            return network
    raise NetworkError(
        f"no free cluster network: indexes 1-{MAX_INDEX} are claimed in {claims} or "
        "overlap host routes (stop a cluster with `olmtool cluster down`)"
    )


def release_network(state_dir: Path, *, claims_dir: Path | None = None) -> None:
    """Give up the claim of ``state_dir`` (``network.json`` stays: the next claim tries
    the same index first)."""
    state_dir = Path(state_dir).resolve()
    recorded = recorded_network(state_dir)
    if recorded is None:
        return
    claims = claims_dir or default_claims_dir()
    with _locked(claims):
        if _owner(claims, recorded.index) == state_dir:
            (claims / str(recorded.index)).unlink(missing_ok=True)


def holds(state_dir: Path, index: int, *, claims_dir: Path | None = None) -> bool:
    """Whether the claim of network ``index`` names ``state_dir``: only then may the
    cluster there tear that network down (another cluster may have taken the index over
    once this one's claim went stale)."""
    claims = claims_dir or default_claims_dir()
    return _owner(claims, index) == Path(state_dir).resolve()


@contextlib.contextmanager
def _locked(claims: Path) -> Iterator[None]:
    """Claims change under one machine-wide lock, so a stale claim is taken over once."""
    claims.mkdir(parents=True, exist_ok=True)
    with (claims / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _owner(claims: Path, index: int) -> Path | None:
    try:
        return Path((claims / str(index)).read_text().strip())
    except OSError:
        return None


def _stale(owner: Path | None, index: int) -> bool:
    """A claim nobody can hold any more: unreadable, its owner directory gone, or the
    owner's record names another index (it moved on)."""
    if owner is None or not owner.is_dir():
        return True
    recorded = recorded_network(owner)
    return recorded is None or recorded.index != index


def _take(claims: Path, index: int, state_dir: Path) -> bool:
    path = claims / str(index)
    owner = _owner(claims, index)
    if path.exists():
        if owner == state_dir:
            return True
        if not _stale(owner, index):
            return False
        path.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{state_dir}\n")
    return True


def _write_record(state_dir: Path, network: ClusterNetwork) -> None:
    path = state_dir / NETWORK_FILE
    tmp = path.with_name(f".{NETWORK_FILE}.tmp")
    tmp.write_text(json.dumps(asdict(network), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
