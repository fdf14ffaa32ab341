"""olmtool's OLM engine (``python -m olmtool.engine``) installs and upgrades the etcd
operator on the local cluster, exactly as real OLM does in test_upgrade_real_olm.py:
a Subscription with startingCSV and Manual approval, the CSV's alm-examples, the etcd
probe, then approval hop by hop to the head with the data intact."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.olm.upgrade_run import run_upgrade
from tests.e2e import etcd_env
from tests.e2e import test_real_olm as real
from tests.e2e.helpers import Cluster

HEAD = "etcd-operator.v0.3.0"


@pytest.fixture(scope="module")
def engine(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The engine as its own process, as ``cluster up`` runs it; yields its namespace."""
    logs = tmp_path_factory.mktemp("engine")
    real._install_olm_crds(cluster.kube)
    namespace = f"olm-{uuid.uuid4().hex[:6]}"
    cluster.kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    argv = [sys.executable, "-m", "olmtool.engine", f"--kubeconfig={cluster.kubeconfig}"]
    argv += [f"--namespace={namespace}", "--interval=2"]
    if cluster.registry:
        argv.append(f"--registry={cluster.registry}")
    with real._process(argv, logs / "engine.log"):
        yield namespace
    print(f"\nengine log: {logs / 'engine.log'}")
    _show_log(logs / "engine.log")


def _show_log(log: Path) -> None:
    text = log.read_text()
    if "Traceback" in text:
        print(text[-6000:])


@pytest.fixture(scope="module")
def ready(cluster: Cluster, engine: str) -> Cluster:
    if cluster.registry is None:
        pytest.skip("docker-registry is not installed (make tools)")
    from tests.e2e.test_etcd_operator import push_operator_images

    push_operator_images(cluster.registry)
    real._install_monitoring_crds(cluster.kube)
    operator_dir = str(etcd_env.REPO / "operator")
    if operator_dir not in sys.path:
        sys.path.insert(0, operator_dir)
    return cluster


catalog_address = real.catalog_address


@pytest.mark.parametrize("start", ["etcd-operator.v0.1.0", "etcd-operator.v0.2.0"])
def test_every_release_upgrades_to_the_head_with_data_intact(
    ready: Cluster, catalog_address: str, start: str
) -> None:
    from etcd_operator.probe import EtcdProbe

    run = run_upgrade(
        ready.kube,
        catalog_address=catalog_address,
        package="etcd-operator",
        start_csv=start,
        head_csv=HEAD,
        namespace=f"up-{uuid.uuid4().hex[:6]}",
        probe=EtcdProbe(),
        timeout=240,
    )
    print(
        f"\n{start}: installed in {run.install_seconds:.1f}s, hops "
        + ", ".join(f"{h.from_csv}->{h.to_csv} {h.seconds:.1f}s" for h in run.hops)
    )
    assert run.passed, run.failure
    assert run.reached == HEAD
    assert [h.to_csv for h in run.hops] == [HEAD]
