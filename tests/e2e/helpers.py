"""Shared helpers of the end-to-end tests against the local cluster (a real node)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from olmtool.cluster import lifecycle
from olmtool.cluster.controlplane import ControlPlane
from olmtool.kube import Kube

T = TypeVar("T")
JSON = dict[str, Any]
NODE = "olmtool-node"
TIMINGS: dict[str, float] = {}


@dataclass
class Cluster:
    plane: ControlPlane
    kube: Kube
    state_dir: Path
    registry: str | None  # the cluster's image registry (host:port)
    local: lifecycle.Cluster  # what `cluster up` recorded
    root: Path  # the clusters folder it lives in (lifecycle.up's root=)

    @property
    def name(self) -> str:
        return self.local.name

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig


def wait_for(check: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # the object may not exist yet
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")


def node_ready(kube: Kube, name: str = NODE) -> bool:
    node = kube.get(f"/api/v1/nodes/{name}")
    conditions = {c["type"]: c["status"] for c in node["status"].get("conditions") or []}
    return conditions.get("Ready") == "True" and not node["spec"].get("taints")


def service_account_ready(kube: Kube, namespace: str, name: str) -> bool:
    """Whether the service account exists with its token Secret (Pods need it)."""
    account = kube.get_or_none(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}")
    return bool(account and account.get("secrets"))


def established(crd: JSON) -> bool:
    """Whether a CustomResourceDefinition (as the apiserver returns it) is Established."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
