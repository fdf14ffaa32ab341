"""``olmtool install`` / ``uninstall`` / ``test upgrade`` as clients of a real apiserver and
each OLM engine: refused credentials are one line, and an install that cannot succeed
(catalog unreachable, ``minKubeVersion`` above 1.20, an operator image the registry does
not have) fails within seconds with OLM's words and removes what it created, leaving
what was there before. Unit tests: tests/test_cluster_clients.py,
tests/olm/test_install_failures.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from olmtool.actions.install import install
from olmtool.olm import InstallFailed
from olmtool.ports import free_port
from tests.e2e import olm_engines
from tests.e2e.helpers import Cluster, wait_for
from tests.e2e.olm_engines import V1, V1ALPHA1, Bundle, World, deployment

engine = olm_engines.engine
world = olm_engines.world
REPO = Path(__file__).resolve().parents[2]


def _gone_or_terminating(w: World, namespace: str) -> bool:
    found = w.kube.get_or_none(f"/api/v1/namespaces/{namespace}")
    return found is None or (found.get("status") or {}).get("phase") == "Terminating"


def _left(w: World, namespace: str) -> list[str]:
    """The OLM objects left in ``namespace`` (Subscriptions, CatalogSources, CSVs)."""
    names = []
    for base, plural in (
        (V1ALPHA1, "subscriptions"),
        (V1ALPHA1, "catalogsources"),
        (V1ALPHA1, "clusterserviceversions"),
        (V1, "operatorgroups"),
    ):
        items = w.kube.get(f"{base}/namespaces/{namespace}/{plural}").get("items", [])
        names += [f"{plural}/{i['metadata']['name']}" for i in items]
    return names


def test_an_unreachable_catalog_fails_within_the_timeout_and_is_cleaned_up(world: World) -> None:
    w = world
    namespace = f"unreach-{w.id}"
    w.namespaces.append(namespace)  # deleted at the end whatever happens
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(InstallFailed) as caught:
        install(
            "nothing",
            catalog=address,
            channel="stable",
            namespace=namespace,
            kubeconfig=w.engine.cluster.kubeconfig,
            timeout=30,
        )
    took = time.monotonic() - started
    text = str(caught.value)
    assert took < 36, text
    assert f"catalog source {namespace}/nothing-catalog is unreachable" in text or (
        "resolution failed" in text
    ), text
    assert "removed what this install created:" in text and f"Namespace {namespace}" in text
    wait_for(lambda: _gone_or_terminating(w, namespace), 30, "the namespace going")


def test_min_kube_version_fails_at_once_and_what_was_there_stays(world: World) -> None:
    w = world
    namespace = w.namespace("minkube")
    w.operator_group(namespace)  # there before: must stay
    bundle = Bundle(f"minkube{w.id}", "0.1.0", min_kube_version="1.25.0")
    started = time.monotonic()
    with pytest.raises(InstallFailed) as caught:
        install(
            bundle.package,
            catalog=w.serve([bundle]),
            namespace=namespace,
            kubeconfig=w.engine.cluster.kubeconfig,
            timeout=120,
        )
    text = str(caught.value)
    assert time.monotonic() - started < 90, text
    assert "cannot install: RequirementsNotMet" in text and "1.25.0" in text, text
    assert f"Subscription {namespace}/{bundle.package}" in text
    assert f"OperatorGroup {namespace}/" not in text.split("removed")[-1]
    wait_for(
        lambda: _left(w, namespace) == [f"operatorgroups/{namespace}-og"],
        30,
        "only the OperatorGroup left",
    )


def test_an_image_the_registry_does_not_have_fails_with_the_pull_error(world: World) -> None:
    w = world
    namespace = f"pull-{w.id}"
    w.namespaces.append(namespace)
    bad = deployment(f"pull{w.id}-operator")
    # the cluster's registry (the node's mirror of localhost:5000 and quay.io) answers 404
    where = "localhost:5000/olmtool" if w.engine.cluster.registry else "quay.io/olmtool-tests"
    bad["spec"]["template"]["spec"]["containers"][0]["image"] = f"{where}/no-such-operator:0.1.O"
    bundle = Bundle(f"pull{w.id}", "0.1.0", deployments=[bad])
    started = time.monotonic()
    with pytest.raises(InstallFailed) as caught:
        install(
            bundle.package,
            catalog=w.serve([bundle]),
            namespace=namespace,
            kubeconfig=w.engine.cluster.kubeconfig,
            timeout=150,
        )
    text = str(caught.value)
    assert time.monotonic() - started < 120, text
    assert "cannot start: pod" in text and "no-such-operator" in text, text
    # the kubelet's event, once (its message names the image four times on its own)
    assert text.count("Failed to pull image") == 1 and "not found" in text, text
    wait_for(lambda: _gone_or_terminating(w, namespace), 30, "the namespace going")


@pytest.mark.parametrize(
    "args",
    [
        ["uninstall", "x"],
        ["install", "x", "--catalog", "127.0.0.1:1"],
        [
            "test",
            "upgrade",
            "--catalog",
            "catalog",
            "--package",
            "etcd-operator",
            "--from",
            "0.2.0",
        ],
    ],
)
def test_a_wrong_token_is_one_line(cluster: Cluster, tmp_path: Path, args: list[str]) -> None:
    import yaml

    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": "not-the-token"}
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(json.dumps(config))
    result = subprocess.run(
        [sys.executable, "-m", "olmtool", *args, "--kubeconfig", str(wrong)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "refused the credentials in kubeconfig" in lines[0] and "401" in lines[0]
