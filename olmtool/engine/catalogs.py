"""CatalogSources: the registry server each one names, its connection state, its content.

A ``grpc`` source with ``spec.address`` is dialled directly. One with ``spec.image`` gets
the pod OLM v0.18.3 creates: the catalog image run by its own entrypoint (opm's, or
``olmtool catalog serve`` in olmtool's catalog images) on port 50051, with readiness and
liveness probes ``grpc_health_probe -addr=:50051``, plus a Service named after the
source; the engine dials the pod once it runs. Content is read over the
registry API (:mod:`olmtool.olm.source`) when the connection comes up and again every
poll interval (``spec.updateStrategy.registryPoll.interval``, else ``DEFAULT_REFRESH``).
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from olmtool.catalog import declcfg as dc
from olmtool.catalog.model import ResolvedCatalog, build_model
from olmtool.engine.objects import (
    JSON,
    V1ALPHA1,
    name_of,
    namespace_of,
    now,
    owner_reference,
    path,
    short_hash,
)
from olmtool.errors import OlmtoolError
from olmtool.olm import (
    READY,
    CatalogSource,
    CatalogSourceUnavailable,
    ResolvedBundle,
    fetch_config,
    fetch_manifests,
)
from olmtool.olm import probe as probe_address

if TYPE_CHECKING:
    from olmtool.kube import Kube

GRPC_PORT = 50051
HEALTH_PROBE = ("grpc_health_probe", f"-addr=:{GRPC_PORT}")
DEFAULT_REFRESH = 15.0
SOURCE_LABEL = "olm.catalogSource"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s|ms)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass
class SourceState:
    """What the engine knows of one CatalogSource."""

    namespace: str
    name: str
    address: str = ""
    state: str = ""
    config: dc.DeclarativeConfig | None = None
    model: ResolvedCatalog | None = None
    fetched_at: float = 0.0
    last_connect: str = ""
    error: str = ""
    priority: int = 0
    failures: int = 0
    retry_at: float = 0.0
    manifests: dict[str, list[JSON]] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.model is not None


def parse_duration(text: str) -> float | None:
    """A Go duration (``10m``, ``1h30m``, ``45s``) in seconds, None if unreadable."""
    parts = _DURATION.findall(text or "")
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


class Catalogs:
    """The CatalogSources of the cluster, connected and read."""

    def __init__(self, kube: Kube, *, registry: str = "", refresh: float = DEFAULT_REFRESH) -> None:
        self.kube = kube
        self.registry = registry
        self.refresh = refresh
        self.sources: dict[tuple[str, str], SourceState] = {}

    def sync(self, catalog_sources: list[JSON]) -> None:
        seen = set()
        for source in catalog_sources:
            key = (namespace_of(source), name_of(source))
            seen.add(key)
            state = self.sources.setdefault(key, SourceState(*key))
            try:
                self._sync_one(source, state)
            except OlmtoolError as exc:  # a source's own trouble never stops the engine
                state.error = str(exc)
        for key in set(self.sources) - seen:
            del self.sources[key]

    def _sync_one(self, source: JSON, state: SourceState) -> None:
        spec = source.get("spec") or {}
        state.priority = int(spec.get("priority") or 0)
        if spec.get("sourceType", "grpc") != "grpc":
            state.error = f"sourceType {spec.get('sourceType')!r} is not supported by this engine"
            self._write_status(source, state, service=None)
            return
        service = None
        if spec.get("image"):
            address, service = self._ensure_image_pod(source, spec["image"])
        else:
            address = str(spec.get("address") or "")
        if address != state.address:
            state.address, state.model, state.config, state.fetched_at = address, None, None, 0.0
            state.manifests.clear()
        interval = _poll_interval(spec) or self.refresh
        due = state.model is None or time.monotonic() - state.fetched_at > interval
        if address and due and time.monotonic() >= state.retry_at:
            self._connect(state)
            # a server that does not answer is asked again after 1, 2, 4 ... 16 s
            state.failures = 0 if state.state == READY else state.failures + 1
            state.retry_at = time.monotonic() + (
                min(16, 2 ** (state.failures - 1)) if state.failures else 0
            )
        elif not address:
            state.state = "CONNECTING"
        self._write_status(source, state, service)

    def _connect(self, state: SourceState) -> None:
        connection = probe_address(state.address, timeout=1.0)
        state.state = connection.last_observed_state
        if state.state != READY:
            state.model = None if state.fetched_at == 0 else state.model
            return
        state.last_connect = state.last_connect or now()
        try:
            config = fetch_config(state.address, timeout=20.0)
            model = build_model(config)
        except (CatalogSourceUnavailable, OlmtoolError, ValueError) as exc:
            state.error = f"reading the catalog at {state.address}: {exc}"
            state.state = "TRANSIENT_FAILURE"
            return
        if config != state.config:
            state.manifests.clear()
        state.config, state.model, state.error = config, model, ""
        state.fetched_at = time.monotonic()

    def _ensure_image_pod(self, source: JSON, image: str) -> tuple[str, JSON]:
        """The serving pod and Service of an image source; the pod's address once it runs."""
        namespace, name = namespace_of(source), name_of(source)
        pod_name = f"{name}-{short_hash(_serving_pod(source, '', image)['spec'], 5)}"
        pods = self.kube.get(
            path("/api/v1", "pods", namespace), labelSelector=f"{SOURCE_LABEL}={name}"
        ).get("items", [])
        current = [p for p in pods if name_of(p) == pod_name]
        for stale in pods:
            if name_of(stale) != pod_name:
                self.kube.delete(path("/api/v1", "pods", namespace, name_of(stale)))
        if not current:
            self.kube.create(
                path("/api/v1", "pods", namespace), _serving_pod(source, pod_name, image)
            )
        service = self.kube.get_or_none(path("/api/v1", "services", namespace, name))
        if service is None:
            self.kube.create(path("/api/v1", "services", namespace), _service(source))
        registry_service = {
            "createdAt": now(),
            "port": str(GRPC_PORT),
            "protocol": "grpc",
            "serviceName": name,
            "serviceNamespace": namespace,
        }
        status = (current[0].get("status") if current else None) or {}
        running = status.get("phase") == "Running" and status.get("podIP")
        return (f"{status['podIP']}:{GRPC_PORT}" if running else ""), registry_service

    def _write_status(self, source: JSON, state: SourceState, service: JSON | None) -> None:
        old = source.get("status") or {}
        connection = {
            "address": state.address,
            "lastObservedState": state.state or "CONNECTING",
        }
        if state.last_connect:
            connection["lastConnect"] = state.last_connect
        status: JSON = {"connectionState": connection}
        service = service or {"protocol": "grpc"}  # an address source: OLM records the protocol
        status["registryService"] = {
            **service,
            "createdAt": (old.get("registryService") or {}).get("createdAt", now()),
        }
        if state.error:
            status["message"] = state.error
            status["reason"] = "ReadCatalogFailed"
        if state.model is not None:
            status["lastSync"] = old.get("lastSync") if _same(old, status) else now()
        if _same(old, status) and old.get("lastSync") == status.get("lastSync"):
            return
        body = {**source, "status": status}
        self.kube.put(
            path(V1ALPHA1, "catalogsources", namespace_of(source), name_of(source)) + "/status",
            body,
        )

    # what the resolver and the InstallPlans read

    def visible(self, namespace: str, global_namespace: str) -> list[CatalogSource]:
        return [
            CatalogSource(s.name, s.namespace, s.model, s.priority)
            for s in self.sources.values()
            if s.model is not None and s.namespace in (namespace, global_namespace)
        ]

    def state_of(self, namespace: str, name: str) -> SourceState | None:
        return self.sources.get((namespace, name))

    def manifests(self, namespace: str, name: str, bundle: ResolvedBundle) -> list[JSON]:
        """The bundle's manifests, CSV first: inline from the registry, else pulled from
        its bundle image (where OLM runs an unpack Job)."""
        state = self.sources.get((namespace, name))
        if state is None or not state.address:
            raise CatalogSourceUnavailable(f"CatalogSource {namespace}/{name} is not connected")
        if bundle.name in state.manifests:
            return state.manifests[bundle.name]
        found = fetch_manifests(state.address, bundle.package, bundle.channel, bundle.name)
        if not any(m.get("kind") == "ClusterServiceVersion" and m.get("spec") for m in found):
            found = self._unpack(bundle)
        state.manifests[bundle.name] = found
        return found

    def properties(self, bundle: ResolvedBundle) -> list[JSON]:
        """The bundle's properties as the registry serves them (without its objects)."""
        state = self.sources.get((bundle.catalog_namespace, bundle.catalog))
        if state is None or state.config is None:
            return []
        for found in state.config.bundles:
            if found.name == bundle.name and found.package == bundle.package:
                return [
                    {"type": p.type, "value": p.value}
                    for p in found.properties
                    if p.type not in (dc.PROP_BUNDLE_OBJECT, dc.PROP_CSV_METADATA)
                ]
        return []

    def _unpack(self, bundle: ResolvedBundle) -> list[JSON]:
        from olmtool.catalog import render_opened  # pulls images: loaded on demand

        if not bundle.image:
            raise CatalogSourceUnavailable(f"bundle {bundle.name} has neither objects nor an image")
        reference = self._reachable(bundle.image)
        rendered = render_opened(reference)
        objects = [
            json.loads(base64.b64decode(p.value["data"]))
            for p in rendered.bundle.properties_of(dc.PROP_BUNDLE_OBJECT)
        ]
        objects.sort(key=lambda m: m.get("kind") != "ClusterServiceVersion")
        return objects

    def _reachable(self, image: str) -> str:
        """``localhost:5000/...`` is the cluster registry's alias (as in the node's containerd registry hosts)."""
        for alias in ("localhost:5000/", "127.0.0.1:5000/"):
            if self.registry and image.startswith(alias):
                return f"{self.registry}/{image.removeprefix(alias)}"
        return image


