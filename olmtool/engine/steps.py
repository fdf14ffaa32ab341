"""An InstallPlan's steps from a resolved bundle's manifests, in OLM v0.18.3's order.

The CSV first (its ``spec.replaces`` set by the resolver), then the CRDs, then the bundle's
other objects in bundle order, then per service account of ``permissions`` /
``clusterPermissions`` the ServiceAccount (not ``default``), Role + RoleBinding and
ClusterRole + ClusterRoleBinding (the order real OLM v0.18.3 was seen to write them: a
bundle object that fails leaves the operator without its RBAC, so its CSV stays Pending).
Each step records its manifest as JSON, as OLM does.

Which kinds a plan may create is :data:`SUPPORTED_KINDS`, OLM v0.18.3's own list.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from olmtool.engine.objects import JSON, name_of, short_hash, split_api_version
from olmtool.olm import ResolvedBundle

RBAC_GROUP = "rbac.authorization.k8s.io"

# The kinds OLM v0.18.3's catalog operator applies from an InstallPlan
# (pkg/controller/operators/catalog at tag v0.18.3: the kinds ExecutePlan handles itself,
# then supportedresources.go's isSupported). Any other kind marks its step
# UnsupportedResource and the plan invalid: nothing of it is created.
OLM_VERSION = "v0.18.3"
SUPPORTED_KINDS = frozenset(
    {
        # ExecutePlan's own cases
        "ClusterServiceVersion", "CustomResourceDefinition", "Subscription", "Secret",
        "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount",
        "Service", "ConfigMap",
        # supportedresources.go
        "PrometheusRule", "ServiceMonitor", "PodDisruptionBudget", "PriorityClass",
        "VerticalPodAutoscaler", "ConsoleYAMLSample", "ConsoleQuickStart",
        "ConsoleCLIDownload", "ConsoleLink",
    }
)  # fmt: skip
UNSUPPORTED_RESOURCE = "UnsupportedResource"
INVALID_PLAN = "the InstallPlan contains invalid data"  # v1alpha1.ErrInvalidInstallPlan
PROPERTIES = "operatorframework.io/properties"
UNKNOWN = "Unknown"


def rbac_name(csv_name: str, account: str, rules: Any) -> str:
    """``<csv>-<sa>-<hash of the rules>``, within the 63 characters names allow."""
    suffix = short_hash(rules, 8)
    return f"{csv_name}-{account}"[: 63 - len(suffix) - 1].rstrip("-.") + "-" + suffix


def api_labels(csv: JSON, properties: list[JSON]) -> dict[str, str]:
    """``olm.api.<hash>``: ``provided`` for each owned API, ``required`` for each required."""
    crds = (csv.get("spec") or {}).get("customresourcedefinitions") or {}
    labels = {}
    for key, role in (("required", "required"), ("owned", "provided")):
        for crd in crds.get(key) or []:
            group = str(crd.get("name", "")).partition(".")[2]
            api = f"{crd.get('kind')}.{crd.get('version')}.{group}"
            labels[f"olm.api.{short_hash(api, 16)}"] = role
    for prop in properties:
        if prop.get("type") == "olm.gvk.required":
            value = prop.get("value") or {}
            api = f"{value.get('kind')}.{value.get('version')}.{value.get('group')}"
            labels.setdefault(f"olm.api.{short_hash(api, 16)}", "required")
    return labels


def csv_for_install(csv: JSON, bundle: ResolvedBundle, properties: list[JSON] = ()) -> JSON:
    """The CSV as the InstallPlan creates it: no namespace, the resolver's replaces, the
    bundle's properties as the ``operatorframework.io/properties`` annotation."""
    result = copy.deepcopy(csv)
    metadata = result.setdefault("metadata", {})
    for key in ("namespace", "resourceVersion", "uid", "creationTimestamp"):
        metadata.pop(key, None)
    if properties:
        text = json.dumps({"properties": list(properties)}, separators=(",", ":"))
        metadata.setdefault("annotations", {})[PROPERTIES] = text
    metadata["labels"] = {**(metadata.get("labels") or {}), **api_labels(csv, list(properties))}
    spec = result.setdefault("spec", {})
    if bundle.replaces:
        spec["replaces"] = bundle.replaces
    else:
        spec.pop("replaces", None)
    return result


