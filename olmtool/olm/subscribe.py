"""Installing an operator through OLM's API, as a user of any cluster with OLM would:
a CatalogSource, an OperatorGroup and a Subscription, then following the Subscription's
InstallPlan and CSV until the operator runs or OLM says why it cannot.

The same calls work against real OLM and against olmtool's engine: only
``operators.coreos.com`` objects are read and written. Objects this module creates carry
the label ``olmtool.dev/created-by: install`` so ``uninstall`` removes only those.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from olmtool.errors import ArgumentError, OlmtoolError

JSON = dict[str, Any]
GROUP = "/apis/operators.coreos.com"
CREATED_BY = {"olmtool.dev/created-by": "install"}
MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
# a resolution failure must outlast the CatalogSource's first connection before it counts
RESOLUTION_GRACE = 15.0


class InstallFailed(OlmtoolError):
    """OLM could not install the operator (the message says what OLM reported)."""


@dataclass(frozen=True)
class InstallMode:
    """The OperatorGroup's targets for an install mode: ``[]`` means all namespaces."""

    name: str
    targets: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, namespace: str) -> InstallMode:
        """``OwnNamespace``, ``SingleNamespace=ns``, ``MultiNamespace=a,b``, ``AllNamespaces``."""
        name, _, value = text.partition("=")
        targets = tuple(sorted({t.strip() for t in value.split(",") if t.strip()}))
        if name == "OwnNamespace" and not value:
            return cls(name, (namespace,))
        if name == "AllNamespaces" and not value:
            return cls(name, ())
        if name == "SingleNamespace" and len(targets) == 1:
            return cls(name, targets)
        if name == "MultiNamespace" and targets:
            return cls(name, targets)
        raise ArgumentError(
            f'"{text}" is not one of OwnNamespace, SingleNamespace=NS, '
            "MultiNamespace=NS1,NS2, AllNamespaces",
            argument="install_mode",
        )


def _path(namespace: str, plural: str, name: str = "", version: str = "v1alpha1") -> str:
    base = f"{GROUP}/{version}/namespaces/{namespace}/{plural}"
    return f"{base}/{name}" if name else base


def _meta(name: str) -> JSON:
    return {"name": name, "labels": dict(CREATED_BY)}


def ensure_catalog_source(
    kube: Any, namespace: str, name: str, address: str = "", image: str = ""
) -> JSON:
    """The CatalogSource ``name`` serving ``address`` (host:port) or ``image``; an existing
    one with the same source is reused, a different one is an error."""
    spec: JSON = {"sourceType": "grpc", "displayName": name, "publisher": "olmtool"}
    spec.update({"image": image} if image else {"address": address})
    found = kube.get_or_none(_path(namespace, "catalogsources", name))
    if found is not None:
        same = all(
            found.get("spec", {}).get(k) == v for k, v in spec.items() if k in ("image", "address")
        )
        if not same:
            raise ArgumentError(
                f"CatalogSource {namespace}/{name} exists with another source", argument="catalog"
            )
        return found
    return kube.create(
        _path(namespace, "catalogsources"),
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": _meta(name),
            "spec": spec,
        },
    )


def ensure_operator_group(kube: Any, namespace: str, mode: InstallMode) -> JSON:
    """The namespace's one OperatorGroup, created for ``mode`` when there is none; an
    existing group that targets other namespaces is an error (OLM allows one group)."""
    groups = kube.get(_path(namespace, "operatorgroups", version="v1")).get("items", [])
    if len(groups) > 1:
        names = ", ".join(g["metadata"]["name"] for g in groups)
        raise InstallFailed(
            f"namespace {namespace} has {len(groups)} OperatorGroups ({names}); OLM needs exactly one"
        )
    if groups:
        group = groups[0]
        existing = tuple(sorted(group.get("spec", {}).get("targetNamespaces") or ()))
        if existing != mode.targets:
            shown = ",".join(existing) or "all namespaces"
            raise ArgumentError(
                f"OperatorGroup {namespace}/{group['metadata']['name']} already targets {shown}",
                argument="install_mode",
            )
        return group
    spec: JSON = {"targetNamespaces": list(mode.targets)} if mode.targets else {}
    body = {
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": _meta(f"{namespace}-og"),
        "spec": spec,
    }
    return kube.create(_path(namespace, "operatorgroups", version="v1"), body)


