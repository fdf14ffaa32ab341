"""The Node object of the node agent in the API: registration, status, heartbeat, Lease.

The agent creates (or adopts) its Node, posts capacity, addresses, node info and the
kubelet API's port once, then heartbeats: conditions with kubelet's reasons, the taints
the apiserver adds cleared, and a Lease in ``kube-node-lease`` renewed, so the
scheduler binds Pods to it and nothing evicts them.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from olmtool import __version__
from olmtool.cluster.assets import KUBERNETES_VERSION
from olmtool.cluster.node.kube import STRATEGIC_PATCH, Kube, now, now_micro, status_of

JSON = dict[str, Any]
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
MAX_PODS = 110
NODE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def capacity(state_dir: Path) -> dict[str, str]:
    """The node's capacity: this machine's CPUs and memory, the state dir's disk."""
    memory_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_kib = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    stat = os.statvfs(state_dir)
    return {
        "cpu": str(os.cpu_count() or 1),
        "memory": f"{memory_kib}Ki",
        "pods": str(MAX_PODS),
        "ephemeral-storage": f"{stat.f_blocks * stat.f_frsize // 1024}Ki",
    }


class NodeObject:
    """The agent's Node ``name`` and its Lease, as the apiserver holds them."""

    def __init__(
        self,
        kube: Kube,
        name: str,
        host_ip: str,
        allocatable: Mapping[str, str],
        kubelet_port: int = 0,
    ) -> None:
        self.kube = kube
        self.name = name
        self.host_ip = host_ip
        self.allocatable = dict(allocatable)
        self.kubelet_port = kubelet_port

    def heartbeat(self) -> None:
        """Post Ready, clear the not-ready taints, renew the Lease."""
        node = self._post_status()
        self._clear_taints(node)
        self._renew_lease()

    def mark_not_ready(self) -> None:
        self._post_status(ready=False)

    def _node_info(self) -> JSON:
        def read(path: str) -> str:
            try:
                return Path(path).read_text().strip()
            except OSError:
                return ""

        os_image = "Linux"
        for line in read("/etc/os-release").splitlines():
            if line.startswith("PRETTY_NAME="):
                os_image = line.partition("=")[2].strip('"')
        machine = platform.machine()
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
        return {
            "machineID": read("/etc/machine-id"),
            "systemUUID": read("/sys/class/dmi/id/product_uuid") or read("/etc/machine-id"),
            "bootID": read("/proc/sys/kernel/random/boot_id"),
            "kernelVersion": platform.release(),
            "osImage": os_image,
            "containerRuntimeVersion": f"olmtool://{__version__}",
            "kubeletVersion": f"v{KUBERNETES_VERSION}",
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": arch,
        }

    def _conditions(self, ready: bool = True) -> list[JSON]:
        stamp = now()

        def cond(kind: str, status: bool, reason: str, message: str) -> JSON:
            return {
                "type": kind,
                "status": "True" if status else "False",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": stamp,
            }

        return [
            cond(
                "MemoryPressure",
                False,
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            cond("DiskPressure", False, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond(
                "PIDPressure",
                False,
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
            cond(
                "Ready",
                ready,
                "KubeletReady" if ready else "KubeletNotReady",
                "olmtool node agent is posting ready status"
                if ready
                else "olmtool node agent stopped",
            ),
        ]

    def register(self) -> None:
        """Create (or adopt) the Node, clear the taints the apiserver adds, post status."""
        machine = platform.machine()
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch,
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": arch,
            "node.olmtool.dev/agent": "true",
        }
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "spec": {},
        }
        try:
            node = self.kube.create("/api/v1/nodes", body)
        except Exception as exc:
            if status_of(exc) != 409:
                raise
            node = self.kube.patch(f"/api/v1/nodes/{self.name}", {"metadata": {"labels": labels}})
        self._post_status(first=True)
        self._clear_taints(node)
        self._renew_lease()

    def _post_status(self, first: bool = False, ready: bool = True) -> JSON:
        status: JSON = {"conditions": self._conditions(ready)}
        if first:
            status.update(
                capacity=self.allocatable,
                allocatable=self.allocatable,
                addresses=[
                    {"type": "InternalIP", "address": self.host_ip},
                    {"type": "Hostname", "address": self.name},
                ],
                nodeInfo=self._node_info(),
                daemonEndpoints={"kubeletEndpoint": {"Port": self.kubelet_port}},
            )
        path = f"/api/v1/nodes/{self.name}/status"
        node = self.kube.patch(path, {"status": status}, STRATEGIC_PATCH)
        # lastTransitionTime: set when the status changes, kept otherwise
        previous = {c["type"]: c for c in (node.get("status") or {}).get("conditions") or []}
        fix = []
        for cond in status["conditions"]:
            old = previous.get(cond["type"]) or {}
            if not old.get("lastTransitionTime"):
                fix.append({"type": cond["type"], "lastTransitionTime": now()})
        if fix:
            node = self.kube.patch(path, {"status": {"conditions": fix}}, STRATEGIC_PATCH)
        return node

    def _clear_taints(self, node: JSON) -> None:
        taints = (node.get("spec") or {}).get("taints") or []
        keep = [t for t in taints if t.get("key") not in NODE_TAINTS]
        if len(keep) != len(taints):
            self.kube.patch(f"/api/v1/nodes/{self.name}", {"spec": {"taints": keep or None}})

    def _renew_lease(self) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
        spec = {
            "holderIdentity": self.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": now_micro(),
        }
        try:
            self.kube.patch(f"{path}/{self.name}", {"spec": spec})
        except Exception as exc:
            if status_of(exc) != 404:
                raise
            node = self.kube.get(f"/api/v1/nodes/{self.name}")
            owner = {
                "apiVersion": "v1",
                "kind": "Node",
                "name": self.name,
                "uid": node["metadata"]["uid"],
            }
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "ownerReferences": [owner]},
                "spec": spec,
            }
            self.kube.create(path, lease)
