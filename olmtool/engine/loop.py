"""The engine's loop: read the cluster, then run every controller once, level-triggered.

A round lists the ``operators.coreos.com`` objects and namespaces (a handful of requests
on a local cluster) and runs, in order, CatalogSources, OperatorGroups, Subscription
resolution, InstallPlan execution and the CSV state machine. Rounds run when a watched
object changes (watches only wake the loop; they carry no state) and at least every
``interval`` seconds. One object's error is logged and retried next round; it never stops
the engine.
"""

from __future__ import annotations

import functools
import threading
import time
import traceback
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from olmtool.catalog.model import GVK
from olmtool.engine.apply import Discovery
from olmtool.engine.catalogs import Catalogs
from olmtool.engine.csvs import ClusterServiceVersions, World
from olmtool.engine.groups import delete_orphaned_group_roles, sync_group
from olmtool.engine.installplans import InstallPlans
from olmtool.engine.objects import (
    CRDS,
    GROUP,
    JSON,
    V1,
    V1ALPHA1,
    api_message,
    log,
    name_of,
    namespace_of,
)
from olmtool.engine.subscriptions import Namespace, Subscriptions

if TYPE_CHECKING:
    from olmtool.kube import Kube

WATCHED = (
    (GROUP, "v1alpha1", "catalogsources"),
    (GROUP, "v1alpha1", "subscriptions"),
    (GROUP, "v1alpha1", "installplans"),
    (GROUP, "v1alpha1", "clusterserviceversions"),
    (GROUP, "v1", "operatorgroups"),
)


