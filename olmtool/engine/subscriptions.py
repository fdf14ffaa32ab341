"""Subscriptions: resolve each namespace, create its InstallPlan, keep the status current.

One resolution per namespace (:func:`olmtool.olm.resolve_namespace`) over the
CatalogSources the namespace sees (its own and the global namespace's). What it installs
becomes one InstallPlan for all CSVs at once (Manual if any Subscription there is Manual),
owned by the namespace's Subscriptions; a plan for the same CSVs is never made twice.
Failures become the ResolutionFailed condition on every Subscription of the namespace and
a Warning event. Subscription status follows OLM: ``currentCSV`` / ``installedCSV`` /
``state`` (UpgradePending, AtLatestKnown, UpgradeFailed), ``installPlanRef``, conditions.
"""

from __future__ import annotations

import copy
import re
import secrets
import string
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.catalog.model import GVK
from olmtool.engine.catalogs import Catalogs
from olmtool.engine.objects import (
    COPIED_FROM,
    JSON,
    V1ALPHA1,
    api_message,
    component_label,
    drop_condition,
    emit_event,
    labels_of,
    log,
    name_of,
    namespace_of,
    now,
    owner_reference,
    path,
    set_condition,
)
from olmtool.engine.steps import build_steps, dependency_subscription
from olmtool.errors import OlmtoolError
from olmtool.olm import (
    CatalogSourceUnavailable,
    InstalledCSV,
    ResolvedBundle,
    Subscription,
    resolve_namespace,
)

if TYPE_CHECKING:
    from olmtool.kube import Kube

_ALPHABET = string.ascii_lowercase + string.digits
# after a refused InstallPlan a namespace waits 1 s, 2 s, ... up to this before the next try
MAX_BACKOFF = 60.0
_PLAN_NAME = re.compile(r"\binstall-[a-z0-9]{5}\b")


@dataclass
class Namespace:
    """What one namespace holds, as read this round."""

    name: str
    subscriptions: list[JSON]
    csvs: list[JSON]
    plans: list[JSON]


def installed_csvs(csvs: Iterable[JSON]) -> list[InstalledCSV]:
    """The namespace's own CSVs (not copies) as the resolver reads them."""
    found = []
    for csv in csvs:
        if COPIED_FROM in labels_of(csv):
            continue
        spec = csv.get("spec") or {}
        owned = ((spec.get("customresourcedefinitions") or {}).get("owned")) or []
        provides = tuple(
            (
                str(o.get("name", "")).partition(".")[2],
                str(o.get("version", "")),
                str(o.get("kind", "")),
            )
            for o in owned
        )
        found.append(InstalledCSV(name_of(csv), str(spec.get("version") or ""), "", provides))
    return found


