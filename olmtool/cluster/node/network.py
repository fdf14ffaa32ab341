"""Pod addresses and per-Pod hosts files (the pure parts of Pod networking).

How Pods are wired depends on what the machine allows (:mod:`.netns` does the wiring):

* **Network namespaces** (root, ``ip`` and ``nsenter``): each Pod has its own network
  stack, an address from its cluster's Pod network (``10.244.<i>.0/24``, see
  :mod:`olmtool.cluster.network`) on a veth attached to the cluster's bridge, so two
  Pods may both bind ``0.0.0.0:8080`` and reach each other by Pod IP. Service ClusterIPs
  (``10.96.<i>.0/24``) answer through the node agent's proxy (:mod:`.services`).
* **Shared host network** (the fallback: not root, no ``ip``): every Pod gets a loopback
  address, from ``127.<i>.0.0/16`` for cluster network ``i`` (or, for an agent given no
  cluster network, anywhere in 127.1.0.0-127.254.255.255), and all Pods share the host's
  network stack: a process binding ``0.0.0.0:8080`` takes port 8080 on every Pod IP, so
  servers should bind ``status.podIP``; ClusterIPs do not answer.

Addresses are derived from a hash of ``namespace/name`` (probing on collision) and
persisted in the agent's state directory, so a Pod keeps its address when the agent
restarts, and a Pod re-created under the same name (a StatefulSet member) usually gets
the same one back.

Each Pod's ``/etc/hosts`` (bind-mounted, rewritten in place) resolves the Pod's own
hostname, the node's Pods behind headless Services
(``<hostname>.<subdomain>.<namespace>.svc[.cluster.local]``; ``<hostname>.<subdomain>``
within the namespace) and every Service with a ClusterIP (``name.ns``, ``name.ns.svc``,
``name.ns.svc.cluster.local``; plain ``name`` within the namespace): there is no
cluster DNS.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import InternalError

CLUSTER_DOMAIN = "cluster.local"
MAX_HOSTNAME = 63


class AddressesExhausted(InternalError):
    """Every address of the pool is taken."""


@dataclass(frozen=True)
class AddressPool:
    """``blocks`` consecutive /24s from ``base``, each offering last octets 1-254
    (never .0 or .255, which some programs take for network or broadcast addresses),
    less the ``reserved`` addresses (a gateway)."""

    base: int
    blocks: int
    reserved: frozenset[str] = frozenset()

    @classmethod
    def of(cls, cidr: str, reserved: Iterable[str] = ()) -> AddressPool:
        network = ipaddress.IPv4Network(cidr)
        if network.prefixlen > 24:
            raise ValueError(f"{cidr}: a Pod network must be a /24 or larger")
        return cls(int(network.network_address), network.num_addresses // 256, frozenset(reserved))

    @property
    def size(self) -> int:
        return self.blocks * 254

    def address(self, offset: int) -> str:
        block, last = divmod(offset % self.size, 254)
        return str(ipaddress.IPv4Address(self.base + block * 256 + last + 1))

    def __contains__(self, address: object) -> bool:
        try:
            value = int(ipaddress.IPv4Address(str(address)))
        except ValueError:
            return False
        inside = self.base <= value < self.base + self.blocks * 256
        return inside and 1 <= value % 256 <= 254 and str(address) not in self.reserved


# 127.1.0.1 - 127.254.255.254: clear of 127.0.0.0/24 where the host's own services live.
# For an agent without a cluster network (each cluster network has a pool of its own).
LOOPBACK_POOL = AddressPool(int(ipaddress.IPv4Address("127.1.0.0")), 254 * 256)


class IPAllocator:
    """Stable addresses from ``pool`` for Pods, keyed ``namespace/name``, persisted as
    JSON (addresses outside the pool, from another network, are dropped on load)."""

    def __init__(self, path: Path, pool: AddressPool = LOOPBACK_POOL) -> None:
        self.path = path
        self.pool = pool
        self._lock = threading.Lock()
        self._addresses: dict[str, str] = {}
        if path.is_file():
            try:
                loaded = json.loads(path.read_text())
                self._addresses = {str(k): str(v) for k, v in loaded.items() if str(v) in pool}
            except (ValueError, AttributeError):
                self._addresses = {}

    def get(self, namespace: str, name: str) -> str | None:
        with self._lock:
            return self._addresses.get(f"{namespace}/{name}")

    def allocate(self, namespace: str, name: str) -> str:
        """The Pod's address: the one it had, or a new one (saved before returning)."""
        key = f"{namespace}/{name}"
        with self._lock:
            if key in self._addresses:
                return self._addresses[key]
            taken = set(self._addresses.values()) | self.pool.reserved
            if len(taken) >= self.pool.size:
                raise AddressesExhausted(f"no free address for a Pod in {self.pool}")
            offset = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
            while (address := self.pool.address(offset)) in taken:
                offset += 1
            self._addresses[key] = address
            self._save()
            return address

    def release(self, namespace: str, name: str) -> None:
        with self._lock:
            if self._addresses.pop(f"{namespace}/{name}", None) is not None:
                self._save()

    def all(self) -> dict[str, str]:
        with self._lock:
            return dict(self._addresses)

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(self._addresses, indent=1, sort_keys=True))
        os.replace(tmp, self.path)


