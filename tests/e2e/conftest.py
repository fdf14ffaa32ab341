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
    claim_network,
    default_assets_dir,
    find_assets,
    release_network,
    start_apiserver,
)
from olmtool.cluster.assets import CONTROL_PLANE
from olmtool.cluster.controlplane import start_control_plane
from olmtool.cluster.node import NodeAgent
from olmtool.cluster.node.kube import Kube
from olmtool.images import find_registry_binary, start_registry
from tests.e2e.helpers import TIMINGS, Cluster, node_ready, service_account_ready, wait_for
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
            f"{default_assets_dir()} (once; about 13 minutes on 2 cores; `make assets` "
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
    """The local cluster of the session: control plane + node agent (short back-off), on
    a cluster network claimed for the session (released at the end).

    Started once, stopped at the end; tests work in namespaces of their own."""
    if not all((kube_assets / name).exists() for name in CONTROL_PLANE):
        pytest.skip(f"{kube_assets} lacks kube-controller-manager or kube-scheduler")
    if os.geteuid() != 0:
        pytest.skip("the node agent's mount namespaces need root")
    state = tmp_path_factory.mktemp("node-agent")
    network = claim_network(state)
    with contextlib.ExitStack() as stack:
        stack.callback(release_network, state)
        plane = stack.enter_context(
            start_control_plane(kube_assets, state / "control-plane", network=network)
        )
        registry = None
        if find_registry_binary() is not None:
            registry = stack.enter_context(start_registry(state / "registry")).address
        started = time.monotonic()
        agent = NodeAgent(
            plane.kubeconfig,
            state / "node",
            registry=registry,
            backoff_base=0.5,
            stop_grace=5,
            heartbeat=2,
            network=network,
            serving=plane.kubelet_serving,
        )
        agent.start()
        kube = Kube(plane.kubeconfig)
        try:
            wait_for(lambda: node_ready(kube), 30, "node Ready")
            TIMINGS["agent start -> node Ready"] = time.monotonic() - started
            yield Cluster(plane, agent, kube, state / "node", registry)
        finally:
            stopping = time.monotonic()
            agent.stop()
            TIMINGS["agent stop"] = time.monotonic() - stopping
            kube.close()
            print(
                "\nnode agent timings: " + ", ".join(f"{k}: {v:.2f}s" for k, v in TIMINGS.items())
            )


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    """A fresh namespace whose default service account has its token (pods need it)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait_for(lambda: service_account_ready(cluster.kube, name, "default"), 30, "default SA")
    yield name
    with contextlib.suppress(Exception):
        cluster.kube.delete(f"/api/v1/namespaces/{name}")
