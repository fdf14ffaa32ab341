"""Where objects of a kind live, as the cluster's discovery says: the client-side verbs'
one reading of ``/apis/<group>/<version>`` (``/api/v1``) for a kind's plural and scope."""

from __future__ import annotations

from typing import TYPE_CHECKING

from olmtool.errors import OlmNotInstalled
from olmtool.kube import JSON

if TYPE_CHECKING:
    from collections.abc import Callable

    from olmtool.kube import Kube, Target

# the group version every OLM v0 install serves (CatalogSource, Subscription, ...)
OLM_API = "operators.coreos.com/v1alpha1"


def api_path(api_version: str) -> str:
    """The discovery path of ``apiVersion``: ``/apis/<group>/<version>`` (``/api/v1``)."""
    group, _, version = api_version.rpartition("/")
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


class Discovery:
    """Each group version's resource list, read once (``get_or_none``: a group version
    the cluster does not serve has no resources)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._listed: dict[str, list[JSON]] = {}

    def collection(self, api_version: str, kind: str, namespace: str) -> tuple[str, bool] | None:
        """The REST path of the kind's objects in ``namespace`` (or cluster-wide) and
        whether the kind is namespaced; None when the cluster serves no such kind."""
        base = api_path(api_version)
        if base not in self._listed:
            self._listed[base] = (self.kube.get_or_none(base) or {}).get("resources") or []
        for resource in self._listed[base]:
            if resource.get("kind") == kind and "/" not in str(resource.get("name", "")):
                if resource.get("namespaced", True):
                    return f"{base}/namespaces/{namespace}/{resource['name']}", True
                return f"{base}/{resource['name']}", False
        return None


def require_olm(kube: Kube, target: Target) -> None:
    """OlmNotInstalled unless the cluster serves OLM's API (its CRDs are installed)."""
    served = kube.get_or_none(api_path(OLM_API)) or {}
    kinds = {r.get("kind") for r in served.get("resources") or []}
    if {"CatalogSource", "Subscription"} <= kinds:
        return
    raise OlmNotInstalled(
        f"OLM is not installed on the cluster of kubeconfig {target.shown}: its apiserver "
        f"{kube.server} serves no {OLM_API} CatalogSource and Subscription (install OLM "
        "first; `olmtool cluster up` installs it on a local cluster)",
        server=kube.server,
    )


def connect_olm(
    target: Target, *, outage_grace: float = 0.0, progress: Callable[[str], None] | None = None
) -> Kube:
    """:func:`olmtool.kube.connect`, then :func:`require_olm`: a client for a cluster
    that runs OLM (failures are one-line OlmtoolErrors)."""
    from olmtool.kube import cluster_errors, connect

    kube = connect(target, outage_grace=outage_grace, progress=progress)
    try:
        with cluster_errors(kube, target):
            require_olm(kube, target)
    except BaseException:
        kube.close()
        raise
    return kube
