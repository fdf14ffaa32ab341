"""Installing an operator through OLM's API, as a user of any cluster with OLM would:
a CatalogSource, an OperatorGroup and a Subscription, then following the Subscription's
InstallPlan and CSV until the operator runs or OLM says why it cannot.

The same calls work against real OLM and against olmtool's engine: only
``operators.coreos.com`` objects are read and written. Objects this module creates carry
the label ``olmtool.dev/created-by: install`` so ``uninstall`` removes only those.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from olmtool.errors import ArgumentError, OlmtoolError
from olmtool.kube import JSON

if TYPE_CHECKING:
    from olmtool.kube import Kube

GROUP = "/apis/operators.coreos.com"
CREATED_BY = {"olmtool.dev/created-by": "install"}
MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
# a resolution failure must outlast the CatalogSource's first connection before it counts
RESOLUTION_GRACE = 15.0
# a CatalogSource in TRANSIENT_FAILURE this long, before any InstallPlan, is unreachable
CATALOG_GRACE = RESOLUTION_GRACE
# an operator Pod whose image the registry does not have, this long, will not start
PULL_GRACE = 10.0
# pull errors that do not clear by themselves (the registry's 404, in containerd's words
# "...: not found", or the registry's own codes)
PERMANENT_PULL = re.compile(r"\b404\b|not found|manifest unknown|name unknown", re.IGNORECASE)
PULL_WAITING = ("ErrImagePull", "ImagePullBackOff")
# CSV phases in which its Deployments (and their Pods) exist and are not yet all ready
DEPLOYING = ("InstallReady", "Installing", "Failed")


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


@dataclass(frozen=True)
class Made:
    """An object :func:`subscribe` created (not one it found): what a failed install
    removes again."""

    kind: str
    namespace: str
    name: str
    path: str

    def __str__(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name}"
            if self.namespace
            else f"{self.kind} {self.name}"
        )


def _create(kube: Kube, collection: str, body: JSON, made: list[Made] | None) -> JSON:
    """Create ``body`` in ``collection``; recorded in ``made`` once the server has it."""
    created = kube.create(collection, body)
    if made is not None:
        meta = created.get("metadata") or body["metadata"]
        name = meta.get("name") or body["metadata"]["name"]
        made.append(Made(body["kind"], meta.get("namespace", ""), name, f"{collection}/{name}"))
    return created


def ensure_catalog_source(
    kube: Kube,
    namespace: str,
    name: str,
    address: str = "",
    image: str = "",
    *,
    made: list[Made] | None = None,
) -> JSON:
    """The CatalogSource ``name`` serving ``address`` (host:port) or ``image``; an existing
    one with the same source is reused, a different one is an error. A created one is
    added to ``made``."""
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
    return _create(
        kube,
        _path(namespace, "catalogsources"),
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": _meta(name),
            "spec": spec,
        },
        made,
    )


def ensure_operator_group(
    kube: Kube, namespace: str, mode: InstallMode, *, made: list[Made] | None = None
) -> JSON:
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
    return _create(kube, _path(namespace, "operatorgroups", version="v1"), body, made)


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


def ensure_subscription(
    kube: Kube, namespace: str, spec: SubscriptionSpec, *, made: list[Made] | None = None
) -> JSON:
    found = kube.get_or_none(_path(namespace, "subscriptions", spec.package))
    if found is not None:
        return found
    return _create(kube, _path(namespace, "subscriptions"), spec.body(), made)


def subscribe(
    kube: Kube,
    namespace: str,
    spec: SubscriptionSpec,
    mode: InstallMode,
    *,
    address: str = "",
    image: str = "",
    made: list[Made] | None = None,
) -> JSON:
    """The namespace, its CatalogSource (``spec.source``), its OperatorGroup for ``mode``
    and the Subscription, each created when missing (and then added to ``made``, in
    order); returns the OperatorGroup."""
    if kube.get_or_none(f"/api/v1/namespaces/{namespace}") is None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        _create(kube, "/api/v1/namespaces", body, made)
    ensure_catalog_source(kube, namespace, spec.source, address=address, image=image, made=made)
    group = ensure_operator_group(kube, namespace, mode, made=made)
    ensure_subscription(kube, namespace, spec, made=made)
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
    # the Subscription's CatalogSource (read until an InstallPlan exists) and since when
    # it has been in TRANSIENT_FAILURE
    catalog_source: JSON = field(default_factory=dict)
    catalog_failing_since: float | None = None
    # (pod, container) of the CSV's Deployments waiting on an image the registry does not
    # have: since when, and the pull error seen
    pulls_failing: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)

    def line(self) -> str:
        sub = (self.subscription.get("status") or {}).get("state") or "resolving"
        plan = (self.install_plan.get("status") or {}).get("phase") or "-"
        csv = self.csv.get("metadata", {}).get("name", "-")
        phase = (self.csv.get("status") or {}).get("phase") or "-"
        catalog = _catalog_state(self.catalog_source) if not self.install_plan else ""
        shown = f", catalog {catalog}" if catalog and catalog != "READY" else ""
        return f"subscription {sub}, install plan {plan}, {csv} {phase}{shown}"


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind and item.get("status") == "True":
            return item
    return None


def follow(
    kube: Kube,
    namespace: str,
    package: str,
    *,
    target_csv: str = "",
    timeout: float = 300.0,
    on_change: Callable[[str], None] | None = None,
    poll: float = 0.5,
    deadline: float | None = None,
) -> Progress:
    """Follow the Subscription until its CSV (``target_csv`` when given) is Succeeded,
    approving the InstallPlan that installs it when approval is Manual. Raises
    :class:`InstallFailed` with OLM's own words when it fails or times out (after
    ``timeout`` seconds, or at the ``time.monotonic()`` ``deadline`` when given), and
    as soon as it cannot succeed: the CatalogSource unreachable (TRANSIENT_FAILURE for
    :data:`CATALOG_GRACE` before any InstallPlan), the CSV's ``minKubeVersion`` above the
    server's, an operator Pod whose image the registry does not have (for
    :data:`PULL_GRACE`)."""
    progress = Progress()
    deadline = time.monotonic() + timeout if deadline is None else deadline
    last = ""
    while time.monotonic() < deadline:
        _refresh(kube, namespace, package, progress)
        line = progress.line()
        if on_change and line != last:
            on_change(line)
            last = line
        failure = _failure(progress, kube, namespace)
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


def explain(kube: Kube, namespace: str, progress: Progress) -> list[str]:
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
    latest: list[str] = []  # each message once (an event repeats), the latest last
    for event in warnings:
        said = f"{event.get('reason')}: {event.get('message')}"
        if said in latest:
            latest.remove(said)
        latest.append(said)
    return [*lines, *(said for said in latest[-3:] if said not in lines)]


def _refresh(kube: Kube, namespace: str, package: str, progress: Progress) -> None:
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
        _refresh_catalog(kube, progress)
    if (progress.csv.get("status") or {}).get("phase") in DEPLOYING:
        _refresh_pulls(kube, namespace, progress)


def _refresh_catalog(kube: Kube, progress: Progress) -> None:
    spec = progress.subscription.get("spec") or {}
    name, namespace = spec.get("source"), spec.get("sourceNamespace")
    if not name or not namespace:
        return
    progress.catalog_source = kube.get_or_none(_path(namespace, "catalogsources", name)) or {}
    if _catalog_state(progress.catalog_source) != "TRANSIENT_FAILURE":
        progress.catalog_failing_since = None
    elif progress.catalog_failing_since is None:
        progress.catalog_failing_since = time.monotonic()


def _catalog_state(source: JSON) -> str:
    connection = (source.get("status") or {}).get("connectionState") or {}
    return str(connection.get("lastObservedState") or "")


def _refresh_pulls(kube: Kube, namespace: str, progress: Progress) -> None:
    """Note the operator's containers waiting on an image the registry does not have
    (kubelet alternates ErrImagePull, whose message says why, and ImagePullBackOff)."""
    install = (progress.csv.get("spec", {}).get("install") or {}).get("spec") or {}
    waiting: dict[tuple[str, str], str] = {}
    for deployment in install.get("deployments") or []:
        labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels")
        if not labels:
            continue
        pods = kube.get(
            f"/api/v1/namespaces/{namespace}/pods", labelSelector=label_selector(labels)
        ).get("items", [])
        for pod in pods:
            status = pod.get("status") or {}
            for container in (status.get("initContainerStatuses") or []) + (
                status.get("containerStatuses") or []
            ):
                state = (container.get("state") or {}).get("waiting") or {}
                if state.get("reason") in PULL_WAITING:
                    key = (pod["metadata"]["name"], str(container.get("name")))
                    waiting[key] = str(state.get("message") or "")
    now = time.monotonic()
    for key in list(progress.pulls_failing):
        if key not in waiting:
            del progress.pulls_failing[key]
    for key, message in waiting.items():
        if key not in progress.pulls_failing and PERMANENT_PULL.search(message):
            progress.pulls_failing[key] = (now, message)


def _pull_failure(kube: Kube, namespace: str, progress: Progress) -> str | None:
    """The pull error of a container that has waited on a missing image for PULL_GRACE,
    in the words of the Pod's latest Failed event (else its waiting message)."""
    now = time.monotonic()
    for (pod, container), (since, message) in sorted(progress.pulls_failing.items()):
        if now - since < PULL_GRACE:
            continue
        selector = f"involvedObject.kind=Pod,involvedObject.name={pod},reason=Failed"
        try:
            events = kube.get(f"/api/v1/namespaces/{namespace}/events", fieldSelector=selector).get(
                "items", []
            )
        except ApiException:
            events = []
        events = [e for e in events if PERMANENT_PULL.search(str(e.get("message") or ""))]
        events.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        said = str(events[-1].get("message")) if events else message
        name = progress.csv.get("metadata", {}).get("name", "")
        return f"{name} cannot start: pod {namespace}/{pod}, container {container}: {said}"
    return None


