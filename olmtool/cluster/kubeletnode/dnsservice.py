"""The ``kube-dns`` Service and Endpoints that send Pods' lookups to the cluster DNS."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable

from olmtool.cluster.kubeletnode.dnsrecords import as_dict, as_list
from olmtool.cluster.network import ClusterNetwork
from olmtool.kube import JSON, Kube, status_of

log = logging.getLogger("olmtool.cluster.kubeletnode.dns")
DNS_NAMESPACE = "kube-system"
DNS_NAME = "kube-dns"
DNS_LABELS = {"k8s-app": "kube-dns", "kubernetes.io/name": "KubeDNS"}
DNS_PORTS = (("dns", "UDP"), ("dns-tcp", "TCP"))


# --- the kube-dns Service -----------------------------------------------------------

SERVICES = f"/api/v1/namespaces/{DNS_NAMESPACE}/services"
ENDPOINTS = f"/api/v1/namespaces/{DNS_NAMESPACE}/endpoints"


def dns_service(network: ClusterNetwork) -> JSON:
    """``kube-system/kube-dns`` at the kubelet's ``clusterDNS``; no selector: its
    Endpoints are ours (:func:`dns_endpoints`), not the endpoints controller's."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": DNS_NAME, "namespace": DNS_NAMESPACE, "labels": dict(DNS_LABELS)},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": network.dns_ip,
            "ports": [
                {"name": name, "port": 53, "protocol": protocol, "targetPort": 53}
                for name, protocol in DNS_PORTS
            ],
        },
    }


def dns_endpoints(network: ClusterNetwork) -> JSON:
    """The address dnsmasq listens on: the host's end of the node's link."""
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": DNS_NAME, "namespace": DNS_NAMESPACE, "labels": dict(DNS_LABELS)},
        "subsets": [
            {
                "addresses": [{"ip": network.host_address}],
                "ports": [
                    {"name": name, "port": 53, "protocol": protocol} for name, protocol in DNS_PORTS
                ],
            }
        ],
    }


def _labelled(obj: JSON) -> bool:
    labels = as_dict(as_dict(obj.get("metadata")).get("labels"))
    return all(labels.get(key) == value for key, value in DNS_LABELS.items())


def _service_ports(spec: JSON) -> list[tuple[str, str, str, str]]:
    """Ports as compared (text: odd values must not break sorting); the server fills
    in defaults (protocol, targetPort)."""
    ports = []
    for port in as_list(spec.get("ports")):
        port = as_dict(port)
        number = port.get("port")
        target = port.get("targetPort", number)
        ports.append(
            (str(port.get("name")), str(port.get("protocol") or "TCP"), str(number), str(target))
        )
    return sorted(ports)


def _service_fixable(existing: JSON, desired: JSON) -> bool:
    """Whether a PUT can make ``existing`` the Service we want: ClusterIPs and a change
    of type need a new object."""
    spec, want = as_dict(existing.get("spec")), desired["spec"]
    return spec.get("clusterIP") == want["clusterIP"] and spec.get("type") == want["type"]


def _service_matches(existing: JSON, desired: JSON) -> bool:
    spec, want = as_dict(existing.get("spec")), desired["spec"]
    return (
        _labelled(existing)
        and _service_fixable(existing, desired)
        and not spec.get("selector")
        and _service_ports(spec) == _service_ports(want)
    )


def _service_update(existing: JSON, desired: JSON) -> JSON:
    updated = copy.deepcopy(existing)
    meta = updated.setdefault("metadata", {})
    meta["labels"] = {**as_dict(meta.get("labels")), **DNS_LABELS}
    spec = updated.setdefault("spec", {})
    spec.pop("selector", None)
    spec["ports"] = desired["spec"]["ports"]
    return updated


def _subsets(obj: JSON) -> list[tuple[list[str], list[str], list[tuple[str, str, str]]]]:
    """Endpoints subsets as compared: addresses and ports as sorted text."""
    found = []
    for subset in as_list(obj.get("subsets")):
        subset = as_dict(subset)
        ready = sorted(str(as_dict(a).get("ip")) for a in as_list(subset.get("addresses")))
        waiting = sorted(
            str(as_dict(a).get("ip")) for a in as_list(subset.get("notReadyAddresses"))
        )
        ports = sorted(
            (str(p.get("name")), str(p.get("protocol") or "TCP"), str(p.get("port")))
            for p in map(as_dict, as_list(subset.get("ports")))
        )
        found.append((ready, waiting, ports))
    return found


def _endpoints_matches(existing: JSON, desired: JSON) -> bool:
    return _labelled(existing) and _subsets(existing) == _subsets(desired)


def _endpoints_update(existing: JSON, desired: JSON) -> JSON:
    updated = copy.deepcopy(existing)
    meta = updated.setdefault("metadata", {})
    meta["labels"] = {**as_dict(meta.get("labels")), **DNS_LABELS}
    updated["subsets"] = desired["subsets"]
    return updated


def _ensure(
    kube: Kube,
    collection: str,
    desired: JSON,
    matches: Callable[[JSON, JSON], bool],
    update: Callable[[JSON, JSON], JSON],
    fixable: Callable[[JSON, JSON], bool] = lambda existing, desired: True,
) -> str | None:
    """``desired`` in ``collection``: created, replaced (PUT, with the resourceVersion
    read: a concurrent change fails it) or made anew when a PUT cannot fix it. What was
    done, or None when it already matched."""
    path = f"{collection}/{desired['metadata']['name']}"
    existing = kube.get_or_none(path)
    if existing is None:
        try:
            kube.create(collection, desired)
            return "created"
        except Exception as exc:
            if status_of(exc) != 409:
                raise
            existing = kube.get(path)  # created meanwhile (an earlier run of ours)
    if matches(existing, desired):
        return None
    if not fixable(existing, desired):
        kube.delete(path)
        kube.create(collection, desired)
        return "re-created"
    kube.put(path, update(existing, desired))
    return "replaced"


def ensure_dns_service(
    kube: Kube,
    network: ClusterNetwork,
    *,
    attempts: int = 5,
    delay: float = 0.5,
    wait: Callable[[float], object] = time.sleep,
) -> list[str]:
    """The ``kube-dns`` Service and Endpoints as :func:`dns_service` and
    :func:`dns_endpoints` say, trying ``attempts`` times (the apiserver may be starting,
    or kube-system not there yet); what was done, e.g. ``["created Service"]``."""
    for attempt in range(1, attempts + 1):
        try:
            done = []
            service = _ensure(
                kube, SERVICES, dns_service(network), _service_matches, _service_update,
                _service_fixable,
            )  # fmt: skip
            if service:
                done.append(f"{service} Service")
            endpoints = _ensure(
                kube, ENDPOINTS, dns_endpoints(network), _endpoints_matches, _endpoints_update
            )
            if endpoints:
                done.append(f"{endpoints} Endpoints")
            for what in done:
                log.info("%s %s/%s", what, DNS_NAMESPACE, DNS_NAME)
            return done
        except Exception as exc:
            if attempt >= attempts:
                raise
            log.info("kube-dns not ensured yet (%s); trying again", _short(exc))
            wait(delay)
            delay = min(delay * 2, 5.0)
    return []


def _short(exc: BaseException) -> str:
    status = status_of(exc)
    return f"{status} {getattr(exc, 'reason', '')}".strip() if status else f"{exc}"


# --- the loop -----------------------------------------------------------------------
