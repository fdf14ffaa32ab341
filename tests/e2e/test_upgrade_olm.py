"""The dynamic upgrade test on both engines, olmtool's OLM engine and real OLM v0.18.3
(``../shared/peers``; skipped, with the reason, where the peers are absent): every
released etcd-operator version upgrades to the head through OLM, with an etcd cluster's
data intact across every hop, by ``olmtool test upgrade --all``, with the bundles unpacked
from their images (inline bundles: test_cli_resilience, and ``make test``'s static run).

The upgrade is offered only because the Subscription names its channel: OLM v0.18.3
checks an installed CSV for a replacement in ``sub.Spec.Channel`` literally, and with
``""`` sets the Subscription AtLatestKnown and stops resolving the namespace
(``test_without_a_channel_no_upgrade_is_offered``, see olmtool.olm.upgrade_run)."""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from olmtool.cli import app
from olmtool.olm import InstallMode, SubscriptionSpec, follow, subscribe
from olmtool.olm.upgrade_run import OPERATORS
from tests.e2e import etcd_env, olm_engines
from tests.e2e import test_real_olm as real
from tests.e2e.helpers import Cluster, wait_for

engine = olm_engines.engine
catalog_address = real.catalog_address
HEAD = "etcd-operator.v0.5.0"
ETCD_GROUP = "etcd.olmtool.dev"


@pytest.fixture(scope="module")
def ready(engine: olm_engines.Engine) -> Cluster:
    """The engine's cluster with the operator images in its registry and the monitoring
    CRDs the bundle needs: installs through OLM reach Succeeded."""
    cluster = engine.cluster
    if cluster.registry is None:
        pytest.skip("docker-registry is not installed (make tools): no registry for the images")
    from tests.e2e.test_etcd_operator import push_operator_images

    push_operator_images(cluster.registry)
    real._install_monitoring_crds(cluster.kube)
    operator_dir = str(etcd_env.REPO / "operator")  # the etcd operator's probe
    if operator_dir not in sys.path:
        sys.path.insert(0, operator_dir)
    return cluster


def test_without_a_channel_no_upgrade_is_offered(
    engine: olm_engines.Engine, ready: Cluster, catalog_address: str
) -> None:
    """Real OLM's behaviour that olmtool works around: a Subscription without a channel
    installs its startingCSV, then stays AtLatestKnown although the head's skipRange
    covers it (FindReplacement asks for channel "", then nothingToUpdate skips every
    resolution until a CatalogSource's connection state changes). olmtool's engine reads
    an empty channel as every channel for upgrades too, as it does for the install, so
    this is real OLM's alone."""
    if engine.name != "real":
        pytest.skip("real OLM v0.18.3's behaviour; olmtool's engine upgrades without a channel")
    kube = ready.kube
    namespace = f"nochan-{uuid.uuid4().hex[:6]}"
    start = "etcd-operator.v0.3.0"  # replaced by the head, and in its skipRange
    spec = SubscriptionSpec("etcd-operator", "etcd-catalog", namespace, "", start, "Automatic")
    subscribe(
        kube, namespace, spec, InstallMode("OwnNamespace", (namespace,)), address=catalog_address
    )
    follow(kube, namespace, "etcd-operator", target_csv=start, timeout=180)
    deadline = time.monotonic() + 25  # more than two of the catalog operator's 10 s resyncs
    while time.monotonic() < deadline:
        plans = kube.get(f"{OPERATORS}/namespaces/{namespace}/installplans")["items"]
        # OLM may create the install's plan twice (two overlapping resolutions of the
        # namespace, each with its own generation): both install the start version
        assert {tuple(p["spec"]["clusterServiceVersionNames"]) for p in plans} == {(start,)}
        time.sleep(2)

    def state() -> tuple[str | None, str | None]:
        path = f"{OPERATORS}/namespaces/{namespace}/subscriptions/etcd-operator"
        status = kube.get(path).get("status", {})
        return status.get("state"), status.get("installedCSV")

    # a loaded catalog operator may still be writing the status of its last resync
    wait_for(lambda: state() == ("AtLatestKnown", start), 60, "AtLatestKnown at the start CSV")
    kube.delete(f"/api/v1/namespaces/{namespace}")


