"""The cluster DNS's records: Services and endpoints as a dnsmasq hosts file (pure)."""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Iterable
from typing import Any

from olmtool.cluster.kubeletnode.kubelet import CLUSTER_DOMAIN
from olmtool.kube import JSON

HEADER = (
    "# the cluster's Services and endpoint hostnames, for dnsmasq (addn-hosts);\n"
    "# written by olmtool.cluster.kubeletnode.dns on every change\n"
)
# names Kubernetes accepts for namespaces, Services and endpoint hostnames (DNS labels);
# anything else would make a broken or misleading hosts line
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


# --- the records --------------------------------------------------------------------


def hosts_text(
    services: Iterable[JSON], endpoints: Iterable[JSON], domain: str = CLUSTER_DOMAIN
) -> str:
    """The dnsmasq ``addn-hosts`` file for these Services and Endpoints: one
    ``<ip> <name>`` line per record, sorted by name then address, duplicates removed.
    Objects missing fields (or with odd ones) give fewer lines, never an error."""
    by_key = {key: ep for ep in endpoints if (key := _key(ep)) is not None}
    records: set[tuple[str, str]] = set()
    for service in services:
        key = _key(service)
        spec = as_dict(service.get("spec")) if key is not None else {}
        if key is None or spec.get("type") == "ExternalName":
            continue  # ExternalName is a CNAME, which a hosts file cannot say
        namespace, name = key
        fqdn = f"{name}.{namespace}.svc.{domain}"
        published = spec.get("publishNotReadyAddresses") is True
        addresses = _endpoint_addresses(by_key.get(key), not_ready=published)
        if _headless(spec):
            records.update((ip, fqdn) for ip, _hostname in addresses)
        else:
            records.update((ip, fqdn) for ip in _cluster_ips(spec))
        records.update((ip, f"{hostname}.{fqdn}") for ip, hostname in addresses if hostname)
    lines = [f"{ip} {name}" for ip, name in sorted(records, key=_record_order)]
    return HEADER + "".join(f"{line}\n" for line in lines)


def as_dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _label(value: object) -> str | None:
    return value if isinstance(value, str) and LABEL.fullmatch(value) else None


def _key(obj: object) -> tuple[str, str] | None:
    """(namespace, name) of an API object, when both are valid DNS labels."""
    meta = as_dict(as_dict(obj).get("metadata"))
    namespace, name = _label(meta.get("namespace")), _label(meta.get("name"))
    return (namespace, name) if namespace and name else None


def valid_ip(value: object) -> str | None:
    """``value`` as a normalised IP address, or None."""
    if not isinstance(value, str):
        return None
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def _headless(spec: JSON) -> bool:
    return spec.get("clusterIP") == "None" or as_list(spec.get("clusterIPs"))[:1] == ["None"]


def _cluster_ips(spec: JSON) -> list[str]:
    """Every family's ClusterIP (``clusterIPs``, since 1.20), else ``clusterIP``."""
    candidates = as_list(spec.get("clusterIPs")) or [spec.get("clusterIP")]
    return [ip for value in candidates if (ip := valid_ip(value)) is not None]


def _endpoint_addresses(endpoints: JSON | None, *, not_ready: bool) -> list[tuple[str, str]]:
    """(ip, hostname or "") of the ready addresses, and of the not-ready ones too when
    ``not_ready`` (a Service with ``publishNotReadyAddresses``)."""
    fields = ("addresses", "notReadyAddresses") if not_ready else ("addresses",)
    found = []
    for subset in as_list(as_dict(endpoints).get("subsets")):
        for field in fields:
            for address in as_list(as_dict(subset).get(field)):
                address = as_dict(address)
                ip = valid_ip(address.get("ip"))
                if ip is not None:
                    found.append((ip, _label(address.get("hostname")) or ""))
    return found


def _record_order(record: tuple[str, str]) -> tuple[str, int, bytes]:
    ip = ipaddress.ip_address(record[0])
    return record[1], ip.version, ip.packed


class Objects:
    """The current objects of one kind by (namespace, name), as a watch reports them
    (its threads write, the main loop reads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, str], JSON] = {}

    def sync(self, items: list[JSON]) -> None:
        """A (re)list: exactly these objects."""
        fresh = {key: obj for obj in items if (key := _meta_key(obj)) is not None}
        with self._lock:
            self._items = fresh

    def event(self, kind: str, obj: JSON) -> None:
        key = _meta_key(obj)
        if key is None:
            return
        with self._lock:
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = obj

    def values(self) -> list[JSON]:
        with self._lock:
            return list(self._items.values())


def _meta_key(obj: object) -> tuple[str, str] | None:
    """(namespace, name) as given, for bookkeeping (:func:`hosts_text` validates)."""
    meta = as_dict(as_dict(obj).get("metadata"))
    namespace, name = meta.get("namespace"), meta.get("name")
    return (namespace, name) if isinstance(namespace, str) and isinstance(name, str) else None
