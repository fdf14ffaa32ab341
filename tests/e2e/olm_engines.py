"""Fixtures and builders of the OLM scenario suite (``test_olm_scenarios.py``).

``engine`` runs one OLM engine against the session cluster, once per module, for each of
two engines: ``real`` (OLM v0.18.3's ``olm`` and ``catalog`` operators from
``../shared/peers`` as host processes, as ``test_real_olm`` runs them) and ``olmtool``
(``python -m olmtool.engine --kubeconfig PATH --namespace GLOBAL_NS [--registry
HOST:PORT]``, in the foreground until SIGTERM). Each is skipped, with the reason, when it
is not there.

The operators are synthetic: :class:`Bundle` writes a bundle directory (manifests/ and
metadata/annotations.yaml) whose Deployments run ``busybox`` (the stand-in image in the
cluster's registry) sleeping; :func:`write_catalog` renders the bundles with olmtool's own render
(bundle objects inline, ``image: ""``: OLM installs them without an unpack Job) and adds
the package and channel blobs; :meth:`World.serve` serves a catalog in-process
(``olmtool.serve.start_server``) for a CatalogSource with ``spec.address``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import olmtool
from olmtool import yamlwrite
from olmtool.actions import catalog_render
from olmtool.catalog import declcfg
from olmtool.kube import Kube
from olmtool.ports import free_port
from olmtool.serve import RunningServer, start_server
from tests.e2e import test_real_olm as real
from tests.e2e.helpers import JSON, Cluster, service_account_ready, wait_for

V1ALPHA1 = "/apis/operators.coreos.com/v1alpha1"
V1 = "/apis/operators.coreos.com/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
SLEEP = ["sh", "-c", "sleep 3600"]
MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
# how long OLM gets for one step of a scenario (its catalog operator resyncs every 10 s)
STEP = 180.0


@dataclass(frozen=True)
class Engine:
    name: str  # "real" or "olmtool"
    namespace: str  # the global catalog namespace (OLM's -namespace)
    cluster: Cluster

    @property
    def kube(self) -> Kube:
        return self.cluster.kube


def _real_olm(cluster: Cluster, logs: Path) -> contextlib.AbstractContextManager[str]:
    missing = [name for name in real.PEER_FILES if not (real.PEERS / name).exists()]
    if missing:
        pytest.skip(f"real OLM v0.18.3 not found in {real.PEERS} (set OLMTOOL_PEERS)")
    return real.run_real_olm(cluster, logs)


@contextlib.contextmanager
def _olmtool_engine(cluster: Cluster, logs: Path) -> Iterator[str]:
    spec = importlib.util.find_spec("olmtool.engine")
    here = [str(Path(p).resolve()) for p in olmtool.__path__]
    if spec is None or not any(
        str(Path(spec.origin or "").resolve()).startswith(p + "/") for p in here
    ):
        # (an editable install's finder can supply another checkout's work in progress)
        pytest.skip(f"olmtool's OLM engine (olmtool.engine) is not in {', '.join(here)} yet")
    real._install_olm_crds(cluster.kube)
    namespace = f"olm-{uuid.uuid4().hex[:6]}"
    cluster.kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    argv = [sys.executable, "-m", "olmtool.engine", "--kubeconfig", str(cluster.kubeconfig)]
    argv += ["--namespace", namespace]
    if cluster.registry:
        argv += ["--registry", cluster.registry]
    # as `cluster up` starts it: it finds the registry's login under the cluster's root
    with real._process(argv, logs / "engine.log", {"OLMTOOL_CLUSTERS_DIR": str(cluster.root)}):
        yield namespace
    print(f"\nolmtool engine log: {logs / 'engine.log'}")


@pytest.fixture(scope="module", params=["real", "olmtool"])
def engine(
    request: pytest.FixtureRequest, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    """One OLM engine watching the cluster, for all the module's tests."""
    logs = tmp_path_factory.mktemp(f"engine-{request.param}")
    start = _real_olm if request.param == "real" else _olmtool_engine
    with start(cluster, logs) as namespace:
        yield Engine(request.param, namespace, cluster)


