"""``olmtool install`` / ``uninstall`` against real OLM v0.18.3 (``../shared/peers``) on
the local cluster: the same verbs users run against any cluster with OLM.

Skipped, with the reason, where the peers are absent. The operator image is pushed to
the cluster's registry, so the CSV really reaches Succeeded.
"""

from __future__ import annotations

import time
import uuid

import pytest

from olmtool.actions.install import install, uninstall
from olmtool.olm.subscription import InstallFailed
from tests.e2e import test_real_olm as real
from tests.e2e.helpers import Cluster

pytestmark = real.pytestmark
# real OLM's processes and the catalog server, shared with test_real_olm's fixtures
olm = real.olm
catalog_address = real.catalog_address
operator_ready = real.operator_ready

OPERATORS = "/apis/operators.coreos.com/v1alpha1"


@pytest.fixture(scope="module")
def ready(operator_ready: Cluster) -> Cluster:
    return operator_ready


def test_install_a_version_with_manual_approval_then_uninstall(
    ready: Cluster, catalog_address: str
) -> None:
    namespace = f"inst-{uuid.uuid4().hex[:6]}"
    result = install(
        "etcd-operator",
        catalog=catalog_address,
        version="0.2.0",
        namespace=namespace,
        approval="Manual",
        kubeconfig=ready.kubeconfig,
        timeout=240,
    )
    assert result.csv == "etcd-operator.v0.2.0"
    assert result.install_mode == "OwnNamespace" and result.targets == [namespace]
    # OLM v0.18.3 may create the install's plan twice (two overlapping resolutions of
    # the namespace): olmtool approves each, and each installs only the asked-for version
    assert 1 <= len(result.approved) <= 2
    kube = ready.kube
    for name in result.approved:
        plan = kube.get(f"{OPERATORS}/namespaces/{namespace}/installplans/{name}")
        assert plan["spec"]["clusterServiceVersionNames"] == ["etcd-operator.v0.2.0"]
    sub = kube.get(f"{OPERATORS}/namespaces/{namespace}/subscriptions/etcd-operator")
    assert sub["spec"]["startingCSV"] == "etcd-operator.v0.2.0"

    # Manual: the plan of the asked-for version was approved, no other (no upgrade to
    # 0.3.0, which replaces it, nor to 0.4.0 or the head 0.5.0, whose skipRanges hold it)
    time.sleep(5)
    for newer in ("etcd-operator.v0.3.0", "etcd-operator.v0.4.0", "etcd-operator.v0.5.0"):
        path = f"{OPERATORS}/namespaces/{namespace}/clusterserviceversions/{newer}"
        assert kube.get_or_none(path) is None, newer
    csv = kube.get(
        f"{OPERATORS}/namespaces/{namespace}/clusterserviceversions/etcd-operator.v0.2.0"
    )
    assert csv["status"]["phase"] == "Succeeded"

    removed = uninstall("etcd-operator", namespace=namespace, kubeconfig=ready.kubeconfig).deleted
    assert f"Subscription {namespace}/etcd-operator" in removed
    assert f"ClusterServiceVersion {namespace}/etcd-operator.v0.2.0" in removed
    assert any(line.startswith("CatalogSource") for line in removed)
    assert kube.get_or_none(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/etcdclusters.etcd.olmtool.dev"
    )


def test_an_unknown_package_fails_with_olms_reason(ready: Cluster, catalog_address: str) -> None:
    namespace = f"inst-{uuid.uuid4().hex[:6]}"
    message = r"resolution failed: .*no operators found in package no-such-operator"
    with pytest.raises(InstallFailed, match=message):
        install(
            "no-such-operator",
            catalog=catalog_address,
            namespace=namespace,
            kubeconfig=ready.kubeconfig,
            timeout=90,
        )
