"""Paths, conditions, owner references and labels OLM v0 writes: small shared pieces."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from olmtool.kube import JSON

if TYPE_CHECKING:
    from olmtool.kube import Kube

log = logging.getLogger("olmtool.engine")

GROUP = "operators.coreos.com"
V1ALPHA1 = f"/apis/{GROUP}/v1alpha1"
V1 = f"/apis/{GROUP}/v1"
V2 = f"/apis/{GROUP}/v2"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
CSV_FINALIZER = "operators.coreos.com/csv-cleanup"
CSV_KIND = "ClusterServiceVersion"
CSV_API_VERSION = f"{GROUP}/v1alpha1"

# the annotations OLM puts on a CSV (and so on its pods) for its OperatorGroup
OPERATOR_GROUP = "olm.operatorGroup"
OPERATOR_NAMESPACE = "olm.operatorNamespace"
TARGET_NAMESPACES = "olm.targetNamespaces"
PROVIDED_APIS = "olm.providedAPIs"
COPIED_FROM = "olm.copiedFrom"
OWNER = "olm.owner"
OWNER_NAMESPACE = "olm.owner.namespace"
OWNER_KIND = "olm.owner.kind"
SPEC_HASH = "olm.deployment-spec-hash"
MAX_CONDITIONS = 20


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def age(stamp: str | None) -> float:
    """Seconds since an RFC 3339 time (0 when unset or unreadable)."""
    if not stamp:
        return 0.0
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (datetime.now(UTC) - then).total_seconds()


def name_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def namespace_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


def annotations_of(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def labels_of(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def path(base: str, plural: str, namespace: str = "", name: str = "") -> str:
    """The REST path of a collection or object (cluster-scoped when namespace is "")."""
    scoped = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
    return f"{scoped}/{name}" if name else scoped


def owner_reference(owner: JSON, *, controller: bool = False) -> JSON:
    reference = {
        "apiVersion": owner.get("apiVersion", CSV_API_VERSION),
        "kind": owner.get("kind", CSV_KIND),
        "name": name_of(owner),
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": False,
    }
    if controller:
        reference["controller"] = True
    return reference


def component_label(package: str, namespace: str) -> str:
    """``operators.coreos.com/<package>.<namespace>``, the label OLM's Operator API puts on
    an operator's objects; its name part cut to the 63 characters a label name allows, as
    OLM v0.18.3 does (decorators.Operator.ComponentLabelKey). olmtool also drops trailing
    ``-._`` a cut may leave, which OLM's key would keep and the apiserver refuse."""
    name = f"{package}.{namespace}" if namespace else package
    return "operators.coreos.com/" + name[:63].rstrip("-._")


def owner_labels(csv: JSON) -> dict[str, str]:
    """The labels OLM puts on what a CSV owns across namespaces (cluster RBAC, ...)."""
    return {OWNER: name_of(csv), OWNER_NAMESPACE: namespace_of(csv), OWNER_KIND: CSV_KIND}


def set_condition(conditions: list[JSON], condition: JSON) -> list[JSON]:
    """``conditions`` with ``condition`` replacing the one of its type; the transition
    time moves only when the status does."""
    stamp = now()
    result = []
    replaced = False
    for existing in conditions:
        if existing.get("type") != condition["type"]:
            result.append(existing)
            continue
        replaced = True
        merged = {**existing, **condition, "lastUpdateTime": stamp}
        if existing.get("status") != condition.get("status"):
            merged["lastTransitionTime"] = stamp
        result.append(merged)
    if not replaced:
        result.append({**condition, "lastTransitionTime": stamp, "lastUpdateTime": stamp})
    return result


def drop_condition(conditions: list[JSON], kind: str) -> list[JSON]:
    return [c for c in conditions if c.get("type") != kind]


def short_hash(value: Any, length: int = 10) -> str:
    """A stable hash of a JSON value (spec hashes, generated names)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def api_message(exc: ApiException) -> str:
    """The apiserver's message for a refused request (its Status), else status + reason."""
    try:
        body = json.loads(exc.body or "{}")
    except ValueError:
        body = {}
    return str(body.get("message") or f"{exc.status} {exc.reason}")


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def emit_event(kube: Kube, obj: JSON, reason: str, message: str, kind: str = "Warning") -> None:
    """A core Event about ``obj`` (best effort: an event that cannot be written is dropped)."""
    stamp = now()
    namespace = namespace_of(obj) or name_of(obj)  # a Namespace's events live in it
    body = {
        "metadata": {"generateName": f"{name_of(obj)}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", ""),
            "name": name_of(obj),
            "namespace": namespace,  # a Namespace's own name, as the apiserver requires
            "uid": (obj.get("metadata") or {}).get("uid", ""),
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": "operator-lifecycle-manager"},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
    try:
        kube.create(f"/api/v1/namespaces/{namespace}/events", body)
    except ApiException as exc:
        log.warning("event %s on %s not written: %s", reason, name_of(obj), api_message(exc))
