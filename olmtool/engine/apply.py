"""Creating or updating any object by its kind: discovery of REST paths, then create, or
update in place keeping what the server owns (resourceVersion, a Service's clusterIP)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.engine.objects import JSON, name_of, split_api_version

if TYPE_CHECKING:
    from olmtool.kube import Kube


class NotServed(LookupError):
    """The apiserver does not serve the kind (OLM's "could not find the requested resource")."""


@dataclass(frozen=True)
class Resource:
    base: str  # /api/v1 or /apis/<group>/<version>
    plural: str
    namespaced: bool

    def path(self, namespace: str = "", name: str = "") -> str:
        scoped = (
            f"{self.base}/namespaces/{namespace}" if self.namespaced and namespace else self.base
        )
        collection = f"{scoped}/{self.plural}"
        return f"{collection}/{name}" if name else collection


class Discovery:
    """Kind -> REST resource, read from the apiserver's discovery and cached; a miss
    re-reads the group version (a CRD established a moment ago)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._cache: dict[tuple[str, str], dict[str, Resource]] = {}

    def resource(self, api_version: str, kind: str) -> Resource:
        group, version = split_api_version(api_version)
        key = (group, version)
        found = self._cache.get(key, {}).get(kind)
        if found is None:
            self._cache[key] = self._read(group, version)
            found = self._cache[key].get(kind)
        if found is None:
            raise NotServed("the server could not find the requested resource")
        return found

    def served(self, api_version: str, kind: str) -> bool:
        try:
            self.resource(api_version, kind)
        except NotServed:
            return False
        return True

    def _read(self, group: str, version: str) -> dict[str, Resource]:
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = self.kube.get(base)
        except ApiException as exc:
            if exc.status == 404:
                return {}
            raise
        return {
            r["kind"]: Resource(base, r["name"], bool(r.get("namespaced")))
            for r in listing.get("resources", [])
            if "/" not in r["name"]
        }


def apply(kube: Kube, discovery: Discovery, obj: JSON, namespace: str = "") -> tuple[str, JSON]:
    """Create ``obj`` or update the existing one; ("Created" | "Present", the object)."""
    resource = discovery.resource(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    body = copy.deepcopy(obj)
    if resource.namespaced:
        body.setdefault("metadata", {})["namespace"] = namespace
    else:
        body.setdefault("metadata", {}).pop("namespace", None)
    name = name_of(body)
    existing = kube.get_or_none(resource.path(namespace, name))
    if existing is None:
        return "Created", kube.create(resource.path(namespace), body)
    return "Present", kube.put(resource.path(namespace, name), merged_for_update(existing, body))


def merged_for_update(existing: JSON, desired: JSON) -> JSON:
    """``desired`` with the fields the server or other writers own carried over."""
    body = copy.deepcopy(desired)
    metadata = body.setdefault("metadata", {})
    old = existing.get("metadata") or {}
    metadata["resourceVersion"] = old.get("resourceVersion")
    for key in ("labels", "annotations"):
        merged = {**(old.get(key) or {}), **(metadata.get(key) or {})}
        if merged:
            metadata[key] = merged
    refs = {r.get("uid"): r for r in old.get("ownerReferences") or []}
    refs.update({r.get("uid"): r for r in metadata.get("ownerReferences") or []})
    if refs:
        metadata["ownerReferences"] = list(refs.values())
    if existing.get("kind") == "Service":
        spec, old_spec = body.setdefault("spec", {}), existing.get("spec") or {}
        for key in ("clusterIP", "clusterIPs", "healthCheckNodePort"):
            if key in old_spec and key not in spec:
                spec[key] = old_spec[key]
    if "status" in existing and "status" not in body:
        body["status"] = existing["status"]
    return body
