"""Pod networking without network namespaces: a loopback IP per Pod and per-Pod hosts files.

Every address in 127.0.0.0/8 is local on Linux, so each Pod gets its own ``127.x.y.z``
(never in 127.0.0.0/24, so never 127.0.0.1), reported as ``status.podIP``. Addresses are
derived from a hash of ``namespace/name`` (probing on collision) and persisted in the
agent's state directory, so a Pod keeps its address when the agent restarts, and a Pod
re-created under the same name (a StatefulSet member) usually gets the same one back.

All Pods share the host's network stack: a process that binds ``0.0.0.0:8080`` takes
port 8080 on every Pod IP. Servers should bind their Pod IP (``status.podIP`` through the
downward API) when several Pods serve the same port. Service ClusterIPs are *not*
routable (there is no kube-proxy); Pods reach each other by Pod IP or, for Pods behind a
headless Service, by hostname through the per-Pod ``/etc/hosts`` this module writes
(``<hostname>.<subdomain>.<namespace>.svc[.cluster.local]``; ``<hostname>.<subdomain>``
within the namespace).
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
# 127.1.0.1 - 127.254.255.254: clear of 127.0.0.0/24 where the host's own services live.
_FIRST = int(ipaddress.IPv4Address("127.1.0.0"))
_SIZE = 254 * 256 * 254  # second octet 1-254, third 0-255, fourth 1-254


class AddressesExhausted(InternalError):
    """Every loopback address of the pool is taken."""


class IPAllocator:
    """Stable loopback addresses for Pods, keyed ``namespace/name``, persisted as JSON."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._addresses: dict[str, str] = {}
        if path.is_file():
            try:
                loaded = json.loads(path.read_text())
                self._addresses = {str(k): str(v) for k, v in loaded.items() if _valid(str(v))}
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
            taken = set(self._addresses.values())
            if len(taken) >= _SIZE:
                raise AddressesExhausted("no free loopback address for a Pod")
            offset = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % _SIZE
            while True:
                address = _address(offset)
                if address not in taken:
                    break
                offset = (offset + 1) % _SIZE
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


def _address(offset: int) -> str:
    """The ``offset``-th address of the pool, skipping .0 and .255 in the last octet."""
    second, rest = divmod(offset, 256 * 254)
    third, fourth = divmod(rest, 254)
    return f"127.{second + 1}.{third}.{fourth + 1}"


def _valid(address: str) -> bool:
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return ip.is_loopback and int(ip) >= _FIRST


# -- hosts files ------------------------------------------------------------------------


@dataclass(frozen=True)
class HostEntry:
    """What the hosts files need to know about one Pod."""

    namespace: str
    name: str
    ip: str
    hostname: str
    subdomain: str | None = None


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
) -> str:
    """A Pod's ``/etc/hosts``: localhost, the Pod itself, ``hostAliases``, then the Pods on
    this node that sit behind a headless Service: those of the Pod's namespace as
    ``hostname.subdomain.ns.svc[.cluster.local]`` and ``hostname.subdomain``, those of
    other namespaces by their fully qualified names only (as cluster DNS resolves them)."""
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
    for title, entries in (
        ("# Pods of headless Services in this namespace, on this node.", same),
        ("# Pods of headless Services in other namespaces, on this node.", other),
    ):
        if entries:
            lines.extend(["", title, *entries])
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
