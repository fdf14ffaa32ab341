"""Real OLM v0.18.3 (``../shared/peers``) installs the etcd operator on the local cluster.

OLM's ``olm`` and ``catalog`` operators run as two host processes against the session's
cluster; the repository's catalog is served by ``olmtool catalog serve`` and reached
through a CatalogSource with ``spec.address``. A Subscription in an OwnNamespace
OperatorGroup must resolve, its InstallPlan must complete (OLM writes ``""`` into the
InstallPlan's status, which a kube-apiserver without the zero-value fix rejects) and the
CSV must reach Installing or Succeeded.

The catalog's bundles are served inline (``image: ""`` with ``olm.bundle.object``
properties, rendered from ``bundle/etcd-operator/*``): a bundle with an image makes OLM
run an unpack Job from ``quay.io/operator-framework/olm`` and opm images, which the node
agent cannot run. Everything else (package, channel, deprecations) is the repository's
catalog as published. Skipped, with the reason, where the peers are absent.

The bundle ships a ServiceMonitor and a PrometheusRule. Without the Prometheus operator's
CRDs OLM v0.18.3 fails the whole InstallPlan (``InstallComponentFailed``: "the server could
not find the requested resource"; the CSV and CRD steps are applied, every later step is
not, so the CSV stays Pending); with them (minimal CRDs standing in for the Prometheus
operator's APIs) both objects are created in the operator's namespace.

OLM runs on olmtool's own ``operators.coreos.com`` CRDs (``olmtool.olm.crdfiles``, what
``cluster up`` installs): real OLM must behave on them exactly as on its own.
``OLMTOOL_OLM_CRDS=peers`` runs the same tests on real OLM's CRDs (``peers/olm-crds``);
``OLMTOOL_OLM_DEBUG=1`` runs the catalog operator with ``-debug`` (its resolution steps in
the log).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool import yamlwrite
from olmtool.actions import catalog_render
from olmtool.catalog import declcfg
from olmtool.cluster.network import ClusterNetwork
from olmtool.kube import Kube
from olmtool.olm.crdfiles import olm_crds
from olmtool.ports import free_port
from tests.e2e.helpers import JSON, Cluster, established, wait_for

REPO = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("OLMTOOL_PEERS", REPO.parent / "shared" / "peers"))
OPERATORS = "/apis/operators.coreos.com"
PACKAGE = "etcd-operator"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MONITORING = "/apis/monitoring.coreos.com/v1"
MONITORING_KINDS = {"ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules"}
NOT_FOUND = "the server could not find the requested resource"
CRD_SOURCE = os.environ.get("OLMTOOL_OLM_CRDS", "olmtool")  # or "peers": real OLM's own
PEER_FILES = ("olm", "catalog", "olm-crds") if CRD_SOURCE == "peers" else ("olm", "catalog")

pytestmark = pytest.mark.skipif(
    not all((PEERS / name).exists() for name in PEER_FILES),
    reason=f"real OLM v0.18.3 not found in {PEERS} (set OLMTOOL_PEERS)",
)


OPM_IMAGE = "quay.io/operator-framework/opm:v1.26.0"
UTIL_IMAGE = "quay.io/operator-framework/olm:v0.18.3"


def push_peer_images(registry: str) -> None:
    """The images real OLM's unpack Jobs run, built from ``../shared/peers`` (opm, cpb),
    into the cluster's registry at their upstream paths (the node mirrors quay.io)."""
    from olmtool.cluster.standins import mirror_path
    from olmtool.images import push
    from tests.e2e import peerimages

    for built in (peerimages.opm_image(), peerimages.util_image()):
        push(built.image, f"{registry}/{mirror_path(built.reference)}")


def push_bundle_images(registry: str) -> list[str]:
    """Every released bundle as the image the repository's catalog names
    (``localhost:5000/olmtool/etcd-operator-bundle:<version>``, in the cluster's registry)."""
    from olmtool.actions import bundle_dir_image
    from olmtool.images.save import ImageTarget

    pushed = []
    for bundle_dir in sorted((REPO / "bundle" / PACKAGE).iterdir()):
        target = ImageTarget(f"{registry}/olmtool/{PACKAGE}-bundle:{{version}}", push=True)
        pushed.append(bundle_dir_image(bundle_dir, target).image.reference)
    return pushed


def _image_catalog(target: Path) -> Path:
    """The repository's catalog without the bundles' objects: OLM must unpack each bundle
    from its image (an unpack Job), as for any catalog that carries only references."""
    blobs = list(yamlwrite.load_all(REPO / "catalog" / PACKAGE / "catalog.yaml"))
    for blob in blobs:
        if blob.get("schema") == "olm.bundle":
            blob["properties"] = [
                p for p in blob.get("properties") or [] if p.get("type") != "olm.bundle.object"
            ]
    target.mkdir(parents=True)
    (target / "catalog.json").write_text("".join(declcfg.to_json(b) + "\n" for b in blobs))
    return target


