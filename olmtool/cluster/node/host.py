"""What a Pod worker needs from the node it runs on, and nothing else.

The :class:`~.agent.NodeAgent` provides :class:`PodHost`; a
:class:`~.worker.PodWorker` reaches the agent only through it, so a test can run a
worker against a fake host, without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from olmtool.cluster.node.kube import PodApi
    from olmtool.cluster.node.runtime import ResolvedImage
    from olmtool.cluster.node.worker import PodWorker

JSON = dict[str, Any]


@dataclass(frozen=True)
class NodeSettings:
    """Facts about the node, fixed once the agent started."""

    state_dir: Path
    host_ip: str = "127.0.0.1"
    isolated: bool = False  # containers get their own mount and UTS namespaces
    backoff_base: float = 10.0  # the first crash-loop back-off
    allocatable: Mapping[str, str] = field(default_factory=dict)
    ca_bytes: bytes = b""  # the cluster CA, for the service-account directory
    service_env: Mapping[str, str] = field(default_factory=dict)  # KUBERNETES_SERVICE_*
    # (the Services of the Pod's namespace come from PodHost.service_links)


class PodHost(Protocol):
    """The node, as a Pod worker sees it."""

    settings: NodeSettings
    api: PodApi  # the apiserver: look-ups, tokens, the Pod's status and deletion

    def resolve_image(self, image: str, pull_policy: str | None) -> ResolvedImage:
        """How to run ``image`` here; raises ``ImageError`` when it cannot be."""
        ...

    def allocate_ip(self, namespace: str, name: str) -> str: ...

    def sandbox(self, worker: PodWorker) -> str | None:
        """The worker's Pod has its IP: give it its network namespace (made once) and
        forward its host ports; the namespace's path, None when Pods share the host's
        network. Raises ``SandboxError``."""
        ...

    def service_links(self, namespace: str, enable_links: bool) -> Mapping[str, str]:
        """The Service variables of a container starting now in ``namespace``."""
        ...

    def hosts_changed(self, worker: PodWorker) -> None:
        """The worker's Pod has its IP: rewrite the node's hosts files."""
        ...

    def release(self, worker: PodWorker) -> None:
        """The worker's Pod is gone: free its network namespace, host ports and IP (unless
        a successor holds it) and drop it from the hosts files."""
        ...

    def record_process(self, pid: int, info: Mapping[str, str]) -> None:
        """Remember a container process, so a restarted agent can kill what is left."""
        ...

    def forget_process(self, pid: int) -> None: ...

    def event(
        self, pod: JSON, kind: str, reason: str, message: str, container: str | None = None
    ) -> None:
        """Record an Event about ``pod`` (best effort, never blocks)."""
        ...

    def worker_done(self, worker: PodWorker) -> None:
        """The worker's thread ends."""
        ...
