"""Differential: real OLM v0.18.3 and olmtool's resolver pick the same CSV.

Small synthetic catalogs (inline bundles: ``image: ""`` and a CSV as ``olm.bundle.object``)
are served by ``olmtool catalog serve``; in a fresh namespace a Manual Subscription makes
OLM resolve and write an InstallPlan that is never approved, so nothing is installed. The
CSV names of the plan (``spec.clusterServiceVersionNames``) must be what
:func:`olmtool.olm.resolver.resolve_namespace` answers for the same catalog, and a
ResolutionFailed message must be the resolver's. Skipped, with the reason, where the peers
are absent (``OLMTOOL_PEERS``).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.catalog import declcfg as dc
from olmtool.catalog import properties
from olmtool.catalog.model import build_model
from olmtool.kube import Kube
from olmtool.olm.resolver import CatalogSource, Subscription, resolve_namespace
from olmtool.ports import free_port
from tests.e2e import test_real_olm as real
from tests.e2e.helpers import JSON, Cluster, wait_for
from tests.e2e.test_real_olm import OPERATORS, _create, _operator_group, _process, _state

# real OLM's two operators (a module fixture), skipped with the reason without the peers
olm = real.olm
pytestmark = real.pytestmark

PACKAGE = "diffop"
SOURCE = "diff-catalog"


def _csv(name: str, version: str) -> JSON:
    """A CSV that resolves: no deployment, every install mode."""
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {
            "displayName": name,
            "version": version,
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
            "installModes": [
                {"type": t, "supported": True}
                for t in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
            ],
        },
    }


def _bundle(version: str) -> dc.Bundle:
    name = f"{PACKAGE}.v{version}"
    return dc.Bundle(
        name,
        PACKAGE,
        "",
        [
            dc.Property(dc.PROP_PACKAGE, {"packageName": PACKAGE, "version": version}),
            properties.bundle_object(_csv(name, version)),
        ],
    )


def _entry(version: str, replaces: str = "", skip_range: str = "") -> dc.ChannelEntry:
    return dc.ChannelEntry(
        f"{PACKAGE}.v{version}",
        replaces=f"{PACKAGE}.v{replaces}" if replaces else "",
        skip_range=skip_range,
    )


def _config() -> dc.DeclarativeConfig:
    """stable: a replaces chain 0.1.1 -> 0.1.2 -> 0.1.3 (default); fast: a skipRange head."""
    stable = [_entry("0.1.1"), _entry("0.1.2", "0.1.1"), _entry("0.1.3", "0.1.2")]
    fast = [_entry("0.1.1"), _entry("0.2.0", "0.1.1", ">=0.1.0 <0.2.0")]
    return dc.DeclarativeConfig(
        packages=[dc.Package(PACKAGE, default_channel="stable")],
        channels=[dc.Channel("fast", PACKAGE, fast), dc.Channel("stable", PACKAGE, stable)],
        bundles=[_bundle(v) for v in ("0.1.1", "0.1.2", "0.1.3", "0.2.0")],
    )


@pytest.fixture(scope="module")
def diff_source(
    cluster: Cluster, olm: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The synthetic catalog, served and connected through a CatalogSource in OLM's namespace."""
    root: Path = tmp_path_factory.mktemp("diff-catalog")
    (root / PACKAGE).mkdir()
    blobs = dc.blobs(_config())
    (root / PACKAGE / "catalog.json").write_text("".join(dc.to_json(b) + "\n" for b in blobs))
    port = free_port()
    argv = [sys.executable, "-m", "olmtool", "catalog", "serve", str(root)]
    argv += ["--port", str(port), "--http-port", "0", "--quiet"]
    with _process(argv, root / "serve.log"):
        body = {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": SOURCE},
            "spec": {"sourceType": "grpc", "address": f"127.0.0.1:{port}"},
        }
        _create(cluster.kube, olm, "catalogsources", body)
        wait_for(
            lambda: _state(cluster.kube, olm, "catalogsources", SOURCE) == "READY",
            60,
            "the CatalogSource to connect",
        )
        yield olm


def _olm_outcome(cluster: Cluster, olm_namespace: str, spec: JSON) -> tuple[list[str], str]:
    """(the InstallPlan's CSV names, "") or ([], the ResolutionFailed message)."""
    kube = cluster.kube
    namespace = f"diff-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    _create(kube, namespace, "operatorgroups", _operator_group(namespace))
    body = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": PACKAGE},
        "spec": {
            "name": PACKAGE,
            "source": SOURCE,
            "sourceNamespace": olm_namespace,
            "installPlanApproval": "Manual",
            **spec,
        },
    }
    _create(kube, namespace, "subscriptions", body)
    path = f"{OPERATORS}/v1alpha1/namespaces/{namespace}/subscriptions/{PACKAGE}"

    def outcome() -> tuple[list[str], str] | None:
        failed = _resolution_failed(kube, namespace)
        if failed:
            return [], failed
        status = kube.get(path).get("status") or {}
        ref = (status.get("installPlanRef") or {}).get("name")
        if not ref:
            return None
        plan = kube.get(f"{OPERATORS}/v1alpha1/namespaces/{namespace}/installplans/{ref}")
        return list(plan["spec"].get("clusterServiceVersionNames") or []), ""

    return wait_for(outcome, 90, "OLM to resolve the Subscription")


def _resolution_failed(kube: Kube, namespace: str) -> str:
    """OLM v0.18.3 reports a failed resolution as a Warning event on the Namespace (kept,
    for a cluster-scoped object, in ``default``); later releases also set the
    Subscription's ResolutionFailed condition."""
    events = kube.get("/api/v1/namespaces/default/events").get("items") or []
    for event in events:
        involved = event.get("involvedObject") or {}
        key = (involved.get("kind"), involved.get("name"), event.get("reason"))
        if key == ("Namespace", namespace, "ResolutionFailed"):
            return event.get("message", "")
    return ""


def _ours(olm_namespace: str, spec: JSON) -> tuple[list[str], str]:
    source = CatalogSource(SOURCE, olm_namespace, build_model(_config()))
    subscription = Subscription(
        name=PACKAGE,
        package=PACKAGE,
        source=SOURCE,
        source_namespace=olm_namespace,
        channel=spec.get("channel", ""),
        starting_csv=spec.get("startingCSV", ""),
    )
    resolution = resolve_namespace("ns", [source], [subscription], global_namespace=olm_namespace)
    if resolution.failure is not None:
        return [], resolution.failure.message
    return [b.name for b in resolution.bundles], ""


@pytest.mark.parametrize(
    "spec",
    [
        {"channel": "stable"},
        {},
        {"channel": "stable", "startingCSV": f"{PACKAGE}.v0.1.2"},
        {"channel": "fast"},
        {"channel": "beta"},
        {"channel": "stable", "startingCSV": f"{PACKAGE}.v0.2.0"},
    ],
    ids=["replaces-chain", "default-channel", "starting-csv", "skip-range", "no-channel", "no-csv"],
)
def test_olm_and_the_resolver_agree(cluster: Cluster, diff_source: str, spec: JSON) -> None:
    theirs = _olm_outcome(cluster, diff_source, spec)
    ours = _ours(diff_source, spec)
    if theirs[1]:
        # OLM orders the unsatisfiable constraints as its solver met them
        assert sorted(
            theirs[1].removeprefix("constraints not satisfiable: ").split(", ")
        ) == sorted(ours[1].removeprefix("constraints not satisfiable: ").split(", ")), (
            theirs,
            ours,
        )
    else:
        assert theirs == ours