def _inline_catalog(target: Path) -> Path:
    """The repository's catalog with every bundle rendered inline from its directory."""
    published = list(yamlwrite.load_all(REPO / "catalog" / PACKAGE / "catalog.yaml"))
    blobs = [blob for blob in published if blob.get("schema") != "olm.bundle"]
    for bundle_dir in sorted((REPO / "bundle" / PACKAGE).iterdir()):
        blobs.extend(declcfg.blobs(catalog_render([str(bundle_dir)])))
    target.mkdir(parents=True)
    (target / "catalog.json").write_text("".join(declcfg.to_json(b) + "\n" for b in blobs))
    return target


def _olm_crds() -> list[JSON]:
    if CRD_SOURCE == "peers":
        return [
            yamlwrite.plain(yamlwrite.load(p)) for p in sorted((PEERS / "olm-crds").glob("*.yaml"))
        ]
    return olm_crds()


def _install_olm_crds(kube: Kube) -> None:
    crds = _olm_crds()
    for crd in crds:
        if kube.get_or_none(f"{CRDS}/{crd['metadata']['name']}") is None:
            kube.create(CRDS, crd)
    for crd in crds:
        path = f"{CRDS}/{crd['metadata']['name']}"
        served = wait_for(lambda p=path: established(kube.get(p)) and kube.get(p), 30, path)
        # The cluster serves the CRDs this run is about (e.g. ours: Deployment specs whole).
        assert served["spec"]["versions"] == crd["spec"]["versions"], path