# -- synthetic operators -------------------------------------------------------------------


def crd(
    group: str, kind: str, versions: list[str], storage: str = "", schema: JSON | None = None
) -> JSON:
    """A tiny namespaced CRD; ``schema`` is the spec's schema (any spec when None)."""
    plural = kind.lower() + "s"
    spec_schema = schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    storage = storage or versions[-1]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": version == storage,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}
                    },
                }
                for version in versions
            ],
        },
    }


def deployment(
    name: str,
    *,
    account: str = "operator",
    replicas: int = 1,
    annotations: dict[str, str] | None = None,
    env: list[JSON] | None = None,
) -> JSON:
    """A CSV deployment whose one container (busybox) sleeps."""
    container: JSON = {"name": "operator", "image": "busybox:1.35", "command": SLEEP}
    if env:
        container["env"] = env
    template: JSON = {"labels": {"app": name}}
    if annotations:
        template["annotations"] = annotations
    return {
        "name": name,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": template,
                "spec": {
                    "serviceAccountName": account,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [container],
                },
            },
        },
    }


def rules(*resources: str) -> list[JSON]:
    return [{"apiGroups": [""], "resources": list(resources), "verbs": ["get", "list", "watch"]}]


@dataclass
class Bundle:
    """One bundle of a synthetic package (a CSV, its CRDs, a busybox Deployment)."""

    package: str
    version: str
    replaces: str = ""
    skips: list[str] = field(default_factory=list)
    skip_range: str = ""
    owned: list[JSON] = field(default_factory=list)  # CRD manifests
    required: list[JSON] = field(default_factory=list)  # CRDs (by their manifests)
    deployments: list[JSON] | None = None  # default: one "<package>-operator"
    permissions: list[JSON] | None = None  # default: configmaps for "operator"
    cluster_permissions: list[JSON] | None = None
    modes: tuple[str, ...] = ("OwnNamespace", "SingleNamespace", "MultiNamespace")
    annotations: dict[str, str] = field(default_factory=dict)
    min_kube_version: str = ""
    channels: tuple[str, ...] = ("stable",)
    objects: list[JSON] = field(default_factory=list)  # other manifests, in bundle order

    @property
    def name(self) -> str:
        return f"{self.package}.v{self.version}"

    def csv(self) -> JSON:
        annotations = dict(self.annotations)
        if self.skip_range:
            annotations["olm.skipRange"] = self.skip_range
        deployments = self.deployments
        if deployments is None:
            deployments = [deployment(f"{self.package}-operator")]
        permissions = self.permissions
        if permissions is None:
            permissions = [{"serviceAccountName": "operator", "rules": rules("configmaps")}]
        install: JSON = {"deployments": deployments, "permissions": permissions}
        if self.cluster_permissions:
            install["clusterPermissions"] = self.cluster_permissions
        spec: JSON = {
            "displayName": self.package,
            "description": f"synthetic operator {self.package}",
            "version": self.version,
            "provider": {"name": "olmtool tests"},
            "maturity": "alpha",
            "installModes": [{"type": mode, "supported": mode in self.modes} for mode in MODES],
            "customresourcedefinitions": {
                "owned": _descriptions(self.owned),
                "required": _descriptions(self.required),
            },
            "install": {"strategy": "deployment", "spec": install},
        }
        if self.replaces:
            spec["replaces"] = self.replaces
        if self.skips:
            spec["skips"] = list(self.skips)
        if self.min_kube_version:
            spec["minKubeVersion"] = self.min_kube_version
        metadata: JSON = {"name": self.name}
        if annotations:
            metadata["annotations"] = annotations
        return {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": metadata,
            "spec": spec,
        }

    def write(self, root: Path) -> Path:
        """The bundle directory (manifests/ + metadata/annotations.yaml) under ``root``."""
        target = root / self.name
        (target / "manifests").mkdir(parents=True)
        (target / "metadata").mkdir()
        (target / "manifests" / f"{self.package}.clusterserviceversion.yaml").write_text(
            yamlwrite.dump(self.csv())
        )
        for manifest in self.owned:
            name = manifest["metadata"]["name"]
            (target / "manifests" / f"{name}.crd.yaml").write_text(yamlwrite.dump(manifest))
        for number, manifest in enumerate(self.objects):
            kind = manifest["kind"].lower()
            (target / "manifests" / f"z{number:02d}-{kind}.yaml").write_text(
                yamlwrite.dump(manifest)
            )
        prefix = "operators.operatorframework.io.bundle"
        annotations = {
            f"{prefix}.channel.default.v1": self.channels[0],
            f"{prefix}.channels.v1": ",".join(self.channels),
            f"{prefix}.manifests.v1": "manifests/",
            f"{prefix}.mediatype.v1": "registry+v1",
            f"{prefix}.metadata.v1": "metadata/",
            f"{prefix}.package.v1": self.package,
        }
        (target / "metadata" / "annotations.yaml").write_text(
            yamlwrite.dump({"annotations": annotations})
        )
        return target


