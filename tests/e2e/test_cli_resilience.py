"""The long-running verbs as users run them, on local clusters that ``cluster up`` starts
(under a test folder of their own, ``OLMTOOL_CLUSTERS_DIR``):

- ``olmtool test upgrade`` rides out a kill -9 of the apiserver during a hop (``cluster
  up`` restarts it), and a cluster-scoped alm-example is created at its scope;
- a stopped cluster's state on the same registry port (``down`` without ``--delete``)
  lends the new default cluster no login: pushing the operator's images (what ``make
  images`` does) and ``olmtool install etcd-operator --catalog catalog`` succeed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.actions import cluster_down, cluster_up
from olmtool.cluster import lifecycle
from olmtool.kube import Kube
from olmtool.ports import free_port
from olmtool.serve import start_server
from tests.e2e import etcd_env
from tests.e2e.helpers import wait_for
from tests.e2e.olm_engines import Bundle, crd, write_catalog

OPERATORS = "/apis/operators.coreos.com/v1alpha1"


@pytest.fixture
def clusters(kube_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Clusters under ``tmp_path/clusters`` (stopped and deleted at the end), with the
    control plane from ``kube_assets``; no ``$KUBECONFIG`` (the local cluster is used)."""
    root = tmp_path / "clusters"
    root.mkdir()
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(root))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    try:
        yield root
    finally:
        for name in sorted(p.name for p in root.iterdir() if p.is_dir()):
            try:
                cluster_down(name, delete=True)
            except Exception as exc:  # the next cluster must still go
                print(f"cluster {name}: {exc}")


def olmtool(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "olmtool", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ.copy(),
        start_new_session=True,
    )


def finished(process: subprocess.Popen[str], timeout: float) -> tuple[int, str]:
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise AssertionError(f"still running after {timeout:g}s:\n{output}") from None
    return process.returncode, output


def test_test_upgrade_rides_out_an_apiserver_kill_during_a_hop(
    clusters: Path, tmp_path: Path
) -> None:
    # a registry: the bundles' Deployments run busybox, pulled from it by the real node
    cluster = cluster_up("resilient", registry_port=0)
    kube = Kube(Path(cluster.kubeconfig))
    group = "things.resilient.olmtool.test"
    things = crd(group, "Thing", ["v1"])
    things["spec"]["scope"] = "Cluster"
    example = {"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": "a-thing"}}
    examples = {"alm-examples": json.dumps([example])}
    bundles = [
        Bundle("resilient", "0.1.0", owned=[things], annotations=examples),
        Bundle(
            "resilient", "0.2.0", replaces="resilient.v0.1.0", owned=[things], annotations=examples
        ),
    ]
    catalog = write_catalog(tmp_path / "catalog", bundles)
    server = start_server(catalog, grpc_port=free_port(), http_port=None)
    try:
        run = olmtool(
            "test", "upgrade", "--catalog", server.grpc_address, "--package", "resilient",
            "--all", "--examples", "create", "--timeout", "300", "--name", "resilient",
        )  # fmt: skip

        def hop_started() -> bool:
            if run.poll() is not None:
                return True  # ended before the hop: its output says why
            plans = kube.get(f"{OPERATORS}/installplans")["items"]
            return any(
                "resilient.v0.2.0" in p["spec"]["clusterServiceVersionNames"]
                and p["spec"].get("approved")  # test upgrade approved it: the hop runs
                for p in plans
            )

        try:
            wait_for(hop_started, 240, "the InstallPlan of the hop to 0.2.0", interval=0.2)
        except AssertionError:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
            raise AssertionError(finished(run, 10)[1]) from None
        assert run.poll() is None, f"test upgrade ended before the hop:\n{finished(run, 1)[1]}"
        apiserver = lifecycle.read_cluster("resilient").components["kube-apiserver"]
        os.kill(apiserver.pid, signal.SIGKILL)
        time.sleep(3)  # an outage of some seconds, as a crash and a restart take
        cluster_up("resilient", registry_port=0)  # (the recorded port is kept)
        code, output = finished(run, 600)
    finally:
        server.stop(grace=0)
        kube.close()
    assert code == 0, output
    assert "passed" in output.lower(), output


def test_a_stopped_clusters_registry_login_does_not_leak_into_the_next_one(
    clusters: Path,
) -> None:
    port = free_port()
    cluster_up("a-stale", registry_port=port, node=False)  # sorts first
    cluster_down("a-stale")  # its state, login and recorded registry address stay
    cluster = cluster_up(registry_port=port)  # the default cluster, on the same port
    assert cluster.registry == f"127.0.0.1:{port}"
    from tests.e2e.test_etcd_operator import push_operator_images

    push_operator_images(cluster.registry)  # what `make images` does
    install = olmtool(
        "install", "etcd-operator", "--catalog", str(etcd_env.REPO / "catalog"),
        "--timeout", "300",
    )  # fmt: skip
    code, output = finished(install, 400)
    assert code == 0, output
    assert "installed etcd-operator.v0.5.0" in output, output