def _account_steps(csv: JSON, namespaced: bool) -> list[JSON]:
    install = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}
    key = "permissions" if namespaced else "clusterPermissions"
    kinds = ("Role", "RoleBinding") if namespaced else ("ClusterRole", "ClusterRoleBinding")
    objects = []
    for permission in install.get(key) or []:
        account = str(permission.get("serviceAccountName") or "default")
        rules = permission.get("rules") or []
        name = rbac_name(name_of(csv), account, rules)
        role = {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": kinds[0],
            "metadata": {"name": name},
            "rules": rules,
        }
        binding = {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": kinds[1],
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": kinds[0], "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ""}],
        }
        objects.append((account, role, binding))
    return objects


def service_accounts(csv: JSON) -> list[str]:
    """Every service account the CSV's permissions and deployments name, sorted."""
    install = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}
    names = {
        str(p.get("serviceAccountName") or "default")
        for key in ("permissions", "clusterPermissions")
        for p in install.get(key) or []
    }
    for deployment in install.get("deployments") or []:
        template = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
        names.add(str(template.get("serviceAccountName") or "default"))
    return sorted(names)


def dependency_subscription(bundle: ResolvedBundle, namespace: str, approval: str) -> JSON:
    """The Subscription OLM generates for a bundle pulled in as a dependency:
    ``<package>-<channel>-<catalog>-<catalog namespace>``, starting at that bundle."""
    name = f"{bundle.package}-{bundle.channel}-{bundle.catalog}-{bundle.catalog_namespace}"
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": name[:253], "namespace": namespace},
        "spec": {
            "channel": bundle.channel,
            "installPlanApproval": approval,
            "name": bundle.package,
            "source": bundle.catalog,
            "sourceNamespace": bundle.catalog_namespace,
            "startingCSV": bundle.name,
        },
    }


def build_steps(
    bundle: ResolvedBundle,
    manifests: list[JSON],
    properties: list[JSON] = (),
    subscription: JSON | None = None,
) -> list[JSON]:
    """Every step of one bundle, in the order the InstallPlan executes them (with the
    Subscription OLM generates when the bundle is a dependency)."""
    source, source_namespace = bundle.catalog, bundle.catalog_namespace
    csv = next(m for m in manifests if m.get("kind") == "ClusterServiceVersion")
    objects: list[JSON] = [csv_for_install(csv, bundle, properties)]
    objects += [m for m in manifests if m.get("kind") == "CustomResourceDefinition"]
    objects += [
        m
        for m in manifests
        if m.get("kind") not in ("ClusterServiceVersion", "CustomResourceDefinition")
    ]
    accounts_done: set[str] = set()
    for namespaced in (True, False):
        for account, role, binding in _account_steps(csv, namespaced):
            if account != "default" and account not in accounts_done:
                accounts_done.add(account)
                objects.append(
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}}
                )
            objects += [role, binding]
    if subscription is not None:
        objects.append(subscription)
    return [_step(bundle.name, obj, source, source_namespace) for obj in objects]


def _step(resolving: str, obj: JSON, source: str, source_namespace: str) -> JSON:
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    return {
        "resolving": resolving,
        "resource": {
            "group": group,
            "version": version,
            "kind": str(obj.get("kind", "")),
            "name": name_of(obj),
            "manifest": json.dumps(obj, sort_keys=True, separators=(",", ":")),
            "sourceName": source,
            "sourceNamespace": source_namespace,
        },
        "status": UNKNOWN,
    }


def step_object(step: JSON) -> JSON:
    return json.loads(step["resource"]["manifest"])
