"""The etcd operator's committed bundles: valid under every suite, current, and upgradable."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from olmtool import yamlwrite
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
    return yamlwrite.plain(yamlwrite.load(path))


def _crd(version: str) -> dict:
    path = BUNDLES / version / "manifests" / "etcd.olmtool.dev_etcdclusters.yaml"
    return yamlwrite.plain(yamlwrite.load(path))


def test_at_least_four_releases() -> None:
    assert VERSIONS[:5] == ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"]


@pytest.mark.parametrize("version", VERSIONS)
def test_bundle_passes_every_suite_strictly(version: str) -> None:
    report = validate_bundle(load_bundle(BUNDLES / version), suites=select_suites(["all"]))
    assert report.findings == []
    assert report.passed(strict=True)


def test_each_release_is_what_olmtool_yaml_builds() -> None:
    """The newest release is built from the shared keys; a published one is frozen with
    what it shipped (its own relatedImages and Deployment settings), byte for byte."""
    project = load_project(ROOT / "olmtool.yaml")
    releases = project.settings.bundle.resolved_releases()
    assert [(r.version, r.frozen) for r in releases] == [
        ("0.3.0", True),
        ("0.4.0", True),
        ("0.5.0", False),
    ]
    for release in releases:
        bundle = build_bundle(release.settings, project.root, crd_dir=project.settings.crd.output)
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
    assert _csv("0.4.0")["spec"]["replaces"] == "etcd-operator.v0.3.0"
    assert _csv("0.4.0")["metadata"]["annotations"]["olm.skipRange"] == ">=0.1.0 <0.4.0"
    assert _csv("0.5.0")["spec"]["replaces"] == "etcd-operator.v0.4.0"
    assert _csv("0.5.0")["metadata"]["annotations"]["olm.skipRange"] == ">=0.1.0 <0.5.0"
    # the skipRanges let 0.1.0 jump; every release reaches 0.5.0 in one hop
    assert _successors("0.1.0") == {"0.2.0", "0.3.0", "0.4.0", "0.5.0"}
    assert _successors("0.2.0") == {"0.3.0", "0.4.0", "0.5.0"}
    assert _successors("0.3.0") == {"0.4.0", "0.5.0"}
    assert _successors("0.4.0") == {"0.5.0"}


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


def _pod(version: str) -> dict:
    deployment = _csv(version)["spec"]["install"]["spec"]["deployments"][0]["spec"]
    return deployment["template"]["spec"]


def test_from_0_4_0_the_operator_runs_non_root_with_a_writable_tmp() -> None:
    """0.4.0 runs under a real OCI runtime: a non-root user, no capabilities, a read-only
    root filesystem and an emptyDir at /tmp (tempfile and kubernetes_asyncio write there)."""
    container, pod = _container("0.4.0"), _pod("0.4.0")
    assert container["image"] == "localhost:5000/olmtool/etcd-operator:0.4.0"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
    }
    assert pod["securityContext"] == {
        "fsGroup": 65532,
        "runAsGroup": 65532,
        "runAsUser": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["volumes"] == [{"emptyDir": {}, "name": "tmp"}]
    assert container["volumeMounts"] == [{"mountPath": "/tmp", "name": "tmp"}]
    for version in VERSIONS[:3]:  # published: as they shipped
        assert "volumes" not in _pod(version) and "securityContext" not in _pod(version)
        assert "runAsNonRoot" not in _container(version)["securityContext"]


# etcd images with a local stand-in (the local cluster runs these): no other may be named
RUNNABLE_ETCD = {"quay.io/coreos/etcd:v3.4.23", "quay.io/coreos/etcd:v3.5.1"}


def test_0_4_0_names_only_etcd_images_with_a_local_stand_in() -> None:
    related = {i["name"]: i["image"] for i in _csv("0.4.0")["spec"]["relatedImages"]}
    assert related == {
        "etcd-operator": "localhost:5000/olmtool/etcd-operator:0.4.0",
        "etcd-v3.4": "quay.io/coreos/etcd:v3.4.23",
        "etcd-v3.5": "quay.io/coreos/etcd:v3.5.1",
    }
    env = {e["name"]: e.get("value") for e in _container("0.4.0")["env"]}
    assert env["ETCD_OPERATOR_BACKUP_IMAGE"] in RUNNABLE_ETCD
    assert {i for i in related.values() if "/etcd:" in i} <= RUNNABLE_ETCD
