"""The one Kubernetes API boundary: which kubeconfig, a JSON client for it, watches, and
every failure as one line. Every layer that talks to an apiserver imports this face.

>>> from olmtool.kube import Target, connect
>>> kube = connect(Target(Path("admin.kubeconfig")))
>>> kube.get("/api/v1/namespaces/default")["metadata"]["name"]
'default'
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.kube.client": ("Kube",),
        "olmtool.kube.types": ("JSON", "MERGE_PATCH", "STRATEGIC_PATCH"),
        "olmtool.kube.failures": (
            "ConnectionProblem",
            "cluster_errors",
            "connection_problem",
            "describe",
            "map_error",
            "status_of",
        ),
        "olmtool.kube.kubeconfig": (
            "OUTAGE_GRACE",
            "Target",
            "check_kubeconfig",
            "connect",
            "from_environment",
        ),
        "olmtool.kube.watch": ("Streams", "configure_logging", "watch_forever"),
    },
)
