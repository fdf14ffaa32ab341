"""What an InstallPlan may create, on both OLM engines (real OLM v0.18.3 is the oracle).

A catalog both validators call valid can still ship kinds OLM never applies: a Pod, a
Namespace, a ValidatingWebhookConfiguration, a DaemonSet. Real OLM v0.18.3 marks such a
step ``UnsupportedResource``, creates nothing of it and fails the plan as invalid; what
came before it in the plan (a Secret, a ClusterRoleBinding to cluster-admin: kinds it does
apply) exists, what comes after it (the operator's ServiceAccount and RBAC) does not, so
the CSV never succeeds. A supported kind whose API is not served (a ServiceMonitor without
the monitoring CRDs) fails the plan the same way, and ``follow`` (what ``olmtool
install`` waits with) reports OLM's reason. A package plus namespace longer than a label
name allows installs without a loop. Uninstall then leaves nothing the install created.

All scenarios run at once (each in its own namespace) so the engines' retry window,
about a minute, is waited out once per engine.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from olmtool.olm.removal import uninstall
from olmtool.olm.subscription import InstallFailed, follow
from tests.e2e import olm_engines
from tests.e2e.helpers import JSON, wait_for
from tests.e2e.olm_engines import STEP, Bundle, World, deployment, status, steps

engine = olm_engines.engine
world = olm_engines.world
SLEEP = ["sh", "-c", "sleep 3600"]
VERBS = ("admin", "edit", "view")
LONG_PACKAGE = "hostile-long-package-name-that-nearly-fills-a-label"  # CSV name <= 63


def hostile_objects(w: World) -> dict[str, JSON]:
    """One object of each kind OLM v0.18.3 refuses, harmless if it were created."""
    pod_spec = {"containers": [{"name": "c", "image": "busybox:1.35", "command": SLEEP}]}
    return {
        "Pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"hostile-pod-{w.id}"},
            "spec": pod_spec,
        },
        "Namespace": {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": f"hostile-ns-{w.id}"},
        },
        "ValidatingWebhookConfiguration": {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"hostile-webhook-{w.id}"},
            "webhooks": [
                {
                    "name": f"nothing.hostile{w.id}.olmtool.test",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Ignore",
                    "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                    "rules": [
                        {
                            "apiGroups": [f"hostile{w.id}.olmtool.test"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["nothings"],
                        }
                    ],
                }
            ],
        },
        "DaemonSet": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": f"hostile-ds-{w.id}"},
            "spec": {
                "selector": {"matchLabels": {"app": "hostile"}},
                "template": {"metadata": {"labels": {"app": "hostile"}}, "spec": pod_spec},
            },
        },
    }


def companions(w: World, kind: str) -> list[JSON]:
    """Objects of kinds OLM applies, before the hostile one in the bundle."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "bundle-secret"},
            "stringData": {"token": "not-a-secret"},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"hostile-admin-{kind.lower()}-{w.id}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": "default"}],
        },
    ]


def where(w: World, obj: JSON, namespace: str) -> str:
    """The REST path of a manifest of this module (its kind's scope)."""
    api, kind, name = obj["apiVersion"], obj["kind"], obj["metadata"]["name"]
    base = f"/apis/{api}" if "/" in api else f"/api/{api}"
    plural = {"ValidatingWebhookConfiguration": "validatingwebhookconfigurations"}.get(
        kind, kind.lower() + "s"
    )
    namespaced = kind not in ("Namespace", "ValidatingWebhookConfiguration", "ClusterRoleBinding")
    scope = f"/namespaces/{namespace}" if namespaced else ""
    return f"{base}{scope}/{plural}/{name}"


def failed_plan(w: World, namespace: str, csv: str) -> JSON:
    return w.wait_plan(namespace, csv, ("Failed",), timeout=STEP)


