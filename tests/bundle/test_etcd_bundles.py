"""The etcd operator's committed bundles: valid under every suite, current, and upgradable."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from olmtool import yamlio
from olmtool.bundle import build_bundle, write_bundle
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from olmtool.config import load_project
from olmtool.versions import parse_range

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "bundle" / "etcd-operator"
VERSIONS = sorted(p.name for p in BUNDLES.iterdir() if p.is_dir())


def _csv(version: str) -> dict:
    path = BUNDLES / version / "manifests" / "etcd-operator.clusterserviceversion.yaml"
    return yamlio.plain(yamlio.load(path))


def _crd(version: str) -> dict:
    path = BUNDLES / version / "manifests" / "etcd.olmtool.dev_etcdclusters.yaml"
    return yamlio.plain(yamlio.load(path))


def test_at_least_three_releases() -> None:
    assert VERSIONS[:3] == ["0.1.0", "0.2.0", "0.3.0"]


@pytest.mark.parametrize("version", VERSIONS)
def test_bundle_passes_every_suite_strictly(version: str) -> None:
    report = validate_bundle(load_bundle(BUNDLES / version), suites=select_suites(["all"]))
    assert report.findings == []
    assert report.passed(strict=True)


def test_newest_bundle_is_what_olmtool_yaml_builds() -> None:
    project = load_project(ROOT / "olmtool.yaml")
    bundle = build_bundle(
        project.settings.bundle, project.root, crd_dir=project.settings.crd.output
    )
    assert not write_bundle(bundle, check=True).stale, "run `olmtool bundle build`"


@pytest.mark.parametrize("version", VERSIONS)
def test_all_four_install_modes_supported(version: str) -> None:
    modes = _csv(version)["spec"]["installModes"]
    assert {m["type"] for m in modes if m["supported"]} == {
        "OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"
    }  # fmt: skip


def _successors(version: str) -> set[str]:
    """Versions a newer bundle can be upgraded to from ``version`` in one step."""
    found = set()
    for newer in VERSIONS:
        csv = _csv(newer)
        skip_range = csv["metadata"]["annotations"].get("olm.skipRange")
        if (
            csv["spec"].get("replaces") == f"etcd-operator.v{version}"
            or f"etcd-operator.v{version}" in csv["spec"].get("skips", [])
            or (skip_range and parse_range(skip_range).contains(version) and newer != version)
        ):
            found.add(newer)
    return found


@pytest.mark.parametrize("version", VERSIONS[:-1])
def test_every_older_version_reaches_the_newest(version: str) -> None:
    reachable, frontier = set(), {version}
    while frontier:
        step = set().union(*(_successors(v) for v in frontier)) - reachable
        reachable |= step
        frontier = step
    assert VERSIONS[-1] in reachable


def test_replaces_chain_and_skip_range_to_newest() -> None:
    assert "replaces" not in _csv("0.1.0")["spec"]
    assert _csv("0.2.0")["spec"]["replaces"] == "etcd-operator.v0.1.0"
    assert _csv("0.3.0")["spec"]["replaces"] == "etcd-operator.v0.2.0"
    assert _successors("0.1.0") == {"0.2.0", "0.3.0"}  # 0.3.0's skipRange lets 0.1.0 jump


def _storage(version: str) -> str:
    (stored,) = [v["name"] for v in _crd(version)["spec"]["versions"] if v["storage"]]
    return stored


def _spec_fields(version: str, api: str) -> set[str]:
    (entry,) = [v for v in _crd(version)["spec"]["versions"] if v["name"] == api]
    return set(entry["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])


def test_crd_evolution_is_upgrade_safe() -> None:
    assert [_storage(v) for v in VERSIONS[:3]] == ["v1alpha1", "v1alpha1", "v1beta1"]
    assert "backupSchedule" not in _spec_fields("0.1.0", "v1alpha1")
    assert "backupSchedule" in _spec_fields("0.2.0", "v1alpha1")  # the new optional field
    assert "resources" in _spec_fields("0.2.0", "v1beta1")
    for older, newer in itertools.pairwise(VERSIONS):
        old_versions = {v["name"] for v in _crd(older)["spec"]["versions"]}
        served = {v["name"] for v in _crd(newer)["spec"]["versions"] if v["served"]}
        # OLM refuses a CRD update that stops serving a version objects may be stored in.
        assert old_versions <= served
        assert _spec_fields(older, "v1alpha1") <= _spec_fields(newer, "v1alpha1")


def _rules(version: str) -> list:
    return _csv(version)["spec"]["install"]["spec"]["permissions"][0]["rules"]


def _container(version: str) -> dict:
    deployment = _csv(version)["spec"]["install"]["spec"]["deployments"][0]["spec"]
    return deployment["template"]["spec"]["containers"][0]


def test_rbac_and_deployment_change_between_releases() -> None:
    groups = [{g for r in _rules(v) for g in r["apiGroups"]} for v in VERSIONS[:3]]
    assert "policy" not in groups[0] and "policy" in groups[1]
    assert "batch" not in groups[1] and "batch" in groups[2]
    containers = [_container(v) for v in VERSIONS[:3]]
    assert [c["image"].rsplit(":", 1)[1] for c in containers] == ["0.1.0", "0.2.0", "0.3.0"]
    assert "livenessProbe" not in containers[0] and "livenessProbe" in containers[1]
    assert "readinessProbe" not in containers[1] and "readinessProbe" in containers[2]
    selectors = {
        str(_csv(v)["spec"]["install"]["spec"]["deployments"][0]["spec"]["selector"])
        for v in VERSIONS
    }
    assert len(selectors) == 1  # a Deployment's selector is immutable