# -- hosts files ------------------------------------------------------------------------


@dataclass(frozen=True)
class HostEntry:
    """What the hosts files need to know about one Pod."""

    namespace: str
    name: str
    ip: str
    hostname: str
    subdomain: str | None = None


@dataclass(frozen=True)
class ServiceEntry:
    """A Service with a ClusterIP, as the hosts files name it."""

    namespace: str
    name: str
    cluster_ip: str

    def names(self, namespace: str, domain: str = CLUSTER_DOMAIN) -> list[str]:
        """Its names as seen from a Pod in ``namespace``, longest first (what cluster DNS
        resolves through the Pod's search path)."""
        base = f"{self.name}.{self.namespace}"
        names = [f"{base}.svc.{domain}", f"{base}.svc", base]
        return [*names, self.name] if namespace == self.namespace else names


def pod_hostname(pod: Mapping[str, object]) -> str:
    """``spec.hostname`` or the Pod name, cut to 63 characters as kubelet does."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    assert isinstance(spec, Mapping) and isinstance(meta, Mapping)
    hostname = str(spec.get("hostname") or meta.get("name") or "pod")
    return hostname[:MAX_HOSTNAME].rstrip("-.") or "pod"


def host_entry(pod: Mapping[str, object], ip: str) -> HostEntry:
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    assert isinstance(spec, Mapping) and isinstance(meta, Mapping)
    return HostEntry(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name")),
        ip=ip,
        hostname=pod_hostname(pod),
        subdomain=str(spec["subdomain"]) if spec.get("subdomain") else None,
    )


def qualified_names(entry: HostEntry, domain: str = CLUSTER_DOMAIN) -> list[str]:
    """The names of a Pod behind a headless Service, longest first."""
    if not entry.subdomain:
        return []
    base = f"{entry.hostname}.{entry.subdomain}.{entry.namespace}.svc"
    return [f"{base}.{domain}", base, f"{entry.hostname}.{entry.subdomain}"]


def render_hosts(
    own: HostEntry,
    peers: Iterable[HostEntry] = (),
    aliases: Iterable[Mapping[str, object]] = (),
    domain: str = CLUSTER_DOMAIN,
    services: Iterable[ServiceEntry] = (),
) -> str:
    """A Pod's ``/etc/hosts``: localhost, the Pod itself, ``hostAliases``, the Pods on
    this node that sit behind a headless Service (those of the Pod's namespace as
    ``hostname.subdomain.ns.svc[.cluster.local]`` and ``hostname.subdomain``, those of
    other namespaces by their fully qualified names only, as cluster DNS resolves them),
    then the ``services`` by :meth:`ServiceEntry.names`."""
    lines = [
        "# Kubernetes-managed hosts file (olmtool node agent).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    own_names = qualified_names(own, domain)
    own_line = [own_names[0]] if own_names else []
    own_line += [*own_names[1:], own.hostname]
    lines.append(f"{own.ip}\t{' '.join(dict.fromkeys(own_line))}")
    alias_lines = []
    for alias in aliases:
        names = [str(n) for n in (alias.get("hostnames") or []) if n]  # type: ignore[union-attr]
        if alias.get("ip") and names:
            alias_lines.append(f"{alias['ip']}\t{' '.join(names)}")
    if alias_lines:
        lines.append("")
        lines.append("# Entries added by HostAliases.")
        lines.extend(alias_lines)
    same: list[str] = []
    other: list[str] = []
    for peer in sorted(peers, key=lambda p: (p.namespace, p.subdomain or "", p.hostname, p.name)):
        if not peer.subdomain or (peer.namespace == own.namespace and peer.name == own.name):
            continue
        names = qualified_names(peer, domain)
        if peer.namespace == own.namespace:
            same.append(f"{peer.ip}\t{' '.join(names)}")
        else:
            other.append(f"{peer.ip}\t{' '.join(names[:2])}")
    same_services, other_services = _service_lines(services, own.namespace, domain)
    for title, entries in (
        ("# Pods of headless Services in this namespace, on this node.", same),
        ("# Pods of headless Services in other namespaces, on this node.", other),
        ("# Services in this namespace.", same_services),
        ("# Services in other namespaces.", other_services),
    ):
        if entries:
            lines.extend(["", title, *entries])
    return "\n".join(lines) + "\n"


def _service_lines(
    services: Iterable[ServiceEntry], namespace: str, domain: str
) -> tuple[list[str], list[str]]:
    same: list[str] = []
    other: list[str] = []
    for service in sorted(services, key=lambda s: (s.namespace, s.name)):
        line = f"{service.cluster_ip}\t{' '.join(service.names(namespace, domain))}"
        (same if service.namespace == namespace else other).append(line)
    return same, other


def render_resolv_conf(pod: Mapping[str, object], domain: str = CLUSTER_DOMAIN) -> str:
    """The ``/etc/resolv.conf`` of a Pod with its own network namespace: the search path
    and ``ndots`` of ``dnsPolicy: ClusterFirst`` plus the Pod's ``dnsConfig``, and no
    nameserver of its own, so a name missing from the hosts file fails at once instead of
    waiting for a server the Pod cannot reach (there is no cluster DNS)."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    assert isinstance(spec, Mapping) and isinstance(meta, Mapping)
    config = spec.get("dnsConfig") or {}
    assert isinstance(config, Mapping)
    namespace = str(meta.get("namespace") or "default")
    custom = spec.get("dnsPolicy") == "None"
    searches = [] if custom else [f"{namespace}.svc.{domain}", f"svc.{domain}", domain]
    searches += [str(s) for s in config.get("searches") or []]
    options = {} if custom else {"ndots": "5"}
    for option in config.get("options") or []:
        options[str(option["name"])] = option.get("value")
    lines = ["# Kubernetes-managed resolv.conf (olmtool node agent): names come from /etc/hosts."]
    lines += [f"nameserver {server}" for server in config.get("nameservers") or []]
    if searches:
        lines.append(f"search {' '.join(dict.fromkeys(searches))}")
    if options:
        words = [name if value is None else f"{name}:{value}" for name, value in options.items()]
        lines.append(f"options {' '.join(words)}")
    return "\n".join(lines) + "\n"


def write_in_place(path: Path, content: str) -> bool:
    """Rewrite ``path`` keeping its inode (bind mounts of it see the change); False if
    it already held ``content``."""
    try:
        if path.read_text() == content:
            return False
    except FileNotFoundError:
        pass
    with path.open("r+" if path.exists() else "w") as handle:
        handle.seek(0)
        handle.write(content)
        handle.truncate()
    return True
