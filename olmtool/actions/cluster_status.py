"""``cluster status`` (and ``kubeconfig``, ``registry``, ``kubectl``, ``logs``): what a
local cluster runs and how to reach it.

>>> cluster_status("ci").healthy
True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from olmtool.cluster import DEFAULT_NAME, ClusterError, ClusterStatus, find_kubectl, require_cluster
from olmtool.cluster import status as cluster_state


def cluster_status(name: str = DEFAULT_NAME) -> ClusterStatus:
    """Which components of ``name`` run, whether the apiserver answers and the node is
    Ready; ClusterError when there is no such cluster."""
    return cluster_state(name)


def cluster_kubeconfig(name: str = DEFAULT_NAME) -> Path:
    """The admin kubeconfig of the cluster ``name``."""
    return Path(require_cluster(name).kubeconfig)


def cluster_registry(name: str = DEFAULT_NAME) -> str:
    """The ``host:port`` of the cluster's image registry, where ``--push`` sends images
    (127.0.0.1:5000 unless ``up`` was given another ``--registry-port``)."""
    cluster = require_cluster(name)
    if not cluster.registry:
        raise ClusterError(
            f"cluster {name!r} runs no image registry (it was started with --no-registry)"
        )
    return cluster.registry


@dataclass(frozen=True)
class KubectlCommand:
    """The kubectl matching the local cluster's server and the kubeconfig it uses."""

    kubectl: Path
    kubeconfig: Path

    def argv(self, args: list[str]) -> list[str]:
        return [str(self.kubectl), *args]

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, "KUBECONFIG": str(self.kubeconfig)}


def cluster_kubectl(name: str = DEFAULT_NAME) -> KubectlCommand:
    """kubectl 1.20 from the control-plane binaries with the cluster's admin kubeconfig;
    ClusterError when there is no such cluster, AssetsError without that kubectl."""
    kubeconfig = Path(require_cluster(name).kubeconfig)
    return KubectlCommand(find_kubectl(), kubeconfig)


def cluster_logs(
    pod: str,
    *,
    namespace: str = "default",
    container: str | None = None,
    name: str = DEFAULT_NAME,
) -> str:
    """A Pod's container logs (the only container's when None), as ``kubectl logs``
    reads them: from the node's kubelet, through the apiserver."""
    from olmtool.kube import Kube, status_of

    kube = Kube(Path(require_cluster(name).kubeconfig))
    try:
        query = {"container": container} if container else {}
        return kube.core.read_namespaced_pod_log(pod, namespace, **query)  # type: ignore[no-any-return]
    except Exception as exc:
        if status_of(exc) in (400, 404):
            body = getattr(exc, "body", "") or ""
            reason = _status_message(body) or f"no pod {namespace}/{pod}"
            raise ClusterError(f"logs of {namespace}/{pod}: {reason}") from None
        raise
    finally:
        kube.close()


def _status_message(body: str) -> str:
    import json

    try:
        return str(json.loads(body).get("message") or "")
    except ValueError:
        return ""
