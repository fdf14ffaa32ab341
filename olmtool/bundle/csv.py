"""Generating a ClusterServiceVersion and merging it into a hand-edited base CSV.

The generator owns a fixed set of fields (those derived from ``olmtool.yaml``, the CRDs
and the examples). Merging replaces exactly those fields in the base document and keeps
everything else, comments and key order included. Keyed lists (owned CRDs, deployments,
permissions, related images) are merged entry by entry, so hand-added entries and
hand-written keys inside generated entries survive.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from olmtool import yamlwrite
from olmtool.bundle.comments import anchor_comments, restore_trailing
from olmtool.bundle.format import CSV_API_VERSION, CSV_KIND
from olmtool.bundle.settings import INSTALL_MODE_TYPES, BundleSettings, Deployment, OwnedApi
from olmtool.bundle.webhooks import webhook_definitions
from olmtool.crd import version_sort_key

WATCH_NAMESPACE_ENV = {
    "name": "WATCH_NAMESPACE",
    "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}},
}
POD_NAME_ENV = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}

# Lists merged entry by entry, by these keys.
KEYED_LISTS: dict[tuple[str, ...], Callable[[Any], Any]] = {
    ("spec", "customresourcedefinitions", "owned"): lambda e: (e.get("name"), e.get("version")),
    ("spec", "install", "spec", "deployments"): lambda e: e.get("name"),
    ("spec", "install", "spec", "permissions"): lambda e: e.get("serviceAccountName"),
    ("spec", "install", "spec", "clusterPermissions"): lambda e: e.get("serviceAccountName"),
    ("spec", "relatedImages"): lambda e: e.get("name"),
    ("spec", "webhookdefinitions"): lambda e: (e.get("type"), e.get("generateName")),
}


def generate_csv(
    settings: BundleSettings,
    crds: Sequence[dict[str, Any]],
    examples: Sequence[dict[str, Any]],
    icon: dict[str, str] | None,
) -> dict[str, Any]:
    """The generated fields of the CSV (a plain, key-sorted document)."""
    csv = settings.csv
    annotations = {**_derived_annotations(settings, examples), **csv.annotations}
    spec: dict[str, Any] = {
        "customresourcedefinitions": {"owned": owned_crds(crds, csv.owned)},
        "install": {"strategy": "deployment", "spec": _install_spec(settings)},
        "installModes": [
            {"type": mode, "supported": mode in csv.install_modes} for mode in INSTALL_MODE_TYPES
        ],
        "relatedImages": _related_images(settings),
        "version": settings.version,
    }
    optional = {
        "displayName": csv.display_name,
        "description": csv.description,
        "keywords": csv.keywords,
        "maintainers": [m.model_dump() for m in csv.maintainers],
        "provider": csv.provider.model_dump(exclude_none=True) if csv.provider else None,
        "links": [link.model_dump() for link in csv.links],
        "maturity": csv.maturity,
        "minKubeVersion": csv.min_kube_version,
        "replaces": csv.replaces,
        "skips": csv.skips,
        "icon": [icon] if icon else None,
        "webhookdefinitions": webhook_definitions(settings),
    }
    spec.update({key: value for key, value in optional.items() if value})
    metadata: dict[str, Any] = {"name": settings.csv_name, "annotations": annotations}
    if csv.labels:
        metadata["labels"] = csv.labels
    document = {"apiVersion": CSV_API_VERSION, "kind": CSV_KIND, "metadata": metadata, "spec": spec}
    return yamlwrite.to_plain(document)


def owned_crds(crds: Sequence[dict[str, Any]], owned: dict[str, OwnedApi]) -> list[dict[str, Any]]:
    """One owned entry per served version of every CRD, highest version first."""
    entries = []
    for crd in sorted(crds, key=lambda c: c["metadata"]["name"]):
        spec = crd["spec"]
        kind = spec["names"]["kind"]
        info = owned.get(kind, OwnedApi())
        versions = [v for v in spec.get("versions", []) if v.get("served", True)]
        for version in sorted(versions, key=lambda v: version_sort_key(v["name"])):
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            entry = {
                "name": crd["metadata"]["name"],
                "version": version["name"],
                "kind": kind,
                "displayName": info.display_name or _words(kind),
                "description": info.description or schema.get("description") or kind,
                "resources": info.resources,
                "specDescriptors": info.spec_descriptors,
                "statusDescriptors": info.status_descriptors,
                "actionDescriptors": info.action_descriptors,
            }
            entries.append({key: value for key, value in entry.items() if value})
    return entries


def _derived_annotations(
    settings: BundleSettings, examples: Sequence[dict[str, Any]]
) -> dict[str, str]:
    csv = settings.csv
    values = {
        "alm-examples": _examples_json(examples) if examples else None,
        "capabilities": csv.capabilities,
        "categories": ", ".join(csv.categories) if csv.categories else None,
        "containerImage": csv.container_image or settings.deployment.image,
        "description": csv.short_description,
        "olm.skipRange": csv.skip_range,
        "operatorframework.io/suggested-namespace": csv.suggested_namespace,
        "repository": csv.repository,
        "support": csv.support,
    }
    return {key: value for key, value in values.items() if value}


def _examples_json(examples: Sequence[dict[str, Any]]) -> str:
    ordered = sorted(examples, key=lambda e: (e.get("apiVersion", ""), e.get("kind", "")))
    return json.dumps(ordered, indent=2, sort_keys=True) + "\n"


def _install_spec(settings: BundleSettings) -> dict[str, Any]:
    account = settings.deployment.service_account
    permissions = settings.permissions
    cluster = settings.cluster_permissions
    spec: dict[str, Any] = {
        "deployments": [{"name": settings.deployment.name, "spec": deployment_spec(settings)}]
    }
    # OLM creates a service account only if some permission names it, so an operator
    # without rules still gets a (rule-less) entry.
    if permissions or not cluster:
        spec["permissions"] = [{"serviceAccountName": account, "rules": permissions}]
    if cluster:
        spec["clusterPermissions"] = [{"serviceAccountName": account, "rules": cluster}]
    return spec


def deployment_spec(settings: BundleSettings) -> dict[str, Any]:
    """A DeploymentSpec whose selector never changes between releases (it is immutable)."""
    dep = settings.deployment
    selector = {"app.kubernetes.io/name": dep.name}
    pod_spec: dict[str, Any] = {
        "serviceAccountName": dep.service_account,
        "containers": [_container(dep)],
    }
    if dep.pod_security_context:
        pod_spec["securityContext"] = dep.pod_security_context
    if dep.volumes:
        pod_spec["volumes"] = dep.volumes
    if dep.termination_grace_period_seconds is not None:
        pod_spec["terminationGracePeriodSeconds"] = dep.termination_grace_period_seconds
    return {
        "replicas": dep.replicas,
        "selector": {"matchLabels": selector},
        "template": {"metadata": {"labels": {**dep.labels, **selector}}, "spec": pod_spec},
    }


def _container(dep: Deployment) -> dict[str, Any]:
    user_env = {item.get("name"): item for item in dep.env}
    env = [e for e in (WATCH_NAMESPACE_ENV, POD_NAME_ENV) if e["name"] not in user_env]
    container = {
        "name": dep.container_name,
        "image": dep.image,
        "command": dep.command,
        "args": dep.args,
        "env": env + list(dep.env),
        "ports": dep.ports,
        "resources": dep.resources,
        "livenessProbe": dep.liveness_probe,
        "readinessProbe": dep.readiness_probe,
        "startupProbe": dep.startup_probe,
        "securityContext": dep.security_context,
        "volumeMounts": dep.volume_mounts,
    }
    return {key: value for key, value in container.items() if value}


def _related_images(settings: BundleSettings) -> list[dict[str, str]]:
    images = {settings.deployment.name: settings.deployment.image}
    images.update({item.name: item.image for item in settings.csv.related_images})
    return [{"name": name, "image": image} for name, image in sorted(images.items())]


def _words(kind: str) -> str:
    """``EtcdCluster`` -> ``Etcd Cluster``."""
    out = ""
    for i, char in enumerate(kind):
        if char.isupper() and i and not kind[i - 1].isupper():
            out += " "
        out += char
    return out


# -- merging into a base CSV -------------------------------------------------------------


def merge_into_base(base: CommentedMap | None, generated: dict[str, Any]) -> CommentedMap:
    """``base`` with every generated field replaced (a new empty map when there is no base)."""
    document = base if base is not None else CommentedMap()
    trailing = anchor_comments(document)  # comments move with their entries
    _merge_mapping(document, generated, ())
    restore_trailing(document, trailing)
    return document


def _merge_mapping(target: CommentedMap, generated: dict[str, Any], path: tuple[str, ...]) -> None:
    for key, value in generated.items():
        here = (*path, key)
        current = target.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge_mapping(current, value, here)
        elif here in KEYED_LISTS and isinstance(value, list) and isinstance(current, list):
            target[key] = _merge_keyed(current, value, KEYED_LISTS[here], here)
        elif current != value:
            if isinstance(value, dict | list) or (isinstance(value, str) and "\n" in value):
                _drop_end_of_line_comment(target, key)
            target[key] = value


def _drop_end_of_line_comment(target: CommentedMap, key: str) -> None:
    """A comment after ``key: value`` would land inside a block value that replaces it;
    full-line comments that follow it (they belong to the next key) are kept."""
    tokens = target.ca.items.get(key)
    if not tokens or len(tokens) < 3 or tokens[2] is None:
        return
    _, _, rest = tokens[2].value.partition("\n")
    if rest.strip():
        tokens[2].value = "\n" + rest
    else:
        tokens[2] = None


def _merge_keyed(
    current: list[Any], generated: list[Any], key: Callable[[Any], Any], path: tuple[str, ...]
) -> CommentedSeq:
    """Generated entries in generated order (merged into their base twins), then the
    base's own entries."""
    by_key = {key(item): item for item in current if isinstance(item, dict)}
    merged = CommentedSeq()
    for entry in generated:
        twin = by_key.pop(key(entry), None)
        if isinstance(twin, CommentedMap):
            _merge_mapping(twin, entry, path)
            merged.append(twin)
        else:
            merged.append(entry)
    merged.extend(item for item in current if not isinstance(item, dict) or key(item) in by_key)
    return merged
