"""Where objects of a kind live, as the cluster's discovery says: the client-side verbs'
one reading of ``/apis/<group>/<version>`` (``/api/v1``) for a kind's plural and scope."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def api_path(api_version: str) -> str:
    """The discovery path of ``apiVersion``: ``/apis/<group>/<version>`` (``/api/v1``)."""
    group, _, version = api_version.rpartition("/")
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


class Discovery:
    """Each group version's resource list, read once (``get_or_none``: a group version
    the cluster does not serve has no resources)."""

    def __init__(self, kube: Any) -> None:
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
