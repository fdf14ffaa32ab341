"""End-to-end fixtures: a real etcd + kube-apiserver, started once per test session.

The binaries come from KUBEBUILDER_ASSETS or the olmtool cache; when missing they are
built from Debian's kubernetes source package (minutes, once: `make test` does it before
pytest starts; here the build's stage lines go to the terminal, past pytest's capture).
Tests are skipped, with the reason, only where that build cannot run (not Debian, or not
root/sudo).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.cluster import (
    ControlPlane,
    build_assets,
    build_blocker,
    default_assets_dir,
    find_assets,
    lifecycle,
    start_apiserver,
)
from olmtool.cluster.assets import CONTROL_PLANE, NODE
from olmtool.cluster.controlplane import prepare_plane
from olmtool.cluster.kubeletnode import missing_tools
from olmtool.cluster.network import ClusterNetwork
from olmtool.kube import Kube
from tests.e2e.helpers import TIMINGS, Cluster, service_account_ready, wait_for
from tests.e2e.ocirun import require_runtime

REQUIRED = ("etcd", "kube-apiserver")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def kube_assets(request: pytest.FixtureRequest) -> Path:
    """The folder holding etcd and kube-apiserver (built on first use, visibly)."""
    assets = find_assets(REQUIRED)
    if assets is None:
        reason = build_blocker()
        if reason and not os.environ.get("CI"):
            pytest.skip(f"no kube-apiserver: set KUBEBUILDER_ASSETS or build it ({reason})")
        assets = _build_in_sight(request.config)
    return assets


@pytest.fixture(scope="session")
def oci_runtime() -> None:
    """runc, umoci and ip as root, for running images (tests/e2e/ocirun.py): skipped with
    the reason where missing, like the assets above; a failure in CI."""
    require_runtime()


def _build_in_sight(config: pytest.Config) -> Path:
    """Build the control plane with pytest's capture suspended, so that the build
    script's stage lines reach the terminal instead of a silent wait of minutes."""
    capture = config.pluginmanager.getplugin("capturemanager")
    suspended = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with suspended:
        print(
            "\nbuilding the Kubernetes control plane for the e2e tests into "
            f"{default_assets_dir()} (once; about 8 minutes on 2 cores; `make assets` "
            "does it before pytest)",
            file=sys.stderr,
            flush=True,
        )
        return build_assets()


@pytest.fixture(scope="session")
def control_plane(
    kube_assets: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """One control plane shared by the session's tests."""
    with start_apiserver(kube_assets, tmp_path_factory.mktemp("control-plane")) as plane:
        yield plane


@pytest.fixture(scope="session")
def cluster(kube_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The local cluster of the session, as `olmtool cluster up` starts it: the
    control plane, a registry with the stand-in images, and a real node (containerd,
    kubelet, kube-proxy, cluster DNS, provisioner) on a cluster network of its own.

    Started once, removed at the end (`down --delete`); tests work in namespaces of
    their own."""
    if not all((kube_assets / name).exists() for name in (*CONTROL_PLANE, *NODE)):
        if os.environ.get("CI"):
            pytest.fail(f"{kube_assets} lacks a real node's binaries (make assets)")
        pytest.skip(f"{kube_assets} lacks a real node's binaries: olmtool cluster assets")
    if os.geteuid() != 0:
        pytest.skip("a real node (containerd, network namespaces) needs root")
    if missing := missing_tools():
        if os.environ.get("CI"):
            pytest.fail(f"a real node needs {', '.join(missing)} (make tools)")
        pytest.skip(f"a real node needs {', '.join(missing)} (make tools)")
    root = tmp_path_factory.mktemp("clusters")
    started = time.monotonic()
    made = lifecycle.up(
        "e2e", root=root, assets=kube_assets, registry_port=0,
        olm_crds=False, engine=False,
    )  # fmt: skip
    TIMINGS["up -> node Ready"] = time.monotonic() - started
    network = ClusterNetwork(made.network or 1)
    state = Path(made.state_dir)
    plane = prepare_plane(state, network=network, advertise=network.host_address)
    kube = Kube(plane.kubeconfig)
    try:
        yield Cluster(plane, kube, state, made.registry, made, root)
    finally:
        stopping = time.monotonic()
        kube.close()
        lifecycle.down("e2e", root=root, delete=True)
        TIMINGS["down --delete"] = time.monotonic() - stopping
        print("\nreal node timings: " + ", ".join(f"{k}: {v:.2f}s" for k, v in TIMINGS.items()))


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    """A fresh namespace whose default service account has its token (pods need it)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait_for(lambda: service_account_ready(cluster.kube, name, "default"), 30, "default SA")
    yield name
    with contextlib.suppress(Exception):
        cluster.kube.delete(f"/api/v1/namespaces/{name}")
