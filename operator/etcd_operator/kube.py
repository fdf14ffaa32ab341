"""The Kubernetes API as the operator uses it: kubernetes_asyncio's dynamic client
(discovery picks the served version: CronJob is batch/v1beta1 before 1.21, batch/v1
after), with create-if-missing and not-found-is-fine helpers."""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from typing import Any

from kubernetes_asyncio import client, config
from kubernetes_asyncio.dynamic import DynamicClient
from kubernetes_asyncio.dynamic.exceptions import ResourceNotFoundError

log = logging.getLogger(__name__)

JSON = dict[str, Any]


class ApiError(Exception):
    """The apiserver refused a request (its Status message)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class Invalid(ApiError):
    """422: the object fails validation (for the operator's objects: a value from the
    EtcdCluster's spec that its CRD let through)."""


def refused(exc: ApiError) -> str:
    """An object made from the spec that the apiserver refused (422), as a spec problem."""
    return f"the apiserver refused an object made from the spec: {exc.message}"


def _checked(found: Any) -> JSON:
    """The response as a dict; a failure Status raised (this client returns error
    responses as data instead of raising)."""
    data = found.to_dict() if hasattr(found, "to_dict") else dict(found)
    if data.get("kind") == "Status" and data.get("status") == "Failure":
        code = int(data.get("code") or 0)
        kind = {404: NotFound, 409: Conflict, 422: Invalid}.get(code, ApiError)
        raise kind(code, str(data.get("reason") or ""), str(data.get("message") or ""))
    return data


def discovery_cache() -> str:
    """The dynamic client's discovery cache file: in the temporary directory when one is
    writable, else under a directory that does not exist (it then discovers at every
    start and its failed write is ignored). Without it the client asks for a temporary
    directory and fails on a read-only root with no /tmp volume, as the 0.1.0 to 0.3.0
    CSVs run it."""
    try:
        directory = tempfile.gettempdir()
    except FileNotFoundError:  # no writable temporary directory
        directory = "/nonexistent"
    return os.path.join(directory, "etcd-operator-discovery.json")


class Kube:
    def __init__(self, api: client.ApiClient, dynamic: DynamicClient) -> None:
        self.api = api
        self.dynamic = dynamic
        self._versions: dict[tuple[str, str], str] = {}
        self._resources: dict[tuple[str, str], Any] = {}
        # the lazy discoverer is not safe for concurrent first use (KeyError 'resources')
        self._discovery = asyncio.Lock()

    @classmethod
    async def connect(cls) -> Kube:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config()
        else:
            await config.load_kube_config()
        api = client.ApiClient()
        return cls(api, await DynamicClient(api, cache_file=discovery_cache()))

    async def close(self) -> None:
        await self.api.close()

    async def served(self, group: str, kind: str, versions: tuple[str, ...]) -> str:
        """The first of ``versions`` the server serves for ``kind`` (``group/version``)."""
        key = (group, kind)
        if key not in self._versions:
            for version in versions:
                try:
                    await self._resource(f"{group}/{version}", kind)
                except ResourceNotFoundError:
                    continue
                self._versions[key] = f"{group}/{version}"
                break
            else:
                raise ResourceNotFoundError(f"{group} {kind} is not served in {versions}")
        return self._versions[key]

    async def _resource(self, api_version: str, kind: str):  # type: ignore[no-untyped-def]
        key = (api_version, kind)
        if key not in self._resources:
            async with self._discovery:
                if key not in self._resources:
                    found = await self.dynamic.resources.get(api_version=api_version, kind=kind)
                    self._resources[key] = found
        return self._resources[key]

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> JSON | None:
        resource = await self._resource(api_version, kind)
        try:
            return _checked(await self.dynamic.get(resource, name=name, namespace=namespace))
        except NotFound:
            return None

    async def list(self, api_version: str, kind: str, namespace: str, selector: str) -> list[JSON]:
        resource = await self._resource(api_version, kind)
        found = _checked(
            await self.dynamic.get(resource, namespace=namespace, label_selector=selector)
        )
        return list(found.get("items") or [])

    async def create(self, body: JSON) -> JSON:
        """Create ``body``; an object that already exists is returned as it is."""
        resource = await self._resource(body["apiVersion"], body["kind"])
        meta = body["metadata"]
        try:
            return _checked(
                await self.dynamic.create(resource, body=body, namespace=meta["namespace"])
            )
        except Conflict:
            found = await self.get(
                body["apiVersion"], body["kind"], meta["namespace"], meta["name"]
            )
            return found or {}

    async def ensure(self, body: JSON, fields: tuple[str, ...] = ("spec",)) -> JSON:
        """Create ``body``, or merge-patch ``fields`` of the existing object to match."""
        meta = body["metadata"]
        found = await self.get(body["apiVersion"], body["kind"], meta["namespace"], meta["name"])
        if found is None:
            return await self.create(body)
        patch = {f: body[f] for f in fields if f in body and _differs(found.get(f), body[f])}
        if not patch:
            return found
        return await self.patch(
            body["apiVersion"], body["kind"], meta["namespace"], meta["name"], patch
        )

    async def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        patch: JSON,
        status: bool = False,
    ) -> JSON:
        resource = await self._resource(api_version, kind)
        if status:
            resource = resource.subresources["status"]
        found = await self.dynamic.patch(
            resource,
            body=patch,
            name=name,
            namespace=namespace,
            content_type="application/merge-patch+json",
        )
        return _checked(found)

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, grace: int | None = None
    ) -> bool:
        """Delete if present (dependents in the background); False if it was gone."""
        resource = await self._resource(api_version, kind)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        try:
            _checked(await self.dynamic.delete(resource, name=name, namespace=namespace, body=body))
        except NotFound:
            return False
        return True


def _differs(current: Any, wanted: Any) -> bool:
    """Whether ``wanted`` sets anything ``current`` lacks (defaults the server added to
    ``current`` do not count)."""
    if isinstance(wanted, dict):
        if not isinstance(current, dict):
            return True
        return any(_differs(current.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        if not isinstance(current, list) or len(current) != len(wanted):
            return True
        return any(_differs(c, w) for c, w in zip(current, wanted, strict=True))
    return current != wanted