def test_the_plan_creates_only_what_olm_applies_and_uninstall_removes_it(world: World) -> None:
    w = world
    hostile = hostile_objects(w)
    installs: dict[str, tuple[str, Bundle]] = {}
    for kind, obj in hostile.items():
        package = f"hostile-{kind.lower()}"
        bundle = Bundle(package, "0.1.0", objects=[*companions(w, kind), obj])
        installs[kind] = (w.install([bundle]), bundle)
    monitoring = {  # a supported kind whose API nobody serves here
        "apiVersion": f"monitoring{w.id}.olmtool.test/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "metrics"},
        "spec": {"endpoints": [{"port": "metrics"}]},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "metrics"},
        "spec": {"ports": [{"name": "metrics", "port": 8383}], "selector": {"app": "x"}},
    }
    unserved = Bundle("unserved-monitoring", "0.1.0", objects=[monitoring, service])
    unserved_ns = w.install([unserved])
    # and as a user runs it: `olmtool install` exits 1 with OLM's reason
    cli_ns = f"cli-{w.id}"
    cli = subprocess.Popen(
        [sys.executable, "-m", "olmtool", "install", unserved.package, "--catalog",
         w.serve([unserved]), "--namespace", cli_ns, "--timeout", str(STEP),
         "--kubeconfig", str(w.engine.cluster.kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    long_bundle = Bundle(LONG_PACKAGE, "0.1.0", deployments=[deployment("long-operator")])
    long_ns = w.namespace("longname")
    w.catalog_source(long_ns, w.serve([long_bundle]))
    w.operator_group(long_ns)
    w.subscription(long_ns, LONG_PACKAGE)
    assert len(f"{LONG_PACKAGE}.{long_ns}") >= 69

    # every hostile kind: UnsupportedResource, nothing of it created, the plan Failed
    verdicts = {}
    for kind, (namespace, bundle) in installs.items():
        plan = failed_plan(w, namespace, bundle.name)
        by_kind = {k: state for k, _, state in steps(plan)}
        verdicts[kind] = by_kind[kind]
        installed = next(c for c in status(plan)["conditions"] if c["type"] == "Installed")
        assert installed["reason"] == "InstallComponentFailed", installed
        assert "the InstallPlan contains invalid data" in installed.get("message", ""), installed
        assert w.kube.get_or_none(where(w, hostile[kind], namespace)) is None, kind
        secret, binding = companions(w, kind)
        assert w.kube.get_or_none(where(w, secret, namespace)) is not None, kind
        assert w.kube.get_or_none(where(w, binding, namespace)) is not None, kind
        account = f"/api/v1/namespaces/{namespace}/serviceaccounts/operator"
        assert w.kube.get_or_none(account) is None, f"{kind}: RBAC ran after a failed step"
        assert status(w.csv(namespace, bundle.name)).get("phase") != "Succeeded", kind
    assert verdicts == dict.fromkeys(hostile, "UnsupportedResource")

    # the unserved ServiceMonitor: the plan fails with OLM's reason, `follow` says so
    plan = failed_plan(w, unserved_ns, unserved.name)
    assert w.kube.get_or_none(where(w, service, unserved_ns)) is None
    with pytest.raises(InstallFailed, match="InstallComponentFailed"):
        follow(w.kube, unserved_ns, unserved.package, timeout=30)
    _, stderr = cli.communicate(timeout=STEP + 60)
    assert cli.returncode == 1, stderr
    assert "InstallComponentFailed" in stderr and "Traceback" not in stderr, stderr

    # the long name installs, without a loop of events
    w.wait_installed(long_ns, LONG_PACKAGE, long_bundle.name)
    events = w.kube.get(f"/api/v1/namespaces/{long_ns}/events")["items"]
    warnings = [e for e in events if e.get("type") == "Warning"]
    assert len(warnings) <= 5, [e.get("message") for e in warnings]

    # uninstall leaves nothing the install created
    for namespace, bundle in installs.values():
        uninstall(w.kube, namespace, bundle.package)
    for kind, (namespace, _) in installs.items():
        for obj in companions(w, kind):
            wait_for(
                lambda o=obj, n=namespace: w.kube.get_or_none(where(w, o, n)) is None,
                60,
                f"{obj['kind']} {obj['metadata']['name']} gone after uninstall",
            )


def test_a_deleted_operator_group_takes_its_cluster_roles(world: World) -> None:
    """OLM writes ``<group>-admin|edit|view`` aggregated ClusterRoles for every
    OperatorGroup and removes them with it."""
    w = world
    namespace = w.namespace()
    group = w.operator_group(namespace)["metadata"]["name"]
    roles = [f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{group}-{v}" for v in VERBS]
    wait_for(lambda: all(w.kube.get_or_none(r) for r in roles), STEP, f"{group}'s ClusterRoles")
    w.kube.delete(f"/apis/operators.coreos.com/v1/namespaces/{namespace}/operatorgroups/{group}")
    wait_for(
        lambda: not any(w.kube.get_or_none(r) for r in roles),
        STEP,
        f"{group}'s ClusterRoles deleted",
    )
    assert all(w.kube.get_or_none(r) is None for r in roles)