class Subscriptions:
    def __init__(self, kube: Kube, catalogs: Catalogs, global_namespace: str) -> None:
        self.kube = kube
        self.catalogs = catalogs
        self.global_namespace = global_namespace
        self._warned: dict[str, str] = {}
        # namespace -> (monotonic time of the next try, current delay)
        self._backoff: dict[str, tuple[float, float]] = {}

    def sync(self, namespace: Namespace, existing_apis: set[GVK]) -> None:
        retry_at, _ = self._backoff.get(namespace.name, (0.0, 0.0))
        if time.monotonic() < retry_at:
            return  # the last InstallPlan was refused: no hot loop on a lasting refusal
        subs = sorted(namespace.subscriptions, key=name_of)
        csv_names = {name_of(c) for c in namespace.csvs if COPIED_FROM not in labels_of(c)}
        health = self._catalog_health(namespace.name)
        inputs = [self._resolver_input(sub, csv_names, namespace) for sub in subs]
        if not self._all_known(subs):
            for sub in subs:
                self._write(sub, self._status(sub, health, namespace.plans, None))
            return
        if self._installing(inputs, namespace):
            # OLM resolves the next upgrade once the installed CSV has succeeded
            for sub, wanted in zip(subs, inputs, strict=True):
                status = self._status(sub, health, namespace.plans, None)
                self._write(sub, self._with_csvs(status, wanted, None, csv_names))
            return
        resolution = resolve_namespace(
            namespace.name,
            self.catalogs.visible(namespace.name, self.global_namespace),
            inputs,
            installed_csvs(namespace.csvs),
            existing_apis,
            global_namespace=self.global_namespace,
        )
        if resolution.failure is not None:
            self._resolution_failed(
                namespace, subs, health, resolution.failure.reason, resolution.failure.message
            )
            return
        plan = None
        if resolution.bundles:
            try:
                plan = self._plan_for(namespace, subs, resolution.bundles)
            except (CatalogSourceUnavailable, OlmtoolError, ApiException, StopIteration) as exc:
                message = api_message(exc) if isinstance(exc, ApiException) else str(exc)
                self._back_off(namespace.name)
                self._resolution_failed(
                    namespace, subs, health, "ErrorPreventedResolution", message
                )
                return
        self._backoff.pop(namespace.name, None)
        self._warned.pop(namespace.name, None)
        for sub, wanted in zip(subs, inputs, strict=True):
            bundle = resolution.next_for(name_of(sub))
            status = self._status(sub, health, namespace.plans, plan if bundle else None)
            status = self._with_csvs(status, wanted, bundle, csv_names)
            self._write(sub, status)

    def _back_off(self, namespace: str) -> None:
        _, delay = self._backoff.get(namespace, (0.0, 0.0))
        delay = min(MAX_BACKOFF, max(1.0, delay * 2))
        self._backoff[namespace] = (time.monotonic() + delay, delay)

    def _installing(self, inputs: list[Subscription], namespace: Namespace) -> bool:
        """Whether a Subscription's installed CSV is still on its way to Succeeded."""
        phases = {
            name_of(c): (c.get("status") or {}).get("phase", "")
            for c in namespace.csvs
            if COPIED_FROM not in labels_of(c)
        }
        return any(
            sub.installed_csv
            and phases.get(sub.installed_csv) in ("", "Pending", "InstallReady", "Installing")
            for sub in inputs
        )

    # --- inputs -----------------------------------------------------------------------------

    def _resolver_input(self, sub: JSON, csv_names: set[str], namespace: Namespace) -> Subscription:
        spec = sub.get("spec") or {}
        status = sub.get("status") or {}
        installed = status.get("installedCSV") or ""
        current = status.get("currentCSV") or ""
        if installed not in csv_names:
            installed = ""  # replaced (and deleted) or removed by hand
        if current in csv_names:
            installed = current  # the CSV exists: OLM records it as installed
        if not installed and not current:
            installed = self._adoptable(spec, csv_names)
        return Subscription(
            name=name_of(sub),
            package=str(spec.get("name") or ""),
            source=str(spec.get("source") or ""),
            source_namespace=str(spec.get("sourceNamespace") or namespace.name),
            channel=str(spec.get("channel") or ""),
            starting_csv=str(spec.get("startingCSV") or ""),
            installed_csv=installed,
        )

    def _adoptable(self, spec: JSON, csv_names: set[str]) -> str:
        """A CSV already in the namespace that is a bundle of the Subscription's package."""
        state = self.catalogs.state_of(
            str(spec.get("sourceNamespace") or ""), str(spec.get("source") or "")
        )
        if state is None or state.config is None:
            return ""
        names = {b.name for b in state.config.bundles if b.package == spec.get("name")}
        matches = sorted(names & csv_names)
        return matches[-1] if matches else ""

    def _catalog_health(self, namespace: str) -> list[JSON]:
        """catalogHealth: every CatalogSource the namespace sees. As in OLM v0.18, a source
        is healthy once its registry service is recorded, connected or not (real OLM was
        seen calling a source nobody serves healthy)."""
        states = [
            s
            for s in self.catalogs.sources.values()
            if s.namespace in (namespace, self.global_namespace)
        ]
        return [
            {
                "catalogSourceRef": {
                    "apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "CatalogSource",
                    "name": state.name,
                    "namespace": state.namespace,
                },
                "healthy": bool(state.address) or state.usable or state.state != "",
            }
            for state in sorted(states, key=lambda s: (s.namespace, s.name))
        ]

    def _all_known(self, subs: list[JSON]) -> bool:
        """Every Subscription's catalog has been read at least once (resolution can run)."""
        for sub in subs:
            spec = sub.get("spec") or {}
            state = self.catalogs.state_of(
                str(spec.get("sourceNamespace") or namespace_of(sub)), str(spec.get("source") or "")
            )
            if state is None or not state.usable:
                return False
        return True

    # --- InstallPlans ----------------------------------------------------------------------

    def _plan_for(
        self, namespace: Namespace, subs: list[JSON], bundles: list[ResolvedBundle]
    ) -> JSON:
        names = sorted(b.name for b in bundles)
        for plan in namespace.plans:
            if sorted((plan.get("spec") or {}).get("clusterServiceVersionNames") or []) == names:
                return plan
        manual = any((s.get("spec") or {}).get("installPlanApproval") == "Manual" for s in subs)
        steps = []
        for bundle in bundles:
            manifests = self.catalogs.manifests(bundle.catalog_namespace, bundle.catalog, bundle)
            properties = self.catalogs.properties(bundle)
            generated = None
            if not bundle.subscription:
                approval = "Manual" if manual else "Automatic"
                generated = dependency_subscription(bundle, namespace.name, approval)
            steps += build_steps(bundle, manifests, properties, generated)
        first = bundles[0]
        body = {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "InstallPlan",
            "metadata": {
                "name": "install-" + "".join(secrets.choice(_ALPHABET) for _ in range(5)),
                "namespace": namespace.name,
                "ownerReferences": [owner_reference(s) for s in subs],
                "labels": {component_label(b.package, namespace.name): "" for b in bundles},
            },
            "spec": {
                "approval": "Manual" if manual else "Automatic",
                "approved": not manual,
                "clusterServiceVersionNames": names,
                "generation": len(namespace.plans) + 1,
                "source": first.catalog,
                "sourceNamespace": first.catalog_namespace,
            },
        }
        created = self.kube.create(path(V1ALPHA1, "installplans", namespace.name), body)
        catalogs = sorted({b.catalog for b in bundles})
        created["status"] = {
            "phase": "RequiresApproval" if manual else "Installing",
            "catalogSources": catalogs,
            "plan": steps,
            "conditions": [],
        }
        created = self.kube.put(
            path(V1ALPHA1, "installplans", namespace.name, name_of(created)) + "/status", created
        )
        namespace.plans.append(created)
        log.info(
            "InstallPlan %s/%s for %s (%s)",
            namespace.name,
            name_of(created),
            ", ".join(names),
            body["spec"]["approval"],
        )
        return created

    # --- status ----------------------------------------------------------------------------

    def _status(self, sub: JSON, health: list[JSON], plans: list[JSON], plan: JSON | None) -> JSON:
        status = copy.deepcopy(sub.get("status") or {})
        conditions = status.get("conditions") or []
        status["catalogHealth"] = [{**h, "lastUpdated": _kept_time(status, h)} for h in health]
        conditions = set_condition(conditions, _health_condition(sub, health))
        status["conditions"] = drop_condition(conditions, "ResolutionFailed")
        if plan is None:
            ref = (status.get("installPlanRef") or {}).get("name")
            plan = next((p for p in plans if name_of(p) == ref), None) if ref else None
            if plan is not None and (plan.get("status") or {}).get("phase") == "Complete":
                plan = None
        if plan is not None:
            status["installPlanRef"] = {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "InstallPlan",
                "name": name_of(plan),
                "namespace": namespace_of(plan),
                "resourceVersion": plan["metadata"].get("resourceVersion", ""),
                "uid": plan["metadata"]["uid"],
            }
            status["installplan"] = {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "InstallPlan",
                "name": name_of(plan),
                "uuid": plan["metadata"]["uid"],
            }
            status["installPlanGeneration"] = (plan.get("spec") or {}).get("generation", 1)
        status["conditions"] = _plan_conditions(status["conditions"], plan)
        return status

    def _with_csvs(
        self,
        status: JSON,
        wanted: Subscription,
        bundle: ResolvedBundle | None,
        csv_names: set[str],
    ) -> JSON:
        installed = wanted.installed_csv
        if installed:
            status["installedCSV"] = installed
        else:
            status.pop("installedCSV", None)
        failed = any(
            c.get("type") == "InstallPlanFailed" and c.get("status") == "True"
            for c in status["conditions"]
        )
        if bundle is not None:
            status["currentCSV"] = bundle.name
            status["state"] = "UpgradeFailed" if failed else "UpgradePending"
        elif installed:
            status["currentCSV"] = installed
            status["state"] = "AtLatestKnown"
        return status

    def _resolution_failed(
        self,
        namespace: Namespace,
        subs: list[JSON],
        health: list[JSON],
        reason: str,
        message: str,
    ) -> None:
        for sub in subs:
            status = self._status(sub, health, namespace.plans, None)
            status["conditions"] = set_condition(
                status["conditions"],
                {
                    "type": "ResolutionFailed",
                    "status": "True",
                    "reason": reason,
                    "message": message,
                },
            )
            self._write(sub, status)
        # one event per distinct failure: a refused plan's message names its random name
        seen = _PLAN_NAME.sub("install-*", message)
        if self._warned.get(namespace.name) != seen:
            self._warned[namespace.name] = seen
            log.warning("resolution failed in %s: %s", namespace.name, message)
            found = self.kube.get_or_none(f"/api/v1/namespaces/{namespace.name}")
            if found is not None:  # OLM v0.18 reports it on the Namespace
                found.update(apiVersion="v1", kind="Namespace")
                emit_event(self.kube, found, "ResolutionFailed", message)

    def _write(self, sub: JSON, status: JSON) -> None:
        old = sub.get("status") or {}
        if _comparable(old) == _comparable(status):
            return
        status["lastUpdated"] = now()
        body = {**sub, "status": status}
        try:
            self.kube.put(
                path(V1ALPHA1, "subscriptions", namespace_of(sub), name_of(sub)) + "/status", body
            )
        except ApiException as exc:
            if exc.status != 409:  # changed meanwhile: the next round writes again
                raise