@dataclass(frozen=True)
class SubscriptionSpec:
    package: str
    source: str
    source_namespace: str
    channel: str = ""
    starting_csv: str = ""
    approval: str = "Automatic"

    def body(self) -> JSON:
        spec: JSON = {
            "name": self.package,
            "source": self.source,
            "sourceNamespace": self.source_namespace,
            "installPlanApproval": self.approval,
        }
        if self.channel:
            spec["channel"] = self.channel
        if self.starting_csv:
            spec["startingCSV"] = self.starting_csv
        return {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": _meta(self.package),
            "spec": spec,
        }


def ensure_subscription(kube: Any, namespace: str, spec: SubscriptionSpec) -> JSON:
    found = kube.get_or_none(_path(namespace, "subscriptions", spec.package))
    if found is not None:
        return found
    return kube.create(_path(namespace, "subscriptions"), spec.body())


def subscribe(
    kube: Any,
    namespace: str,
    spec: SubscriptionSpec,
    mode: InstallMode,
    *,
    address: str = "",
    image: str = "",
) -> JSON:
    """The namespace, its CatalogSource (``spec.source``), its OperatorGroup for ``mode``
    and the Subscription, each created when missing; returns the OperatorGroup."""
    if kube.get_or_none(f"/api/v1/namespaces/{namespace}") is None:
        kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    ensure_catalog_source(kube, namespace, spec.source, address=address, image=image)
    group = ensure_operator_group(kube, namespace, mode)
    ensure_subscription(kube, namespace, spec)
    return group


def label_selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


# -- following the install ---------------------------------------------------------------


@dataclass
class Progress:
    """Where the install is: the latest object states, for display and for errors."""

    subscription: JSON = field(default_factory=dict)
    install_plan: JSON = field(default_factory=dict)
    csv: JSON = field(default_factory=dict)
    approved: list[str] = field(default_factory=list)
    # OLM v0.18 reports resolution failures as Warning events on the Namespace object
    resolution_failed: str = ""
    resolution_failed_since: float | None = None

    def line(self) -> str:
        sub = (self.subscription.get("status") or {}).get("state") or "resolving"
        plan = (self.install_plan.get("status") or {}).get("phase") or "-"
        csv = self.csv.get("metadata", {}).get("name", "-")
        phase = (self.csv.get("status") or {}).get("phase") or "-"
        return f"subscription {sub}, install plan {plan}, {csv} {phase}"


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind and item.get("status") == "True":
            return item
    return None


def follow(
    kube: Any,
    namespace: str,
    package: str,
    *,
    target_csv: str = "",
    timeout: float = 300.0,
    on_change: Callable[[str], None] | None = None,
    poll: float = 0.5,
) -> Progress:
    """Follow the Subscription until its CSV (``target_csv`` when given) is Succeeded,
    approving the InstallPlan that installs it when approval is Manual. Raises
    :class:`InstallFailed` with OLM's own words when it fails or times out."""
    progress = Progress()
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        _refresh(kube, namespace, package, progress)
        line = progress.line()
        if on_change and line != last:
            on_change(line)
            last = line
        failure = _failure(progress)
        if failure:
            raise InstallFailed(f"{package}: {failure}")
        _approve_if_wanted(kube, namespace, progress, target_csv)
        csv_name = progress.csv.get("metadata", {}).get("name", "")
        phase = (progress.csv.get("status") or {}).get("phase")
        if phase == "Succeeded" and (not target_csv or csv_name == target_csv):
            return progress
        time.sleep(poll)
    raise InstallFailed(
        f"{package}: not installed after {timeout:g}s ({progress.line()})"
        + "".join(f"; {line}" for line in explain(kube, namespace, progress))
    )


