"""A real Kubernetes control plane on one machine (kube-apiserver, etcd, ...).

>>> from olmtool.cluster import ensure_assets, start_apiserver
>>> with start_apiserver(ensure_assets(), state_dir) as plane:
...     use(plane.kubeconfig)
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.cluster.assets": (
            "AssetsError",
            "build_assets",
            "build_blocker",
            "default_assets_dir",
            "ensure_assets",
            "find_assets",
            "find_kubectl",
        ),
        "olmtool.cluster.controlplane": (
            "ControlPlane",
            "ControlPlaneError",
            "start_apiserver",
        ),
        "olmtool.cluster.defaults": (
            "DEFAULT_NAME",
            "DEFAULT_REGISTRY_PORT",
        ),
        "olmtool.cluster.clusterstatus": (
            "ClusterStatus",
            "status",
        ),
        "olmtool.cluster.lifecycle": (
            "Cluster",
            "ClusterError",
            "down",
            "load_image",
            "node_ready",
            "read_cluster",
            "require_cluster",
            "up",
        ),
        "olmtool.cluster.network": (
            "ClusterNetwork",
            "NetworkError",
            "NodeNetwork",
            "claim_network",
            "release_network",
        ),
        "olmtool.cluster.nodecontrol": (
            "node_start",
            "node_stop",
        ),
        "olmtool.cluster.registryauth": ("registry_credentials",),
        "olmtool.cluster.target": (
            "local_cluster_of",
            "resolve_kubeconfig",
            "resolve_target",
        ),
    },
)