def _catalog_failure(progress: Progress) -> str | None:
    since = progress.catalog_failing_since
    if progress.install_plan or since is None or time.monotonic() - since < CATALOG_GRACE:
        return None
    source = progress.catalog_source
    meta, spec = source.get("metadata") or {}, source.get("spec") or {}
    status = source.get("status") or {}
    address = (
        (status.get("connectionState") or {}).get("address")
        or spec.get("address")
        or spec.get("image", "")
    )
    said = f" ({status['message']})" if status.get("message") else ""
    return (
        f"catalog source {meta.get('namespace')}/{meta.get('name')} is unreachable "
        f"(TRANSIENT_FAILURE): {address}{said}"
    )


def _unmet_kube_version(csv: JSON) -> str | None:
    """OLM's message when the CSV waits for a Kubernetes version above the server's
    (RequirementsNotMet, the CSV's own requirement entry): that does not change."""
    status = csv.get("status") or {}
    if status.get("phase") != "Pending" or status.get("reason") != "RequirementsNotMet":
        return None
    for entry in status.get("requirementStatus") or []:
        if entry.get("kind") == "ClusterServiceVersion" and entry.get("status") != "Present":
            return str(entry.get("message") or "minKubeVersion is above the server's version")
    return None


def _namespace_resolution_failure(kube: Kube, namespace: str) -> str:
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


def _failure(progress: Progress, kube: Kube = None, namespace: str = "") -> str | None:
    catalog = _catalog_failure(progress)
    if catalog:
        return catalog
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
    unmet = _unmet_kube_version(progress.csv)
    if unmet:
        return f"{progress.csv['metadata']['name']} cannot install: RequirementsNotMet: {unmet}"
    if kube is not None and progress.pulls_failing:
        return _pull_failure(kube, namespace, progress)
    return None


def _approve_if_wanted(kube: Kube, namespace: str, progress: Progress, target_csv: str) -> None:
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
