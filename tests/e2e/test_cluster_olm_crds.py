"""``cluster up`` installs OLM's API (the ``operators.coreos.com`` CRDs) unless
``--no-olm``; ``cluster status`` reports the Established ones.

Each test prints how long ``up`` took (``-s`` shows it): the CRDs are applied right after
the apiserver answers and waited for last, so they should add well under a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from olmtool.cluster import clusterstatus, lifecycle
from olmtool.cluster.olmcrds import CRDS, Api, established
from olmtool.olm.crdfiles import olm_crds
from tests.catalog.test_cli_validate import cli

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
NAMES = sorted(crd["metadata"]["name"] for crd in olm_crds())


def _api(cluster: lifecycle.Cluster) -> Api:
    return Api(cluster.server, cluster.ca_file, cluster.token)


def _up(root: Path, name: str, assets: Path, **options: bool) -> lifecycle.Cluster:
    started = time.monotonic()
    cluster = lifecycle.up(
        name, root=root, assets=assets, registry_port=None, node=False, **options
    )
    print(f"\ncluster up {options or ''}: {time.monotonic() - started:.2f}s")
    return cluster


def test_up_installs_olm_crds_established(kube_assets: Path, tmp_path: Path) -> None:
    cluster = _up(tmp_path, "olm", kube_assets)
    try:
        api = _api(cluster)
        for name in NAMES:
            assert established(api.request("GET", f"{CRDS}/{name}")), name
        served = api.request("GET", "/apis/operators.coreos.com/v1alpha1")
        kinds = {r["kind"] for r in served["resources"] if "/" not in r["name"]}
        assert kinds == {"CatalogSource", "ClusterServiceVersion", "InstallPlan", "Subscription"}
        status = clusterstatus.status("olm", root=tmp_path)
        assert status.olm_crds == NAMES == status.as_dict()["olmCRDs"]
        # A Subscription is stored with every field, the initialisms included.
        path = "/apis/operators.coreos.com/v1alpha1/namespaces/default/subscriptions"
        spec = {"source": "c", "sourceNamespace": "olm", "name": "p", "startingCSV": "p.v1"}
        body = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                "metadata": {"name": "p"}, "spec": spec}  # fmt: skip
        assert api.request("POST", path, body)["spec"] == spec
        # `up` again on the running cluster re-applies them (a no-op) and changes nothing.
        again = lifecycle.up(
            "olm", root=tmp_path, assets=kube_assets, registry_port=None, node=False
        )
        assert again.server == cluster.server
        assert api.request("GET", f"{path}/p")["spec"] == spec
    finally:
        lifecycle.down("olm", root=tmp_path, delete=True)


def test_no_olm_installs_none(
    kube_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI: ``up --no-olm``, then ``status -o json`` reports no OLM CRDs."""
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
    started = time.monotonic()
    up = cli(
        "cluster", "up", "--name", "bare", "--no-olm", "--no-node", "--no-registry", "-o", "json"
    )
    print(f"\ncluster up --no-olm: {time.monotonic() - started:.2f}s")
    try:
        assert up.returncode == 0, (up.error, up.exception)
        cluster = lifecycle.require_cluster("bare")
        assert _api(cluster).request("GET", CRDS)["items"] == []
        status = cli("cluster", "status", "--name", "bare", "-o", "json")
        assert json.loads(status.stdout)["olmCRDs"] == []
        _client_verbs_say_olm_is_missing(cluster)
    finally:
        lifecycle.down("bare", delete=True)


def _client_verbs_say_olm_is_missing(cluster: lifecycle.Cluster) -> None:
    """``install``, ``uninstall`` and ``test upgrade`` on a cluster without OLM's CRDs:
    one line that says so, exit 1, nothing created."""
    verbs = [
        ["install", "etcd-operator", "--catalog", "127.0.0.1:1", "--timeout", "20"],
        ["uninstall", "etcd-operator"],
        ["test", "upgrade", "--catalog", str(CATALOG), "--package", "etcd-operator", "--from",
         "0.2.0", "--timeout", "20"],
    ]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "400"}
    for verb in verbs:
        args = [sys.executable, "-m", "olmtool", *verb, "--kubeconfig", cluster.kubeconfig]
        run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 1, (verb, run.stderr)
        assert len(lines) == 1 and lines[0].startswith("error: OLM is not installed"), lines
        assert cluster.server in lines[0] and "Traceback" not in run.stderr
    namespaces = _api(cluster).request("GET", "/api/v1/namespaces")["items"]
    assert "etcd-operator" not in [n["metadata"]["name"] for n in namespaces]