def _health_condition(sub: JSON, health: list[JSON]) -> JSON:
    """CatalogSourcesUnhealthy as OLM v0.18's catalog health reconciler writes it: the
    verdict on the sources seen now (the targeted one missing or any unhealthy: True,
    UnhealthyCatalogSourceFound; else False, AllCatalogSourcesHealthy), whose reason is
    replaced by what changed since the Subscription's recorded ``catalogHealth``: more
    sources CatalogSourcesAdded, fewer CatalogSourcesDeleted, none before and now
    NoCatalogSourcesFound, the same number but different CatalogSourcesUpdated."""
    spec = sub.get("spec") or {}
    status = sub.get("status") or {}
    old = status.get("catalogHealth") or []
    previous = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "CatalogSourcesUnhealthy"),
        {},
    )
    target = (str(spec.get("sourceNamespace") or namespace_of(sub)), str(spec.get("source") or ""))
    found = {_ref_key(h): bool(h.get("healthy")) for h in health}
    message = str(previous.get("message") or "")
    if found.get(target) is False:
        message = f"targeted catalogsource {target[0]}/{target[1]} unhealthy"
    if target not in found or not all(found.values()):
        if target not in found:
            message = f"targeted catalogsource {target[0]}/{target[1]} missing"
        condition = {"status": "True", "reason": "UnhealthyCatalogSourceFound"}
    else:
        condition = {"status": "False", "reason": "AllCatalogSourcesHealthy"}
        message = "all available catalogsources are healthy"
    before = {_ref_key(h): bool(h.get("healthy")) for h in old}
    if len(found) > len(old):
        condition["reason"] = "CatalogSourcesAdded"
    elif len(found) < len(old):
        condition["reason"] = "CatalogSourcesDeleted"
    elif not found:
        condition["reason"] = "NoCatalogSourcesFound"
        message = "dependency resolution requires at least one catalogsource"
    elif found != before:
        condition["reason"] = "CatalogSourcesUpdated"
    return {"type": "CatalogSourcesUnhealthy", **condition, "message": message}