def _descriptions(crds: list[JSON]) -> list[JSON]:
    return [
        {
            "name": manifest["metadata"]["name"],
            "version": version["name"],
            "kind": manifest["spec"]["names"]["kind"],
            "displayName": manifest["spec"]["names"]["kind"],
            "description": "a test resource",
        }
        for manifest in crds
        for version in manifest["spec"]["versions"]
        if version.get("served", True)
    ]


def write_catalog(root: Path, bundles: list[Bundle]) -> Path:
    """An FBC directory: each package's bundles (rendered inline from their directories)
    in the channels they name, each channel in the order given, the first channel default."""
    blobs: list[JSON] = []
    sources = root / "bundles"
    packages: dict[str, list[Bundle]] = {}
    for bundle in bundles:
        packages.setdefault(bundle.package, []).append(bundle)
    for package, members in packages.items():
        blobs.append(
            {"schema": "olm.package", "name": package, "defaultChannel": members[0].channels[0]}
        )
        channels = dict.fromkeys(c for b in members for c in b.channels)
        for channel in channels:
            entries = [_entry(b) for b in members if channel in b.channels]
            blobs.append(
                {"schema": "olm.channel", "package": package, "name": channel, "entries": entries}
            )
        for bundle in members:
            blobs.extend(declcfg.blobs(catalog_render([bundle.write(sources)])))
    target = root / "catalog"
    target.mkdir(parents=True)
    (target / "catalog.json").write_text("".join(declcfg.to_json(b) + "\n" for b in blobs))
    return target


def _entry(bundle: Bundle) -> JSON:
    entry: JSON = {"name": bundle.name}
    if bundle.replaces:
        entry["replaces"] = bundle.replaces
    if bundle.skips:
        entry["skips"] = list(bundle.skips)
    if bundle.skip_range:
        entry["skipRange"] = bundle.skip_range
    return entry


# -- one scenario's objects ------------------------------------------------------------------