@contextlib.contextmanager
def _process(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    try:
        time.sleep(0.5)
        assert process.poll() is None, f"{argv[0]} exited: {log.read_text()[-2000:]}"
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _with_cluster_dns(cluster: Cluster, argv: list[str], logs: Path) -> list[str]:
    """``argv`` with the cluster DNS as its resolver, in a mount namespace of its own
    whose /etc/resolv.conf names it: the catalog operator dials a registry pod's Service
    by name (``<source>.<namespace>.svc:50051``), as it does in its Pod on any cluster.
    Its other peers (the apiserver, catalogs served on loopback) are addresses."""
    resolv = logs / "resolv.conf"
    dns = ClusterNetwork(cluster.local.network or 1).dns_ip
    resolv.write_text(
        f"nameserver {dns}\nsearch svc.cluster.local cluster.local\noptions ndots:5\n"
    )
    bind = 'mount --bind "$0" /etc/resolv.conf && exec "$@"'
    return ["unshare", "--mount", "--", "sh", "-c", bind, str(resolv), *argv]


@contextlib.contextmanager
def run_real_olm(cluster: Cluster, logs: Path) -> Iterator[str]:
    """OLM's two operators watching the cluster (logs in ``logs``); yields OLM's namespace."""
    kube = cluster.kube
    _install_olm_crds(kube)
    namespace = f"olm-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    kubeconfig = str(cluster.kubeconfig)
    olm_argv = [str(PEERS / "olm"), "--namespace", namespace, "--writeStatusName", ""]
    catalog_argv = [
        str(PEERS / "catalog"),
        f"-kubeconfig={kubeconfig}",
        f"-namespace={namespace}",
        # the images of unpack Jobs: the peers' opm and cpb on olmtool's bases, pushed to
        # the cluster's registry under these names (push_peer_images)
        f"-configmapServerImage={OPM_IMAGE}",
        f"-util-image={UTIL_IMAGE}",
        # resync every 10 s (default 15 min): a Subscription installed through startingCSV
        # is offered its upgrade at the next resync, not when its install completes
        "-interval=10s",
    ] + (["-debug"] if os.environ.get("OLMTOOL_OLM_DEBUG") else [])
    with (
        _process(olm_argv, logs / "olm.log", {"KUBECONFIG": kubeconfig}),
        _process(_with_cluster_dns(cluster, catalog_argv, logs), logs / "catalog.log"),
    ):
        yield namespace
    print(f"\nreal OLM logs: {logs}")


@pytest.fixture(scope="module")
def olm(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """OLM's two operators watching the cluster; yields OLM's namespace."""
    with run_real_olm(cluster, tmp_path_factory.mktemp("real-olm")) as namespace:
        yield namespace


@pytest.fixture(scope="module")
def catalog_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``olmtool catalog serve`` of the inline catalog, as a separate process."""
    root = tmp_path_factory.mktemp("olm-catalog")
    catalog = _inline_catalog(root / PACKAGE)
    port = free_port()
    argv = [sys.executable, "-m", "olmtool", "catalog", "serve", str(catalog)]
    argv += ["--port", str(port), "--http-port", "0", "--quiet"]
    with _process(argv, root / "serve.log"):
        yield f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def catalog_source(cluster: Cluster, olm: str, catalog_address: str) -> str:
    """The CatalogSource of the repository's catalog, connected."""
    kube = cluster.kube
    source = _create(kube, olm, "catalogsources", _catalog_source(catalog_address))
    wait_for(
        lambda: _state(kube, olm, "catalogsources", source) == "READY",
        60,
        "the CatalogSource to connect",
    )
    return source


def test_without_monitoring_crds_the_installplan_fails(
    cluster: Cluster, olm: str, catalog_source: str
) -> None:
    """OLM v0.18.3 looks every step's kind up in discovery: no ServiceMonitor/PrometheusRule
    API fails the InstallPlan after the CSV and CRD steps; nothing later is created."""
    kube = cluster.kube
    _remove_monitoring_crds(kube)
    target = _subscribe(kube, olm, catalog_source)
    plan_name = wait_for(lambda: _installplan_of(kube, target), 120, "an InstallPlan")
    plan = wait_for(
        lambda: _finished(kube, target, plan_name), 120, f"InstallPlan {plan_name} to finish"
    )
    status = plan["status"]
    assert status["phase"] == "Failed"
    (installed,) = [c for c in status["conditions"] if c["type"] == "Installed"]
    assert installed["status"] == "False"
    assert installed["reason"] == "InstallComponentFailed"
    assert installed["message"] == NOT_FOUND
    steps = {step["resource"]["kind"]: step["status"] for step in status["plan"]}
    # Created on the first attempt, Present after a retry within OLM's one-minute window:
    # which one the Failed plan keeps depends on when it gives up (both seen on our CRDs).
    assert steps["ClusterServiceVersion"] in ("Created", "Present")
    assert steps["CustomResourceDefinition"] in ("Created", "Present")
    for kind in ("PrometheusRule", "ServiceMonitor", "Service", "ServiceAccount", "Role"):
        assert steps[kind] == "Unknown", steps
    assert kube.get_or_none(f"/api/v1/namespaces/{target}/serviceaccounts/etcd-operator") is None
    wait_for(
        lambda: _csv_phase(kube, target, "etcd-operator.v0.5.0") == "Pending",
        60,
        "the CSV to wait for its requirements",
    )


def test_subscription_installs_the_etcd_operator(
    cluster: Cluster, olm: str, catalog_source: str
) -> None:
    kube = cluster.kube
    _install_monitoring_crds(kube)  # the Prometheus operator's APIs exist
    target = _subscribe(kube, olm, catalog_source)

    plan_name = wait_for(lambda: _installplan_of(kube, target), 120, "an InstallPlan")
    plan = wait_for(
        lambda: _completed(kube, target, plan_name), 120, f"InstallPlan {plan_name} Complete"
    )
    assert "etcd-operator.v0.5.0" in plan["spec"]["clusterServiceVersionNames"]
    lookups = plan["status"].get("bundleLookups") or []
    assert all(lookup.get("replaces", "") == "" for lookup in lookups)  # "" was written
    csv_phase = wait_for(
        lambda: (
            _csv_phase(kube, target, "etcd-operator.v0.5.0") in ("Installing", "Succeeded")
            and _csv_phase(kube, target, "etcd-operator.v0.5.0")
        ),
        120,
        "the CSV to install",
    )
    assert csv_phase in ("Installing", "Succeeded")
    # What OLM wrote is kept whole (no field pruned by the CRDs' schemas).
    sub = kube.get(f"{OPERATORS}/v1alpha1/namespaces/{target}/subscriptions/{PACKAGE}")
    assert sub["status"]["currentCSV"] == "etcd-operator.v0.5.0"
    assert sub["status"]["installPlanRef"]["kind"] == "InstallPlan"
    assert sub["status"]["catalogHealth"][0]["catalogSourceRef"]["name"] == catalog_source
    steps = plan["status"]["plan"]
    assert steps and all(step["resource"]["sourceName"] == catalog_source for step in steps)
    assert all(step["resource"]["manifest"] for step in steps)
    csv = kube.get(
        f"{OPERATORS}/v1alpha1/namespaces/{target}/clusterserviceversions/etcd-operator.v0.5.0"
    )
    kinds = {requirement["kind"] for requirement in csv["status"]["requirementStatus"]}
    assert {"CustomResourceDefinition", "ServiceAccount"} <= kinds
    assert csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
    crd = kube.get(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/etcdclusters.etcd.olmtool.dev"
    )
    assert {v["name"] for v in crd["spec"]["versions"]} == {"v1alpha1", "v1beta1"}
    deployment = kube.get(f"/apis/apps/v1/namespaces/{target}/deployments/etcd-operator")
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["olm.targetNamespaces"] == target
    monitor = kube.get(f"{MONITORING}/namespaces/{target}/servicemonitors/etcd-metrics")
    assert monitor["spec"]["endpoints"] == [
        {"interval": "30s", "path": "/metrics", "port": "metrics"}
    ]
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    rule = kube.get(f"{MONITORING}/namespaces/{target}/prometheusrules/etcd-alerts")
    alerts = [r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]]
    assert "etcdNoLeader" in alerts and "etcdBackupFailed" in alerts


def _subscribe(kube: Kube, olm: str, source: str) -> str:
    """A new namespace with an OwnNamespace OperatorGroup and a Subscription to the package."""
    target = f"etcd-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": target}})
    _create(kube, target, "operatorgroups", _operator_group(target))
    _create(kube, target, "subscriptions", _subscription(source, olm))
    return target