def _ref_key(health: JSON) -> tuple[str, str]:
    ref = health.get("catalogSourceRef") or {}
    return (str(ref.get("namespace") or ""), str(ref.get("name") or ""))


def _plan_conditions(conditions: list[JSON], plan: JSON | None) -> list[JSON]:
    conditions = drop_condition(
        drop_condition(conditions, "InstallPlanPending"), "InstallPlanFailed"
    )
    if plan is None:
        return conditions
    phase = (plan.get("status") or {}).get("phase", "")
    if phase in ("RequiresApproval", "Installing", "Planning", ""):
        return set_condition(
            conditions,
            {"type": "InstallPlanPending", "status": "True", "reason": phase or "Installing"},
        )
    if phase == "Failed":
        installed = next(
            (
                c
                for c in (plan.get("status") or {}).get("conditions") or []
                if c.get("type") == "Installed"
            ),
            {},
        )
        return set_condition(
            conditions,
            {
                "type": "InstallPlanFailed",
                "status": "True",
                "reason": installed.get("reason", "InstallComponentFailed"),
                "message": installed.get("message", (plan.get("status") or {}).get("message", "")),
            },
        )
    return conditions


def _kept_time(status: JSON, health: JSON) -> str:
    for old in status.get("catalogHealth") or []:
        if (
            old.get("catalogSourceRef") == health["catalogSourceRef"]
            and old.get("healthy") == health["healthy"]
        ):
            return str(old.get("lastUpdated") or now())
    return now()


def _comparable(status: JSON) -> JSON:
    """A status without its timestamps (a write only when something else changed)."""
    view = {k: v for k, v in status.items() if k != "lastUpdated"}
    view["conditions"] = [
        {k: v for k, v in c.items() if k not in ("lastTransitionTime", "lastUpdateTime")}
        for c in status.get("conditions") or []
    ]
    view["catalogHealth"] = [
        {k: v for k, v in h.items() if k != "lastUpdated"}
        for h in status.get("catalogHealth") or []
    ]
    if "installPlanRef" in view:
        view["installPlanRef"] = {
            k: v for k, v in view["installPlanRef"].items() if k != "resourceVersion"
        }
    return view