def _poll_interval(spec: JSON) -> float | None:
    poll = ((spec.get("updateStrategy") or {}).get("registryPoll") or {}).get("interval")
    return parse_duration(str(poll)) if poll else None


def _same(old: JSON, new: JSON) -> bool:
    keys = ("connectionState", "message", "reason")
    strip = {"lastConnect"}

    def view(status: JSON) -> list[Any]:
        shown = []
        for key in keys:
            value = status.get(key)
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in strip}
            shown.append(value)
        return shown

    return view(old) == view(new) and bool(old.get("registryService")) == bool(
        new.get("registryService")
    )


def _serving_pod(source: JSON, pod_name: str, image: str) -> JSON:
    """OLM v0.18.3's registry pod (``reconciler.Pod``): the image's own entrypoint serves
    on :50051, probed by its ``grpc_health_probe``; pulled always unless named by digest."""
    name = name_of(source)
    probe = {"exec": {"command": list(HEALTH_PROBE)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name,
            "labels": {SOURCE_LABEL: name, "olm.managed": "true"},
            "ownerReferences": [owner_reference(source, controller=True)],
        },
        "spec": {
            "containers": [
                {
                    "name": "registry-server",
                    "image": image,
                    "ports": [{"name": "grpc", "containerPort": GRPC_PORT}],
                    "readinessProbe": {**probe, "initialDelaySeconds": 5, "timeoutSeconds": 5},
                    "livenessProbe": {**probe, "initialDelaySeconds": 10},
                    "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
                    "imagePullPolicy": "IfNotPresent" if "@" in image else "Always",
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                }
            ],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "restartPolicy": "Always",
        },
    }


def _service(source: JSON) -> JSON:
    name = name_of(source)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "labels": {"olm.managed": "true"},
            "ownerReferences": [owner_reference(source, controller=True)],
        },
        "spec": {
            "selector": {SOURCE_LABEL: name},
            "ports": [{"name": "grpc", "port": GRPC_PORT, "targetPort": GRPC_PORT}],
        },
    }
