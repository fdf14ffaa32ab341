"""InstallPlan execution: approval, then every step in order, as OLM's catalog operator.

RequiresApproval waits for ``spec.approved``; Installing applies the steps: the CSV is
created once (never updated), CRDs are created, or updated after :mod:`crdsafety`'s checks,
and waited for until Established; RBAC and the bundle's other objects are applied, the
namespaced ones owned by the CSV, the cluster-scoped ones carrying its owner labels. A
step of a kind OLM v0.18.3 does not apply (:data:`~olmtool.engine.steps.SUPPORTED_KINDS`)
is marked UnsupportedResource and fails the plan as invalid; nothing of it is created.

A failing plan is retried for ``RETRY_SECONDS`` from ``status.startTime`` (written when
execution starts, so the window survives an engine restart, as OLM keeps it), with
``status.message`` "retrying execution due to error: ..."; then it is Failed
(Installed=False, InstallComponentFailed, the error as message).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.engine.apply import Discovery, NotServed, apply
from olmtool.engine.crdsafety import UnsafeCRDUpdate, check_update, established
from olmtool.engine.objects import (
    CRDS,
    CSV_API_VERSION,
    JSON,
    V1ALPHA1,
    age,
    api_message,
    log,
    name_of,
    namespace_of,
    now,
    owner_labels,
    owner_reference,
    path,
    set_condition,
)
from olmtool.engine.steps import (
    INVALID_PLAN,
    SUPPORTED_KINDS,
    UNSUPPORTED_RESOURCE,
    step_object,
)

if TYPE_CHECKING:
    from olmtool.kube import Kube

RETRY_SECONDS = 60.0


class StepWaiting(Exception):
    """The step cannot finish yet (a CRD not yet Established): try again, no failure."""


class UnsupportedResource(Exception):
    """The step's kind is not one OLM applies: the plan is invalid."""