def explain(kube: Any, namespace: str, progress: Progress) -> list[str]:
    """What OLM said so far: the Subscription's true conditions and the namespace's
    recent Warning events (OLM reports resolution trouble as events too)."""
    lines = [
        f"{c.get('type')}: {c.get('message') or c.get('reason')}"
        for c in (progress.subscription.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    ]
    try:
        events = kube.get(f"/api/v1/namespaces/{namespace}/events").get("items", [])
    except ApiException:
        events = []
    warnings = [e for e in events if e.get("type") == "Warning"]
    warnings.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    lines += [f"{e.get('reason')}: {e.get('message')}" for e in warnings[-3:]]
    return lines


def _refresh(kube: Any, namespace: str, package: str, progress: Progress) -> None:
    progress.subscription = kube.get_or_none(_path(namespace, "subscriptions", package)) or {}
    status = progress.subscription.get("status") or {}
    plan_name = (status.get("installPlanRef") or {}).get("name") or (
        status.get("installplan") or {}
    ).get("name")
    if plan_name:
        progress.install_plan = kube.get_or_none(_path(namespace, "installplans", plan_name)) or {}
    csv_name = status.get("installedCSV") or status.get("currentCSV")
    if csv_name:
        progress.csv = kube.get_or_none(_path(namespace, "clusterserviceversions", csv_name)) or {}
    if not progress.install_plan:
        message = _namespace_resolution_failure(kube, namespace)
        if message and progress.resolution_failed_since is None:
            progress.resolution_failed_since = time.monotonic()
        progress.resolution_failed = message


def _namespace_resolution_failure(kube: Any, namespace: str) -> str:
    """The latest ResolutionFailed event OLM posted on the namespace ("" when none)."""
    selector = (
        f"involvedObject.kind=Namespace,involvedObject.name={namespace},reason=ResolutionFailed"
    )
    try:
        events = kube.get("/api/v1/events", fieldSelector=selector).get("items", [])
    except ApiException:
        return ""
    events.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    return str(events[-1].get("message") or "").strip().rstrip(",") if events else ""


def _failure(progress: Progress) -> str | None:
    resolution = _condition(progress.subscription, "ResolutionFailed")
    if resolution:
        return f"resolution failed: {resolution.get('message') or resolution.get('reason')}"
    settled = progress.resolution_failed_since is not None and (
        time.monotonic() - progress.resolution_failed_since >= RESOLUTION_GRACE
    )
    if progress.resolution_failed and settled and not progress.install_plan:
        return f"resolution failed: {progress.resolution_failed}"
    plan_status = progress.install_plan.get("status") or {}
    if plan_status.get("phase") == "Failed":
        installed = next(
            (c for c in plan_status.get("conditions") or [] if c.get("type") == "Installed"), {}
        )
        return f"install plan {progress.install_plan['metadata']['name']} failed: {installed.get('reason')}: {installed.get('message')}"
    csv_status = progress.csv.get("status") or {}
    if csv_status.get("phase") == "Failed":
        return f"{progress.csv['metadata']['name']} failed: {csv_status.get('reason')}: {csv_status.get('message')}"
    return None


def _approve_if_wanted(kube: Any, namespace: str, progress: Progress, target_csv: str) -> None:
    plan = progress.install_plan
    if (plan.get("status") or {}).get("phase") != "RequiresApproval" or plan.get("spec", {}).get(
        "approved"
    ):
        return
    names = plan.get("spec", {}).get("clusterServiceVersionNames") or []
    if target_csv and target_csv not in names:
        return  # a plan for another version (an upgrade the user did not ask for)
    name = plan["metadata"]["name"]
    try:
        kube.patch(_path(namespace, "installplans", name), {"spec": {"approved": True}})
    except ApiException as exc:
        if exc.status != 409:  # a conflict is retried on the next poll
            raise
        return
    progress.approved.append(name)


def uninstall(kube: Any, namespace: str, package: str, *, delete_crds: bool = False) -> list[str]:
    """Delete the Subscription and its CSV (and with ``delete_crds`` the CRDs the CSV
    owns), then the CatalogSource/OperatorGroup ``install`` created; what went."""
    removed: list[str] = []
    sub = kube.get_or_none(_path(namespace, "subscriptions", package))
    csv_name = ((sub or {}).get("status") or {}).get("installedCSV") or (
        (sub or {}).get("status") or {}
    ).get("currentCSV")
    owned: list[str] = []
    if csv_name:
        csv = kube.get_or_none(_path(namespace, "clusterserviceversions", csv_name)) or {}
        owned = [
            c["name"]
            for c in (csv.get("spec", {}).get("customresourcedefinitions") or {}).get("owned") or []
        ]
    if sub is not None:
        kube.delete(_path(namespace, "subscriptions", package))
        removed.append(f"Subscription {namespace}/{package}")
    if csv_name and kube.get_or_none(_path(namespace, "clusterserviceversions", csv_name)):
        kube.delete(_path(namespace, "clusterserviceversions", csv_name))
        removed.append(f"ClusterServiceVersion {namespace}/{csv_name}")
    if delete_crds:
        for crd in sorted(set(owned)):
            path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"
            if kube.get_or_none(path):
                kube.delete(path)
                removed.append(f"CustomResourceDefinition {crd}")
    selector = label_selector(CREATED_BY)
    for plural, version in (("catalogsources", "v1alpha1"), ("operatorgroups", "v1")):
        for item in kube.get(_path(namespace, plural, version=version), labelSelector=selector).get(
            "items", []
        ):
            kube.delete(_path(namespace, plural, item["metadata"]["name"], version=version))
            removed.append(f"{item['kind']} {namespace}/{item['metadata']['name']}")
    return removed
