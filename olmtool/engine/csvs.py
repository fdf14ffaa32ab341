"""The ClusterServiceVersion state machine, as OLM v0's olm operator runs it.

Each round, per CSV (copies are written by their original's round):

* deletion: remove copies and cluster RBAC (finalizer ``operators.coreos.com/csv-cleanup``);
* OperatorGroup: none -> Failed/NoOperatorGroup, several -> Failed/TooManyOperatorGroups,
  else the annotations ``olm.operatorGroup`` / ``olm.operatorNamespace`` /
  ``olm.targetNamespaces``, and install-mode support (Failed/UnsupportedOperatorGroup);
* phases: None -> Pending -> InstallReady -> Installing -> Succeeded, Succeeded ->
  Replacing when another CSV replaces it, Replacing -> Deleting once the replacement
  succeeded, then the CSV is deleted. A CSV replacing one that is not yet Replacing waits
  in Pending; a Succeeded CSV whose Deployments become unhealthy is Failed, and returns
  through Pending (NeedsReinstall) when it can install again.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubernetes.client.exceptions import ApiException

from olmtool.engine import deployments, requirements
from olmtool.engine.apply import Discovery
from olmtool.engine.groups import unsupported_message
from olmtool.engine.objects import (
    COPIED_FROM,
    CSV_FINALIZER,
    JSON,
    MAX_CONDITIONS,
    OPERATOR_GROUP,
    OPERATOR_NAMESPACE,
    TARGET_NAMESPACES,
    V1ALPHA1,
    V2,
    age,
    annotations_of,
    emit_event,
    labels_of,
    log,
    name_of,
    namespace_of,
    now,
    owner_reference,
    path,
)
from olmtool.engine.targets import delete_cluster_rbac, sync_copies, sync_rbac

if TYPE_CHECKING:
    from olmtool.kube import Kube

CSVS = "clusterserviceversions"
INSTALL_TIMEOUT = 300.0


@dataclass
class World:
    """What a CSV's round reads: the cluster's namespaces, groups, CSVs, Subscriptions."""

    namespaces: list[str]
    groups: dict[str, list[JSON]]  # namespace -> OperatorGroups
    targets: dict[tuple[str, str], list[str]]  # (namespace, group) -> target namespaces
    csvs: list[JSON]
    subscriptions: list[JSON]
    server_version: str
    deployments: dict[tuple[str, str], JSON] = field(default_factory=dict)

    def in_namespace(self, namespace: str) -> list[JSON]:
        return [c for c in self.csvs if namespace_of(c) == namespace]


class ClusterServiceVersions:
    def __init__(self, kube: Kube, discovery: Discovery) -> None:
        self.kube = kube
        self.discovery = discovery

    # --- one CSV ---------------------------------------------------------------------------

    def sync(self, csv: JSON, world: World) -> None:
        if COPIED_FROM in labels_of(csv):
            return
        if csv["metadata"].get("deletionTimestamp"):
            self._finalize(csv, world)
            return
        if CSV_FINALIZER not in (csv["metadata"].get("finalizers") or []):
            finalizers = [*(csv["metadata"].get("finalizers") or []), CSV_FINALIZER]
            csv = self._patch_meta(csv, {"finalizers": finalizers})
        namespace = namespace_of(csv)
        groups = world.groups.get(namespace, [])
        if not groups:
            self._phase(csv, "Failed", "NoOperatorGroup", "csv in namespace with no operatorgroups")
            return
        if len(groups) > 1:
            self._phase(
                csv,
                "Failed",
                "TooManyOperatorGroups",
                "csv created in namespace with multiple operatorgroups, can't pick one automatically",
            )
            return
        group = groups[0]
        targets = world.targets.get((namespace, name_of(group)), [])
        wanted = {
            OPERATOR_GROUP: name_of(group),
            OPERATOR_NAMESPACE: namespace,
            TARGET_NAMESPACES: ",".join(targets),
        }
        annotations = annotations_of(csv)
        if any(annotations.get(k) != v for k, v in wanted.items()):
            csv = self._patch_meta(csv, {"annotations": wanted})
        unsupported = unsupported_message(csv, namespace, targets)
        if unsupported is not None:
            if self._phase(csv, "Failed", "UnsupportedOperatorGroup", unsupported):
                emit_event(self.kube, csv, "UnsupportedOperatorGroup", unsupported)
            return
        phase = (csv.get("status") or {}).get("phase", "")
        handler = getattr(self, f"_{phase.lower() or 'none'}", None)
        if handler is not None:
            handler(csv, world, targets)
        if (csv.get("status") or {}).get("phase") in ("Succeeded", "Installing", "Failed"):
            copies = sync_copies(self.kube, csv, targets, world.namespaces, world.csvs)
            sync_rbac(self.kube, csv, targets, copies)

    def _none(self, csv: JSON, world: World, targets: list[str]) -> None:
        self._phase(csv, "Pending", "RequirementsUnknown", "requirements not yet checked")

    def _pending(self, csv: JSON, world: World, targets: list[str]) -> None:
        ensure_operator_condition(self.kube, csv)
        replaced = self._replaced(csv, world)
        if replaced is not None and (replaced.get("status") or {}).get("phase") not in (
            "Replacing",
            "Deleting",
        ):
            # OLM's Default upgrade strategy: a Failed CSV is never replaced
            self._phase(
                csv,
                "Pending",
                "RequirementsNotMet",
                f"waiting for {name_of(replaced)} to be replaced",
            )
            return
        if targets == [""]:
            sync_rbac(self.kube, csv, targets, {})  # cluster roles first: the checks read them
        met, statuses, _message = requirements.check(
            self.kube, self.discovery, csv, world.server_version
        )
        if not met:
            self._phase(
                csv,
                "Pending",
                "RequirementsNotMet",
                "one or more requirements couldn't be found",
                statuses,
            )
            return
        self._phase(
            csv,
            "InstallReady",
            "AllRequirementsMet",
            "all requirements found, attempting install",
            statuses,
        )

    def _installready(self, csv: JSON, world: World, targets: list[str]) -> None:
        config = self._subscription_config(csv, world)
        try:
            for entry in deployments.entries(csv):
                deployments.ensure(self.kube, csv, entry, config)
        except ApiException as exc:
            self._phase(
                csv,
                "Failed",
                "InstallComponentFailed",
                f"install strategy failed: {exc.status} {exc.reason}",
            )
            return
        self._phase(
            csv,
            "Installing",
            "InstallSucceeded",
            "waiting for install components to report healthy",
        )

    def _installing(self, csv: JSON, world: World, targets: list[str]) -> None:
        problem = self._health(csv, world)
        if problem is None:
            self._phase(
                csv, "Succeeded", "InstallSucceeded", "install strategy completed with no errors"
            )
        elif (
            "progress deadline" in problem
            or age((csv.get("status") or {}).get("lastTransitionTime")) > INSTALL_TIMEOUT
        ):
            self._phase(csv, "Failed", "InstallCheckFailed", problem)
        else:
            self._phase(csv, "Installing", "InstallWaiting", problem)

    def _succeeded(self, csv: JSON, world: World, targets: list[str]) -> None:
        replacement = self._replacement(csv, world)
        if replacement is not None:
            self._phase(
                csv, "Replacing", "BeingReplaced", f"being replaced by csv: {name_of(replacement)}"
            )
            return
        config = self._subscription_config(csv, world)
        for entry in deployments.entries(csv):  # drift (a changed annotation or config) is undone
            deployments.ensure(self.kube, csv, entry, config)
        problem = self._health(csv, world)
        if problem is not None:
            self._phase(csv, "Failed", "ComponentUnhealthy", problem)

    def _failed(self, csv: JSON, world: World, targets: list[str]) -> None:
        reason = (csv.get("status") or {}).get("reason", "")
        if reason in ("NoOperatorGroup", "TooManyOperatorGroups", "UnsupportedOperatorGroup"):
            self._phase(
                csv, "Pending", "NeedsReinstall", "installing: operator group is valid again"
            )
        elif (
            reason in ("ComponentUnhealthy", "InstallCheckFailed")
            and self._health(csv, world) is None
        ):
            self._phase(csv, "Pending", "NeedsReinstall", "calculated deployment install is bad")

    def _replacing(self, csv: JSON, world: World, targets: list[str]) -> None:
        replacement = self._replacement(csv, world)
        if replacement is None:
            self._phase(
                csv, "Succeeded", "InstallSucceeded", "install strategy completed with no errors"
            )
            return
        if (replacement.get("status") or {}).get("phase") == "Succeeded":
            self._phase(
                csv,
                "Deleting",
                "Replaced",
                "has been replaced by a newer ClusterServiceVersion that has successfully installed.",
            )

    def _deleting(self, csv: JSON, world: World, targets: list[str]) -> None:
        try:
            self.kube.delete(path(V1ALPHA1, CSVS, namespace_of(csv), name_of(csv)))
        except ApiException as exc:
            if exc.status != 404:
                raise
        log.info("CSV %s/%s replaced and deleted", namespace_of(csv), name_of(csv))

    # --- helpers ---------------------------------------------------------------------------

    def _replaced(self, csv: JSON, world: World) -> JSON | None:
        replaces = (csv.get("spec") or {}).get("replaces")
        if not replaces:
            return None
        return next(
            (
                c
                for c in world.in_namespace(namespace_of(csv))
                if name_of(c) == replaces and COPIED_FROM not in labels_of(c)
            ),
            None,
        )

    def _replacement(self, csv: JSON, world: World) -> JSON | None:
        return next(
            (
                c
                for c in world.in_namespace(namespace_of(csv))
                if (c.get("spec") or {}).get("replaces") == name_of(csv)
                and COPIED_FROM not in labels_of(c)
            ),
            None,
        )

    def _subscription_config(self, csv: JSON, world: World) -> JSON | None:
        for sub in world.subscriptions:
            status = sub.get("status") or {}
            if namespace_of(sub) == namespace_of(csv) and name_of(csv) in (
                status.get("installedCSV"),
                status.get("currentCSV"),
            ):
                return (sub.get("spec") or {}).get("config")
        return None

    def _health(self, csv: JSON, world: World) -> str | None:
        for entry in deployments.entries(csv):
            found = self.kube.get_or_none(
                f"{deployments.APPS}/namespaces/{namespace_of(csv)}/deployments/{entry.get('name')}"
            )
            problem = deployments.health(found)
            if problem is not None:
                return problem
        return None

    def _finalize(self, csv: JSON, world: World) -> None:
        for copy_ in world.csvs:
            if name_of(copy_) == name_of(csv) and labels_of(copy_).get(COPIED_FROM) == namespace_of(
                csv
            ):
                try:
                    self.kube.delete(path(V1ALPHA1, CSVS, namespace_of(copy_), name_of(copy_)))
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        delete_cluster_rbac(self.kube, csv)
        finalizers = [f for f in csv["metadata"].get("finalizers") or [] if f != CSV_FINALIZER]
        if finalizers != (csv["metadata"].get("finalizers") or []):
            self._patch_meta(csv, {"finalizers": finalizers})

    def _patch_meta(self, csv: JSON, metadata: JSON) -> JSON:
        patch = {"metadata": {**metadata, "resourceVersion": csv["metadata"]["resourceVersion"]}}
        updated = self.kube.patch(path(V1ALPHA1, CSVS, namespace_of(csv), name_of(csv)), patch)
        csv["metadata"] = updated["metadata"]
        return csv

    def _phase(
        self,
        csv: JSON,
        phase: str,
        reason: str,
        message: str,
        requirement_status: list[JSON] | None = None,
    ) -> bool:
        """Write the phase; True when phase or reason changed."""
        old = csv.get("status") or {}
        status = copy.deepcopy(old)
        if requirement_status is not None:
            status["requirementStatus"] = requirement_status
        changed = (old.get("phase"), old.get("reason"), old.get("message")) != (
            phase,
            reason,
            message,
        )
        if not changed and status == old:
            return False
        transition = (old.get("phase"), old.get("reason")) != (phase, reason)
        stamp = now()
        if changed:
            if (old.get("phase"), old.get("reason")) != (phase, reason):
                status["lastTransitionTime"] = stamp
                conditions = [*(old.get("conditions") or [])]
                conditions.append(
                    {
                        "phase": phase,
                        "reason": reason,
                        "message": message,
                        "lastTransitionTime": stamp,
                        "lastUpdateTime": stamp,
                    }
                )
                status["conditions"] = conditions[-MAX_CONDITIONS:]
                log.info(
                    "CSV %s/%s: %s (%s) %s", namespace_of(csv), name_of(csv), phase, reason, message
                )
            status.update(phase=phase, reason=reason, message=message, lastUpdateTime=stamp)
        status.setdefault("lastTransitionTime", stamp)
        body = {**csv, "status": status}
        try:
            updated = self.kube.put(
                path(V1ALPHA1, CSVS, namespace_of(csv), name_of(csv)) + "/status", body
            )
        except ApiException as exc:
            if exc.status in (404, 409):  # gone or changed meanwhile: the next round decides
                return False
            raise
        csv["status"] = updated.get("status", status)
        csv["metadata"] = updated["metadata"]
        return transition


def _condition_rbac(kube: Kube, csv: JSON, accounts: list[str]) -> None:
    """The Role and RoleBinding, named after the CSV, that let its operator update its
    OperatorCondition."""
    namespace, name = namespace_of(csv), name_of(csv)
    verbs = ["get", "update", "patch"]
    group = "operators.coreos.com"
    meta = {"name": name, "namespace": namespace, "ownerReferences": [owner_reference(csv)]}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta,
        "rules": [
            {"apiGroups": [group], "resources": [r], "resourceNames": [name], "verbs": verbs}
            for r in ("operatorconditions", "operatorconditions/status")
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [
            {"kind": "ServiceAccount", "name": a, "namespace": namespace} for a in accounts
        ],
    }
    for body, plural in ((role, "roles"), (binding, "rolebindings")):
        try:
            kube.create(path("/apis/rbac.authorization.k8s.io/v1", plural, namespace), body)
        except ApiException as exc:
            if exc.status != 409:
                raise


def ensure_operator_condition(kube: Kube, csv: JSON) -> None:
    """The OperatorCondition (v2) named after the CSV, owned by it, and its RBAC."""
    namespace = namespace_of(csv)
    where = path(V2, "operatorconditions", namespace, name_of(csv))
    if kube.get_or_none(where) is not None:
        return
    body = {
        "apiVersion": "operators.coreos.com/v2",
        "kind": "OperatorCondition",
        "metadata": {
            "name": name_of(csv),
            "namespace": namespace,
            "ownerReferences": [owner_reference(csv, controller=True)],
        },
        "spec": {
            "deployments": sorted(str(d.get("name")) for d in deployments.entries(csv)),
            "serviceAccounts": sorted(
                {
                    str(
                        ((d.get("spec") or {}).get("template") or {})
                        .get("spec", {})
                        .get("serviceAccountName")
                        or "default"
                    )
                    for d in deployments.entries(csv)
                }
            ),
        },
    }
    _condition_rbac(kube, csv, body["spec"]["serviceAccounts"])
    try:
        kube.create(path(V2, "operatorconditions", namespace), body)
    except ApiException as exc:
        if exc.status not in (404, 409):  # v2 not served (older CRDs) or made meanwhile
            raise