class InstallPlans:
    def __init__(self, kube: Kube, discovery: Discovery) -> None:
        self.kube = kube
        self.discovery = discovery

    def sync(self, plan: JSON) -> None:
        status = plan.get("status") or {}
        phase = status.get("phase", "")
        spec = plan.get("spec") or {}
        if phase == "RequiresApproval" and spec.get("approved"):
            self._write(plan, {**status, "phase": "Installing"})
        elif phase == "Installing":
            self._execute(plan)

    def _execute(self, plan: JSON) -> None:
        status = copy.deepcopy(plan.get("status") or {})
        status.setdefault("startTime", now())
        namespace = namespace_of(plan)
        csvs: dict[str, JSON] = {}
        for step in status.get("plan") or []:
            try:
                step["status"] = self._run_step(step, namespace, csvs)
            except StepWaiting:
                self._write(plan, status)
                return
            except UnsupportedResource:
                step["status"] = UNSUPPORTED_RESOURCE
                self._failed_step(plan, status, INVALID_PLAN)
                return
            except (ApiException, NotServed, UnsafeCRDUpdate) as exc:
                message = api_message(exc) if isinstance(exc, ApiException) else str(exc)
                self._failed_step(plan, status, message)
                return
        status["phase"] = "Complete"
        status.pop("message", None)
        status["conditions"] = set_condition(
            status.get("conditions") or [], {"type": "Installed", "status": "True"}
        )
        log.info("InstallPlan %s/%s complete", namespace, name_of(plan))
        self._write(plan, status)

    def _failed_step(self, plan: JSON, status: JSON, message: str) -> None:
        if age(status.get("startTime")) < RETRY_SECONDS:
            status["message"] = f"retrying execution due to error: {message}"
            self._write(plan, status)
            return
        status["phase"] = "Failed"
        status["message"] = message
        status["conditions"] = set_condition(
            status.get("conditions") or [],
            {
                "type": "Installed",
                "status": "False",
                "reason": "InstallComponentFailed",
                "message": message,
            },
        )
        log.warning("InstallPlan %s/%s failed: %s", namespace_of(plan), name_of(plan), message)
        self._write(plan, status)

    def _run_step(self, step: JSON, namespace: str, csvs: dict[str, JSON]) -> str:
        obj = step_object(step)
        kind = obj.get("kind")
        resolving = step["resolving"]
        if kind not in SUPPORTED_KINDS:
            raise UnsupportedResource(kind)
        if kind == "ClusterServiceVersion":
            csvs[resolving] = self._ensure_csv(obj, namespace)
            return step["status"] if step["status"] == "Present" else "Created"
        if kind == "CustomResourceDefinition":
            return self._apply_crd(obj)
        csv = csvs.get(resolving) or self._csv(namespace, resolving)
        namespaced = self.discovery.resource(obj["apiVersion"], kind).namespaced
        if not namespaced:
            # OLM labels what a CSV owns across namespaces; the finalizer deletes it
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(owner_labels(csv))
        elif csv is not None:
            obj["metadata"]["ownerReferences"] = [owner_reference(csv)]
        if kind in ("RoleBinding", "ClusterRoleBinding"):
            for subject in obj.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount" and not subject.get("namespace"):
                    subject["namespace"] = namespace
        created, _ = apply(self.kube, self.discovery, obj, namespace)
        return created

    def _csv(self, namespace: str, name: str) -> JSON:
        found = self.kube.get_or_none(path(V1ALPHA1, "clusterserviceversions", namespace, name))
        if found is None:
            raise StepWaiting(f"CSV {name} not created yet")
        return found

    def _ensure_csv(self, csv: JSON, namespace: str) -> JSON:
        existing = self.kube.get_or_none(
            path(V1ALPHA1, "clusterserviceversions", namespace, name_of(csv))
        )
        if existing is not None:
            return existing
        body = {**csv, "apiVersion": CSV_API_VERSION}
        body["metadata"] = {**body.get("metadata", {}), "namespace": namespace}
        return self.kube.create(path(V1ALPHA1, "clusterserviceversions", namespace), body)

    def _apply_crd(self, crd: JSON) -> str:
        version = crd.get("apiVersion", "apiextensions.k8s.io/v1").rpartition("/")[2]
        base = f"/apis/apiextensions.k8s.io/{version}/customresourcedefinitions"
        existing = self.kube.get_or_none(f"{CRDS}/{name_of(crd)}")
        if existing is None:
            self.kube.create(base, crd)
            result = "Created"
        else:
            check_update(self.kube, existing, _as_v1(crd, version))
            current = self.kube.get(f"{base}/{name_of(crd)}")
            body = copy.deepcopy(crd)
            body["metadata"] = {
                **current["metadata"],
                **{
                    k: v
                    for k, v in crd.get("metadata", {}).items()
                    if k in ("labels", "annotations")
                },
            }
            self.kube.put(f"{base}/{name_of(crd)}", body)
            result = "Present"
        if not established(self.kube.get(f"{CRDS}/{name_of(crd)}")):
            raise StepWaiting(f"CRD {name_of(crd)} is not Established yet")
        return result

    def _write(self, plan: JSON, status: JSON) -> None:
        if status == plan.get("status"):
            return
        body = {**plan, "status": status}
        self.kube.put(
            path(V1ALPHA1, "installplans", namespace_of(plan), name_of(plan)) + "/status", body
        )


def _as_v1(crd: JSON, version: str) -> JSON:
    """A v1beta1 CRD's versions in v1 shape, enough for the safety checks."""
    if version == "v1":
        return crd
    spec = copy.deepcopy(crd.get("spec") or {})
    schema = (spec.get("validation") or {}).get("openAPIV3Schema")
    versions = spec.get("versions") or [{"name": spec.get("version"), "served": True}]
    for entry in versions:
        entry.setdefault("schema", {"openAPIV3Schema": schema} if schema else {})
    spec["versions"] = versions
    return {**crd, "spec": spec}