class Engine:
    """OLM v0 on one cluster: ``run()`` until ``stop`` is set, or ``round()`` once."""

    def __init__(
        self,
        kube: Kube,
        *,
        global_namespace: str = "olm",
        registry: str = "",
        interval: float = 5.0,
        catalog_refresh: float = 15.0,
    ) -> None:
        self.kube = kube
        self.global_namespace = global_namespace
        self.interval = interval
        self.discovery = Discovery(kube)
        self.catalogs = Catalogs(kube, registry=registry, refresh=catalog_refresh)
        self.subscriptions = Subscriptions(kube, self.catalogs, global_namespace)
        self.plans = InstallPlans(kube, self.discovery)
        self.csvs = ClusterServiceVersions(kube, self.discovery)
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.server_version = ""

    # --- running ---------------------------------------------------------------------------

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.server_version = str(self.kube.get("/version").get("gitVersion", ""))
                self._ensure_namespace(self.global_namespace)
                break
            except (ApiException, OSError, urllib3.exceptions.HTTPError) as exc:
                # the apiserver is (re)starting: `cluster up` may start us next to it
                log.warning("the apiserver does not answer yet (%s); retrying", exc)
                self.stop.wait(1.0)
        self._start_watches()
        log.info("OLM engine running (global catalog namespace %s)", self.global_namespace)
        while not self.stop.is_set():
            self.wake.clear()
            started = time.monotonic()
            self.round()
            # changes made by this round wake the next one; a short pause batches them
            self.stop.wait(max(0.0, 0.2 - (time.monotonic() - started)))
            self.wake.wait(self.interval)

    def _ensure_namespace(self, name: str) -> None:
        if self.kube.get_or_none(f"/api/v1/namespaces/{name}") is None:
            try:
                self.kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
            except ApiException as exc:
                if exc.status != 409:
                    raise

    def _start_watches(self) -> None:
        from olmtool.kube import watch_forever

        custom = kubernetes.client.CustomObjectsApi(self.kube.api_client)
        apps = kubernetes.client.AppsV1Api(self.kube.api_client)
        lists = [
            functools.partial(custom.list_cluster_custom_object, group, version, plural)
            for group, version, plural in WATCHED
        ]
        lists.append(apps.list_deployment_for_all_namespaces)
        lists.append(kubernetes.client.CoreV1Api(self.kube.api_client).list_pod_for_all_namespaces)
        for index, list_func in enumerate(lists):
            thread = threading.Thread(
                target=watch_forever,
                args=(list_func, self._changed, self._listed, self.stop),
                kwargs={"what": f"watch {index}"},
                daemon=True,
                name=f"engine-watch-{index}",
            )
            thread.start()

    def _changed(self, _kind: str, _obj: JSON) -> None:
        self.wake.set()

    def _listed(self, _items: list[JSON]) -> None:
        self.wake.set()

    # --- one round -------------------------------------------------------------------------

    def round(self) -> None:
        try:
            snapshot = self._read()
        except (ApiException, OSError, urllib3.exceptions.HTTPError) as exc:
            # the apiserver is down for a moment (restarted by `cluster up`): next round
            log.warning("reading the cluster failed: %s", exc)
            return
        self._guard("catalog sources", self.catalogs.sync, snapshot["catalogsources"])
        targets = {}
        groups_by_ns: dict[str, list[JSON]] = defaultdict(list)
        for group in snapshot["operatorgroups"]:
            groups_by_ns[namespace_of(group)].append(group)
            members = [
                c
                for c in snapshot["clusterserviceversions"]
                if namespace_of(c) == namespace_of(group)
            ]
            found = self._guard(
                f"OperatorGroup {namespace_of(group)}/{name_of(group)}",
                sync_group,
                self.kube,
                group,
                snapshot["namespaces"],
                members,
            )
            if found is not None:
                targets[(namespace_of(group), name_of(group))] = found
        self._guard(
            "OperatorGroup roles",
            delete_orphaned_group_roles,
            self.kube,
            snapshot["operatorgroups"],
        )
        self._guard("resolution", self._resolve, snapshot)
        for plan in snapshot["installplans"]:
            self._guard(f"InstallPlan {namespace_of(plan)}/{name_of(plan)}", self.plans.sync, plan)
        csvs = self._list(V1ALPHA1, "clusterserviceversions")  # the plans may have added some
        world = World(
            namespaces=sorted(
                name_of(n)
                for n in snapshot["namespaces"]
                if not n["metadata"].get("deletionTimestamp")
            ),
            groups=dict(groups_by_ns),
            targets=targets,
            csvs=csvs,
            subscriptions=snapshot["subscriptions"],
            server_version=self.server_version,
        )
        for csv in csvs:
            self._guard(f"CSV {namespace_of(csv)}/{name_of(csv)}", self.csvs.sync, csv, world)

    def _resolve(self, snapshot: dict[str, list[JSON]]) -> None:
        by_namespace: dict[str, Namespace] = {}
        for sub in snapshot["subscriptions"]:
            namespace = namespace_of(sub)
            by_namespace.setdefault(namespace, Namespace(namespace, [], [], []))
            by_namespace[namespace].subscriptions.append(sub)
        for csv in snapshot["clusterserviceversions"]:
            if namespace_of(csv) in by_namespace:
                by_namespace[namespace_of(csv)].csvs.append(csv)
        for plan in snapshot["installplans"]:
            if namespace_of(plan) in by_namespace:
                by_namespace[namespace_of(plan)].plans.append(plan)
        if not by_namespace:
            return
        apis = self._existing_apis()
        for namespace in by_namespace.values():
            self._guard(f"resolving {namespace.name}", self.subscriptions.sync, namespace, apis)

    def _existing_apis(self) -> set[GVK]:
        apis = set()
        for crd in self.kube.get(CRDS).get("items", []):
            spec = crd.get("spec") or {}
            for version in spec.get("versions") or []:
                if version.get("served"):
                    apis.add(
                        (
                            spec.get("group", ""),
                            version.get("name", ""),
                            (spec.get("names") or {}).get("kind", ""),
                        )
                    )
        return apis

    def _read(self) -> dict[str, list[JSON]]:
        snapshot = {
            plural: self._list(V1 if version == "v1" else V1ALPHA1, plural)
            for _, version, plural in WATCHED
        }
        snapshot["namespaces"] = self.kube.get("/api/v1/namespaces").get("items", [])
        return snapshot

    def _list(self, base: str, plural: str) -> list[JSON]:
        listed = self.kube.get(f"{base}/{plural}")
        kind = listed.get("kind", "").removesuffix("List")
        items = listed.get("items", [])
        for item in items:  # list items may omit them; owner references need them
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", listed.get("apiVersion", ""))
        return sorted(items, key=lambda o: (namespace_of(o), name_of(o)))

    def _guard(self, what: str, function: Any, *args: Any) -> Any:
        try:
            return function(*args)
        except ApiException as exc:
            if exc.status == 409:
                self.wake.set()  # someone else changed it: look again at once
                return None
            log.warning("%s: %s", what, api_message(exc))
        except Exception:  # one object's bug must not stop the engine
            log.error("%s failed:\n%s", what, traceback.format_exc())
        return None