@dataclass
class World:
    """A test's namespaces, catalogs and OLM objects on the engine's cluster; the
    namespaces and catalog servers go at the end of the test."""

    engine: Engine
    tmp: Path
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    namespaces: list[str] = field(default_factory=list)
    servers: dict[str, RunningServer] = field(default_factory=dict)
    served: int = 0  # catalogs served so far (their directory names)

    @property
    def kube(self) -> Kube:
        return self.engine.kube

    def group(self, name: str) -> str:
        """An API group of this test only (CRDs are cluster-wide; tests must not share)."""
        return f"{name}{self.id}.olmtool.test"

    def namespace(self, prefix: str = "sc") -> str:
        name = f"{prefix}-{self.id}-{len(self.namespaces)}"
        self.kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
        self.namespaces.append(name)
        wait_for(lambda: service_account_ready(self.kube, name, "default"), 30, "default SA")
        return name

    def serve(self, bundles: list[Bundle], port: int = 0, name: str = "") -> str:
        """Serve a catalog of ``bundles`` on ``port`` (0: a free one); its host:port."""
        name = name or f"catalog{self.served}"
        self.served += 1
        directory = write_catalog(self.tmp / name, bundles)
        server = start_server(directory, grpc_port=port or free_port(), http_port=None)
        self.servers[name] = server
        return server.grpc_address

    def stop_server(self, name: str) -> None:
        self.servers.pop(name).stop(grace=0)

    def close(self) -> None:
        for server in self.servers.values():
            server.stop(grace=0)
        for name in self.namespaces:
            with contextlib.suppress(Exception):
                self.kube.delete(f"/api/v1/namespaces/{name}")

    # -- creating OLM objects

    def catalog_source(self, namespace: str, address: str, name: str = "catalog") -> str:
        body = {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": name},
            "spec": {"sourceType": "grpc", "address": address, "displayName": name},
        }
        self.kube.create(f"{V1ALPHA1}/namespaces/{namespace}/catalogsources", body)
        return name

    def operator_group(
        self, namespace: str, targets: list[str] | None = None, name: str = ""
    ) -> JSON:
        """An OperatorGroup (``<namespace>-og``: real OLM names cluster-wide ClusterRoles
        after it); ``targets`` None is the namespace itself, [] all namespaces."""
        targets = [namespace] if targets is None else targets
        name = name or f"{namespace}-og"
        body = {
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {"name": name},
            "spec": {"targetNamespaces": targets} if targets else {},
        }
        return self.kube.create(f"{V1}/namespaces/{namespace}/operatorgroups", body)

    def subscription(
        self,
        namespace: str,
        package: str,
        *,
        source: str = "catalog",
        channel: str = "stable",
        starting_csv: str = "",
        approval: str = "Automatic",
        config: JSON | None = None,
    ) -> JSON:
        spec: JSON = {
            "name": package,
            "channel": channel,
            "source": source,
            "sourceNamespace": namespace,
            "installPlanApproval": approval,
        }
        if starting_csv:
            spec["startingCSV"] = starting_csv
        if config:
            spec["config"] = config
        body = {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": package},
            "spec": spec,
        }
        return self.kube.create(f"{V1ALPHA1}/namespaces/{namespace}/subscriptions", body)

    def install(
        self,
        bundles: list[Bundle],
        *,
        package: str = "",
        targets: list[str] | None = None,
        **sub: Any,
    ) -> str:
        """A namespace with the catalog of ``bundles``, an OperatorGroup and a Subscription
        to ``package`` (the first bundle's by default); returns the namespace."""
        namespace = self.namespace()
        self.catalog_source(namespace, self.serve(bundles))
        self.operator_group(namespace, targets)
        self.subscription(namespace, package or bundles[0].package, **sub)
        return namespace

    # -- reading them

    def get(self, namespace: str, plural: str, name: str, base: str = V1ALPHA1) -> JSON | None:
        return self.kube.get_or_none(f"{base}/namespaces/{namespace}/{plural}/{name}")

    def items(self, namespace: str, plural: str, base: str = V1ALPHA1, **query: Any) -> list[JSON]:
        return self.kube.get(f"{base}/namespaces/{namespace}/{plural}", **query)["items"]

    def sub(self, namespace: str, package: str) -> JSON:
        found = self.get(namespace, "subscriptions", package)
        assert found is not None, f"Subscription {namespace}/{package}"
        return found

    def csv(self, namespace: str, name: str) -> JSON | None:
        return self.get(namespace, "clusterserviceversions", name)

    def plans(self, namespace: str) -> list[JSON]:
        """The namespace's InstallPlans, oldest first."""
        found = self.items(namespace, "installplans")
        return sorted(
            found,
            key=lambda p: (p["metadata"]["creationTimestamp"], p["spec"].get("generation", 0)),
        )

    def namespace_warnings(self, namespace: str, reason: str) -> list[str]:
        """The messages of Warning events ``reason`` on the Namespace object itself (where
        OLM v0.18 reports resolution failures), oldest first."""
        selector = f"involvedObject.kind=Namespace,involvedObject.name={namespace},reason={reason}"
        events = self.kube.get("/api/v1/events", fieldSelector=selector)["items"]
        events.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        return [e["message"] for e in events if e.get("type") == "Warning"]

    def deployment(self, namespace: str, name: str) -> JSON | None:
        return self.kube.get_or_none(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")

    # -- waiting for them

    def wait_phase(
        self,
        namespace: str,
        csv: str,
        phase: str,
        timeout: float = STEP,
        reason: str | None = None,
    ) -> JSON:
        """The CSV once in ``phase`` (with ``reason``, when given: a phase is entered with
        a first reason, RequirementsUnknown, before the one a test waits for)."""

        def reached() -> JSON | None:
            found = self.csv(namespace, csv)
            if status(found).get("phase") != phase:
                return None
            return found if reason is None or status(found).get("reason") == reason else None

        what = f"CSV {namespace}/{csv} {phase}" + (f"/{reason}" if reason else "")
        return wait_for(reached, timeout, what, interval=0.5)

    def touch_csv(self, namespace: str, csv: str) -> None:
        """An annotation change on the CSV: makes OLM sync it now rather than at its next
        resync (minutes later)."""
        self.kube.patch(
            f"{V1ALPHA1}/namespaces/{namespace}/clusterserviceversions/{csv}",
            {"metadata": {"annotations": {"olmtool.dev/e2e-touched": uuid.uuid4().hex[:8]}}},
        )

    def wait_installed(self, namespace: str, package: str, csv: str, timeout: float = STEP) -> JSON:
        """The Subscription once ``csv`` is its installed CSV and Succeeded."""

        def done() -> JSON | None:
            sub = self.sub(namespace, package)
            if status(sub).get("installedCSV") != csv:
                return None
            return sub if status(self.csv(namespace, csv)).get("phase") == "Succeeded" else None

        return wait_for(done, timeout, f"{csv} installed in {namespace}", interval=0.5)

    def wait_plan(
        self, namespace: str, csv: str, phases: tuple[str, ...], timeout: float = STEP
    ) -> JSON:
        """The InstallPlan of ``csv`` once its phase is one of ``phases``."""

        def found() -> JSON | None:
            for plan in self.plans(namespace):
                names = plan["spec"]["clusterServiceVersionNames"]
                if csv in names and status(plan).get("phase") in phases:
                    return plan
            return None

        return wait_for(found, timeout, f"InstallPlan of {csv} in {phases}", interval=0.5)

    def wait_condition(
        self,
        namespace: str,
        package: str,
        kind: str,
        value: str = "True",
        timeout: float = STEP,
        reason: str = "",
    ) -> JSON:
        """The Subscription's condition ``kind`` once its status is ``value`` (and its
        reason ``reason``, if given)."""
        return wait_for(
            lambda: (
                (c := condition(self.sub(namespace, package), kind))
                and c.get("status") == value
                and (not reason or c.get("reason") == reason)
                and c
            ),
            timeout,
            f"Subscription {namespace}/{package} condition {kind}={value} {reason}".rstrip(),
            interval=0.5,
        )


def status(obj: JSON | None) -> JSON:
    return (obj or {}).get("status") or {}


def condition(obj: JSON | None, kind: str) -> JSON | None:
    for item in status(obj).get("conditions") or []:
        if item.get("type") == kind:
            return item
    return None


def owner_names(obj: JSON) -> list[str]:
    return [ref["name"] for ref in obj["metadata"].get("ownerReferences") or []]


def steps(plan: JSON) -> list[tuple[str, str, str]]:
    """An InstallPlan's steps as (kind, name, status)."""
    return [
        (s["resource"]["kind"], s["resource"]["name"], s.get("status", ""))
        for s in status(plan).get("plan") or []
    ]


@pytest.fixture
def world(engine: Engine, tmp_path: Path) -> Iterator[World]:
    """This test's world on the engine's cluster, cleaned up at the end."""
    made = World(engine, tmp_path)
    try:
        yield made
    finally:
        made.close()