def test_test_upgrade_all_unpacks_bundle_images_and_writes_junit(
    engine: olm_engines.Engine, ready: Cluster, tmp_path: Path
) -> None:
    """``olmtool test upgrade --all`` with the repository's catalog without inline objects
    (served from the process on loopback): every bundle comes from its image in the
    cluster's registry, unpacked by OLM's own Job (real OLM: the peers' cpb and opm
    images) or pulled by olmtool's engine; every release upgrades to the head with the
    etcd probe's data intact, and the JUnit report says so. The CRDs are reset first
    (earlier tests left the head's CRD, whose stored v1beta1 the 0.1.0 release cannot
    keep)."""
    assert ready.registry is not None
    if engine.name == "real":
        real.push_peer_images(ready.registry)
    pushed = real.push_bundle_images(ready.registry)
    assert len(pushed) == 5
    catalog = real._image_catalog(tmp_path / "catalog" / "etcd-operator")
    junit = tmp_path / "upgrade.xml"
    args = ["test", "upgrade", "--catalog", str(catalog.parent), "--package", "etcd-operator"]
    args += ["--all", "--kubeconfig", str(ready.kubeconfig), "--junit", str(junit)]
    args += ["--probe", "etcd_operator.probe:EtcdProbe"]
    args += ["--probe-path", str(etcd_env.REPO / "operator")]
    args += ["--reset-crds", "--timeout", "240", "-o", "json"]
    # OLM runs unpack Jobs in the CatalogSource's namespace, which each run removes at
    # its end: they are seen while the runs go
    unpacked: dict[str, set[str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_record_unpack_jobs, args=(ready, unpacked, stop))
    watcher.start()
    try:
        result = CliRunner().invoke(app, args)
    finally:
        stop.set()
        watcher.join()
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.output
    report = json.loads(result.stdout)
    for run in report["runs"]:
        hops = ", ".join(f"{h['to']} {h['seconds']:.1f}s" for h in run["hops"])
        print(f"\n{run['start']}: installed in {run['installSeconds']:.1f}s, hops {hops}")
    assert result.exit_code == 0, [(r["start"], r.get("failure")) for r in report["runs"]]
    assert [r["start"] for r in report["runs"]] == [
        "etcd-operator.v0.1.0",
        "etcd-operator.v0.2.0",
        "etcd-operator.v0.3.0",
        "etcd-operator.v0.4.0",
    ]
    assert [r["reached"] for r in report["runs"]] == [HEAD] * 4
    assert all(r["matchesPlan"] for r in report["runs"])
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("4", "0")
    for case in suite.findall("testcase"):
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert properties["hop.1"] == f"{case.get('name')} -> {HEAD}"
        assert float(properties["hop.1.seconds"]) > 0
        assert case.find("failure") is None
    if engine.name == "real":
        # an unpack Job per bundle OLM installed (the starts and the head, in each run)
        assert len(unpacked) >= 4, unpacked
        images = set().union(*unpacked.values())
        assert real.UTIL_IMAGE in images and any("etcd-operator-bundle" in i for i in images)


def _record_unpack_jobs(
    cluster: Cluster, unpacked: dict[str, set[str]], stop: threading.Event
) -> None:
    """Every succeeded Job whose init containers run OLM's util image: its init images."""
    while not stop.wait(1.0):
        try:
            jobs = cluster.kube.get("/apis/batch/v1/jobs")["items"]
        except Exception:  # the apiserver busy: the next look
            continue
        for job in jobs:
            spec = job["spec"]["template"]["spec"]
            images = {c["image"] for c in spec.get("initContainers") or []}
            if real.UTIL_IMAGE in images and (job.get("status") or {}).get("succeeded"):
                unpacked[f"{job['metadata']['namespace']}/{job['metadata']['name']}"] = images