def _monitoring_crd(kind: str, plural: str) -> JSON:
    """The structural minimum of a prometheus-operator CRD: any spec is kept."""
    spec_schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}
                    },
                }
            ],
        },
    }


def _install_monitoring_crds(kube: Kube) -> None:
    for kind, plural in MONITORING_KINDS.items():
        path = f"{CRDS}/{plural}.monitoring.coreos.com"
        if kube.get_or_none(path) is None:
            kube.create(CRDS, _monitoring_crd(kind, plural))
        wait_for(lambda p=path: established(kube.get(p)), 30, f"CRD {plural} established")


def _remove_monitoring_crds(kube: Kube) -> None:
    for plural in MONITORING_KINDS.values():
        path = f"{CRDS}/{plural}.monitoring.coreos.com"
        if kube.get_or_none(path) is not None:
            kube.delete(path)
        wait_for(lambda p=path: kube.get_or_none(p) is None, 60, f"CRD {plural} deleted")


def _create(kube: Kube, namespace: str, plural: str, body: JSON) -> str:
    version = body["apiVersion"].split("/")[1]
    created = kube.create(f"{OPERATORS}/{version}/namespaces/{namespace}/{plural}", body)
    return created["metadata"]["name"]


def _catalog_source(address: str) -> JSON:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": "olmtool-catalog"},
        "spec": {"sourceType": "grpc", "address": address, "displayName": "olmtool"},
    }


def _operator_group(namespace: str) -> JSON:
    return {
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": "etcd"},
        "spec": {"targetNamespaces": [namespace]},
    }


def _subscription(source: str, source_namespace: str) -> JSON:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": PACKAGE},
        "spec": {
            "channel": "stable",
            "name": PACKAGE,
            "source": source,
            "sourceNamespace": source_namespace,
            "installPlanApproval": "Automatic",
        },
    }


def _state(kube: Kube, namespace: str, plural: str, name: str) -> str | None:
    obj = kube.get(f"{OPERATORS}/v1alpha1/namespaces/{namespace}/{plural}/{name}")
    return ((obj.get("status") or {}).get("connectionState") or {}).get("lastObservedState")


def _installplan_of(kube: Kube, namespace: str) -> str | None:
    sub = kube.get(f"{OPERATORS}/v1alpha1/namespaces/{namespace}/subscriptions/{PACKAGE}")
    ref = (sub.get("status") or {}).get("installPlanRef") or {}
    return ref.get("name")


def _finished(kube: Kube, namespace: str, name: str) -> JSON | None:
    plan = kube.get(f"{OPERATORS}/v1alpha1/namespaces/{namespace}/installplans/{name}")
    return plan if (plan.get("status") or {}).get("phase") in ("Complete", "Failed") else None


def _completed(kube: Kube, namespace: str, name: str) -> JSON | None:
    plan = kube.get(f"{OPERATORS}/v1alpha1/namespaces/{namespace}/installplans/{name}")
    phase = (plan.get("status") or {}).get("phase")
    if phase == "Failed":
        raise AssertionError(f"InstallPlan failed: {plan['status']}")
    return plan if phase == "Complete" else None


def _csv_phase(kube: Kube, namespace: str, name: str) -> str | None:
    csv = kube.get_or_none(
        f"{OPERATORS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{name}"
    )
    return ((csv or {}).get("status") or {}).get("phase")


@pytest.fixture(scope="module")
def operator_ready(cluster: Cluster, olm: str) -> Cluster:
    """The cluster with real OLM running, the operator images in its registry and the
    monitoring CRDs the bundle needs: installs through OLM reach Succeeded."""
    if cluster.registry is None:
        pytest.skip(
            "docker-registry is not installed (make tools): no registry for the operator image"
        )
    from tests.e2e.test_etcd_operator import push_operator_images

    push_operator_images(cluster.registry)
    _install_monitoring_crds(cluster.kube)
    return cluster
