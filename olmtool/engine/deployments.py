"""The operator's Deployments as OLM v0 makes them from a CSV's install strategy.

Pod-template annotations are merged with the CSV's annotations (the CSV wins, which is how
``olm.targetNamespaces`` reaches the pod); every container gets
``OPERATOR_CONDITION_NAME=<csv>``; the Subscription's ``config`` (env, envFrom, volumes,
volumeMounts, tolerations, resources, nodeSelector, affinity) is applied; the Deployment is
owned by the CSV and labelled with its owner and ``olm.deployment-spec-hash``, which is how
a changed spec is noticed.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from olmtool.engine.objects import (
    JSON,
    SPEC_HASH,
    annotations_of,
    name_of,
    namespace_of,
    owner_labels,
    owner_reference,
    short_hash,
)

if TYPE_CHECKING:
    from olmtool.kube import Kube

APPS = "/apis/apps/v1"


def _merge_named(existing: list[JSON], extra: list[JSON]) -> list[JSON]:
    """``existing`` with entries of the same ``name`` replaced by ``extra``'s, then the rest."""
    names = {e.get("name") for e in extra}
    return [e for e in existing if e.get("name") not in names] + list(extra)


def _apply_config(pod: JSON, config: JSON) -> None:
    for container in pod.get("containers") or []:
        if config.get("env"):
            container["env"] = _merge_named(container.get("env") or [], config["env"])
        if config.get("envFrom"):
            container["envFrom"] = (container.get("envFrom") or []) + config["envFrom"]
        if config.get("volumeMounts"):
            container["volumeMounts"] = _merge_named(
                container.get("volumeMounts") or [], config["volumeMounts"]
            )
        if config.get("resources") is not None:
            container["resources"] = config["resources"]
    if config.get("volumes"):
        pod["volumes"] = _merge_named(pod.get("volumes") or [], config["volumes"])
    if config.get("tolerations"):
        pod["tolerations"] = (pod.get("tolerations") or []) + config["tolerations"]
    for key in ("nodeSelector", "affinity"):
        if config.get(key) is not None:
            pod[key] = config[key]


def desired(csv: JSON, entry: JSON, config: JSON | None = None) -> JSON:
    """The Deployment for one ``install.spec.deployments`` entry of ``csv``."""
    spec = copy.deepcopy(entry.get("spec") or {})
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    template_meta["annotations"] = {
        **(template_meta.get("annotations") or {}),
        **annotations_of(csv),
    }
    pod = template.setdefault("spec", {})
    for container in pod.get("containers") or []:
        condition = {"name": "OPERATOR_CONDITION_NAME", "value": name_of(csv)}
        container["env"] = _merge_named(container.get("env") or [], [condition])
    _apply_config(pod, config or {})
    labels = {**(entry.get("label") or {}), **owner_labels(csv), SPEC_HASH: short_hash(spec)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": entry.get("name"),
            "namespace": namespace_of(csv),
            "labels": labels,
            "ownerReferences": [owner_reference(csv)],
        },
        "spec": spec,
    }


def ensure(kube: Kube, csv: JSON, entry: JSON, config: JSON | None) -> JSON:
    """Create or update the Deployment when its spec hash or owner differs."""
    body = desired(csv, entry, config)
    namespace, name = namespace_of(csv), str(entry.get("name"))
    existing = kube.get_or_none(f"{APPS}/namespaces/{namespace}/deployments/{name}")
    if existing is None:
        return kube.create(f"{APPS}/namespaces/{namespace}/deployments", body)
    labels = (existing.get("metadata") or {}).get("labels") or {}
    owners = [r.get("uid") for r in (existing.get("metadata") or {}).get("ownerReferences") or []]
    if labels.get(SPEC_HASH) == body["metadata"]["labels"][SPEC_HASH] and owners == [
        csv["metadata"]["uid"]
    ]:
        return existing
    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    return kube.put(f"{APPS}/namespaces/{namespace}/deployments/{name}", body)


def health(deployment: JSON | None) -> str | None:
    """None when the Deployment is rolled out and available, else what it waits for."""
    if deployment is None:
        return "deployment not found"
    name = name_of(deployment)
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    for condition in status.get("conditions") or []:
        if (
            condition.get("type") == "Progressing"
            and condition.get("reason") == "ProgressDeadlineExceeded"
        ):
            return f"deployment {name} exceeded its progress deadline"
    if status.get("observedGeneration", 0) < deployment["metadata"].get("generation", 0):
        return f"waiting for deployment {name} spec update to be observed"
    replicas = spec.get("replicas", 1)
    if status.get("updatedReplicas", 0) < replicas:
        return (
            f"Waiting for deployment {name} rollout to finish: {status.get('updatedReplicas', 0)} "
            f"out of {replicas} new replicas have been updated..."
        )
    if status.get("replicas", 0) > status.get("updatedReplicas", 0):
        return f"Waiting for deployment {name} rollout to finish: old replicas are pending termination..."
    if status.get("availableReplicas", 0) < replicas:
        return (
            f"Waiting for deployment {name} rollout to finish: {status.get('availableReplicas', 0)} "
            f"of {replicas} updated replicas are available..."
        )
    return None


def entries(csv: JSON) -> list[JSON]:
    install = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}
    return list(install.get("deployments") or [])
