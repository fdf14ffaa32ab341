"""The engine's pure rules: OperatorGroup targets and install modes, InstallPlan steps,
Deployments from a CSV, CRD update safety, requirement checks, catalog health."""

from __future__ import annotations

import json
from typing import Any

import pytest

from olmtool.engine import deployments, groups, steps
from olmtool.engine.catalogs import parse_duration
from olmtool.engine.crdsafety import UnsafeCRDUpdate, check_update
from olmtool.engine.objects import now as objects_now
from olmtool.engine.requirements import _rule_checks
from olmtool.engine.subscriptions import _health_condition
from olmtool.olm.resolver import ResolvedBundle

JSON = dict[str, Any]


def csv(name: str = "op.v0.2.0", modes: tuple[str, ...] = ("OwnNamespace",)) -> JSON:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": "u-1",
            "annotations": {"a": "from-csv", "olm.targetNamespaces": "ns"},
        },
        "spec": {
            "version": "0.2.0",
            "replaces": "op.v0.0.1",
            "installModes": [
                {"type": t, "supported": t in modes}
                for t in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
            ],
            "customresourcedefinitions": {
                "owned": [{"name": "widgets.example.com", "version": "v1", "kind": "Widget"}]
            },
            "install": {
                "strategy": "deployment",
                "spec": {
                    "permissions": [
                        {
                            "serviceAccountName": "op",
                            "rules": [
                                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
                            ],
                        }
                    ],
                    "clusterPermissions": [
                        {
                            "serviceAccountName": "op",
                            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
                        }
                    ],
                    "deployments": [
                        {
                            "name": "op",
                            "spec": {
                                "replicas": 1,
                                "template": {
                                    "metadata": {
                                        "annotations": {"a": "from-template", "b": "kept"}
                                    },
                                    "spec": {
                                        "serviceAccountName": "op",
                                        "containers": [
                                            {
                                                "name": "c",
                                                "image": "busybox",
                                                "env": [{"name": "X", "value": "1"}],
                                            }
                                        ],
                                    },
                                },
                            },
                        }
                    ],
                },
            },
        },
    }


def bundle(replaces: str = "op.v0.1.0", subscription: str = "op") -> ResolvedBundle:
    return ResolvedBundle(
        "op.v0.2.0",
        "op",
        "stable",
        "0.2.0",
        "cat",
        "ns",
        replaces=replaces,
        subscription=subscription,
    )


# --- OperatorGroups -------------------------------------------------------------------------


def namespace(name: str, **labels: str) -> JSON:
    return {"metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"targetNamespaces": ["b", "a", "b"]}, ["a", "b"]),
        ({}, [""]),
        ({"selector": {}}, [""]),
        ({"selector": {"matchLabels": {"team": "x"}}}, ["n1"]),
        ({"selector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}}, ["n1", "n2"]),
        (
            {
                "selector": {
                    "matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["x"]}]
                }
            },
            ["n2", "n3"],
        ),
    ],
)
def test_target_namespaces(spec: JSON, expected: list[str]) -> None:
    found = [namespace("n1", team="x"), namespace("n2", team="y"), namespace("n3")]
    assert groups.target_namespaces({"spec": spec}, found) == expected


@pytest.mark.parametrize(
    ("targets", "modes", "message"),
    [
        (["ns"], ("OwnNamespace",), None),
        (
            ["other"],
            ("OwnNamespace",),
            "SingleNamespace InstallModeType not supported, cannot configure to watch one namespace",
        ),
        (
            ["a", "b"],
            ("OwnNamespace",),
            "MultiNamespace InstallModeType not supported, cannot configure to watch 2 namespaces",
        ),
        (
            [""],
            ("OwnNamespace",),
            "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces",
        ),
        (
            ["ns", "b"],
            ("MultiNamespace",),
            "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace",
        ),
        (["ns", "b"], ("MultiNamespace", "OwnNamespace"), None),
        ([""], ("AllNamespaces",), None),
    ],
)
def test_install_mode_support(
    targets: list[str], modes: tuple[str, ...], message: str | None
) -> None:
    assert groups.unsupported_message(csv(modes=modes), "ns", targets) == message


def test_provided_apis_are_kind_version_group_sorted() -> None:
    other = csv()
    other["spec"]["customresourcedefinitions"]["owned"] = [
        {"name": "a.b.io", "version": "v2", "kind": "A"}
    ]
    assert groups.provided_apis([csv(), other]) == "A.v2.b.io,Widget.v1.example.com"


# --- InstallPlan steps ----------------------------------------------------------------------


def crd() -> JSON:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
    }


def test_steps_follow_olm_v0_18_3s_order_bundle_objects_before_rbac() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}}
    built = steps.build_steps(
        bundle(),
        [service, csv(), crd()],
        [{"type": "olm.package", "value": {"packageName": "op", "version": "0.2.0"}}],
    )
    kinds = [s["resource"]["kind"] for s in built]
    assert kinds == [
        "ClusterServiceVersion",
        "CustomResourceDefinition",
        "Service",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    ]
    assert {s["status"] for s in built} == {"Unknown"}
    assert {(s["resource"]["sourceName"], s["resource"]["sourceNamespace"]) for s in built} == {
        ("cat", "ns")
    }
    created = json.loads(built[0]["resource"]["manifest"])
    assert created["spec"]["replaces"] == "op.v0.1.0"  # the resolver's, not the bundle's
    assert "namespace" not in created["metadata"]
    assert (
        '"packageName":"op"'
        in created["metadata"]["annotations"]["operatorframework.io/properties"]
    )
    assert "provided" in created["metadata"]["labels"].values()
    role = json.loads(built[4]["resource"]["manifest"])
    assert role["metadata"]["name"].startswith("op.v0.2.0-op-")


def test_a_fresh_install_has_no_replaces_and_a_dependency_gets_its_subscription() -> None:
    dependency = bundle(replaces="", subscription="")
    generated = steps.dependency_subscription(dependency, "ns", "Automatic")
    built = steps.build_steps(dependency, [csv()], subscription=generated)
    assert "replaces" not in json.loads(built[0]["resource"]["manifest"])["spec"]
    assert (built[-1]["resource"]["kind"], built[-1]["resource"]["name"]) == (
        "Subscription",
        "op-stable-cat-ns",
    )
    assert generated["spec"]["startingCSV"] == "op.v0.2.0"


@pytest.mark.parametrize(
    "kind",
    ["Pod", "Namespace", "ValidatingWebhookConfiguration", "DaemonSet", "Deployment", "Job"],
)
def test_kinds_olm_v0_18_3_does_not_apply_are_unsupported(kind: str) -> None:
    assert kind not in steps.SUPPORTED_KINDS


def test_the_bundle_kinds_olm_applies_are_supported() -> None:
    for kind in ("Secret", "ConfigMap", "Service", "ClusterRoleBinding", "PriorityClass"):
        assert kind in steps.SUPPORTED_KINDS
    assert {"ServiceMonitor", "PrometheusRule", "PodDisruptionBudget"} <= steps.SUPPORTED_KINDS


def test_rbac_names_fit_in_63_characters() -> None:
    name = steps.rbac_name(
        "a-very-long-operator-name.v10.20.30-with-a-suffix", "service-account-with-a-long-name", []
    )
    assert len(name) <= 63 and name.startswith("a-very-long-operator-name")


def test_service_accounts_of_permissions_and_deployments() -> None:
    assert steps.service_accounts(csv()) == ["op"]


# --- Deployments ----------------------------------------------------------------------------


def test_deployment_gets_csv_annotations_condition_name_and_config() -> None:
    config = {
        "env": [{"name": "X", "value": "2"}],
        "nodeSelector": {"disk": "ssd"},
        "resources": {"limits": {"cpu": "1"}},
    }
    entry = csv()["spec"]["install"]["spec"]["deployments"][0]
    made = deployments.desired(csv(), entry, config)
    template = made["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "a": "from-csv",
        "b": "kept",
        "olm.targetNamespaces": "ns",
    }
    (container,) = template["spec"]["containers"]
    assert container["env"] == [
        {"name": "OPERATOR_CONDITION_NAME", "value": "op.v0.2.0"},
        {"name": "X", "value": "2"},
    ]
    assert container["resources"] == {"limits": {"cpu": "1"}}
    assert template["spec"]["nodeSelector"] == {"disk": "ssd"}
    labels = made["metadata"]["labels"]
    assert (
        labels["olm.owner"] == "op.v0.2.0" and labels["olm.owner.kind"] == "ClusterServiceVersion"
    )
    assert made["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    again = deployments.desired(csv(), entry, config)
    assert (
        again["metadata"]["labels"]["olm.deployment-spec-hash"]
        == labels["olm.deployment-spec-hash"]
    )


def deployment(generation: int = 1, **status: Any) -> JSON:
    return {
        "metadata": {"name": "op", "generation": generation},
        "spec": {"replicas": 2},
        "status": status,
    }


@pytest.mark.parametrize(
    ("found", "waiting_for"),
    [
        (None, "deployment not found"),
        (deployment(2, observedGeneration=1), "spec update to be observed"),
        (deployment(observedGeneration=1, updatedReplicas=1), "1 out of 2 new replicas"),
        (
            deployment(observedGeneration=1, updatedReplicas=2, replicas=3),
            "old replicas are pending",
        ),
        (
            deployment(observedGeneration=1, updatedReplicas=2, replicas=2, availableReplicas=1),
            "1 of 2 updated replicas",
        ),
        (
            deployment(observedGeneration=1, updatedReplicas=2, replicas=2, availableReplicas=2),
            None,
        ),
    ],
)
def test_deployment_health(found: JSON | None, waiting_for: str | None) -> None:
    problem = deployments.health(found)
    assert problem == waiting_for if waiting_for is None else waiting_for in (problem or "")


# --- CRD updates ----------------------------------------------------------------------------


class FakeKube:
    def __init__(self, items: list[JSON]) -> None:
        self.items = items

    def get(self, path: str, **_: Any) -> JSON:
        return {"items": self.items}


def widget_crd(versions: list[str], schema: JSON | None = None) -> JSON:
    return {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": v == versions[-1],
                    "schema": {
                        "openAPIV3Schema": schema
                        or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
                for v in versions
            ],
        },
        "status": {"storedVersions": ["v1"]},
    }


def test_removing_a_stored_version_is_refused() -> None:
    with pytest.raises(
        UnsafeCRDUpdate, match="new CRD removes version v1 that is listed as a stored version"
    ):
        check_update(FakeKube([]), widget_crd(["v1"]), widget_crd(["v2"]))


def test_existing_objects_must_validate_against_the_new_schema() -> None:
    strict = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {"size": {"type": "integer"}},
            }
        },
    }
    existing = [
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {},
        }
    ]
    with pytest.raises(
        UnsafeCRDUpdate,
        match=r"error validating existing CRs against new CRD.s schema: widgets.example.com: .* Widget ns/w: ",
    ):
        check_update(FakeKube(existing), widget_crd(["v1"]), widget_crd(["v1", "v2"], strict))
    check_update(FakeKube([]), widget_crd(["v1"]), widget_crd(["v1", "v2"], strict))


def test_a_release_may_stop_serving_an_old_version_with_objects_in_it() -> None:
    """Real OLM v0.18.3 accepts it: existing objects are checked against their version's
    new schema, served or not."""
    new = widget_crd(["v1", "v2"])
    new["spec"]["versions"][0]["served"] = False
    existing = [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}]
    check_update(FakeKube(existing), widget_crd(["v1"]), new)


# --- requirements, catalogs -----------------------------------------------------------------


def test_each_rule_becomes_one_review_per_group_resource_and_verb() -> None:
    rule = {"apiGroups": ["", "apps"], "resources": ["pods/log"], "verbs": ["get", "list"]}
    checks = _rule_checks(rule, "ns")
    assert len(checks) == 4
    assert checks[0]["resourceAttributes"] == {
        "group": "",
        "resource": "pods",
        "subresource": "log",
        "verb": "get",
        "name": "",
        "namespace": "ns",
    }
    urls = _rule_checks({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, "")
    assert urls == [{"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600.0), ("1h30m", 5400.0), ("45s", 45.0), ("", None), ("10 minutes", None)],
)
def test_poll_intervals_are_go_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def health(name: str, healthy: bool = True) -> JSON:
    return {"catalogSourceRef": {"namespace": "ns", "name": name}, "healthy": healthy}


@pytest.mark.parametrize(
    ("before", "found", "status", "reason"),
    [
        ([], [], "True", "NoCatalogSourcesFound"),
        ([health("cat")], [], "True", "CatalogSourcesDeleted"),
        ([health("cat")], [health("other")], "True", "CatalogSourcesUpdated"),
        ([health("other")], [health("other")], "True", "UnhealthyCatalogSourceFound"),
        ([], [health("cat", healthy=False)], "True", "CatalogSourcesAdded"),
        ([health("cat", healthy=False)], [health("cat")], "False", "CatalogSourcesUpdated"),
        ([health("cat")], [health("cat", healthy=False)], "True", "CatalogSourcesUpdated"),
        (
            [health("cat", healthy=False)],
            [health("cat", False)],
            "True",
            "UnhealthyCatalogSourceFound",
        ),
        ([], [health("cat")], "False", "CatalogSourcesAdded"),
        ([health("cat")], [health("cat")], "False", "AllCatalogSourcesHealthy"),
    ],
)
def test_catalog_health_condition_follows_olms_transitions(
    before: list[JSON], found: list[JSON], status: str, reason: str
) -> None:
    """OLM v0.18's catalog health reconciler: the verdict on the sources seen now, whose
    reason names what changed since the recorded catalogHealth."""
    sub = {
        "metadata": {"namespace": "ns"},
        "spec": {"source": "cat", "sourceNamespace": "ns"},
        "status": {"catalogHealth": before},
    }
    condition = _health_condition(sub, found)
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "CatalogSourcesUnhealthy",
        status,
        reason,
    )


def test_catalog_health_messages_name_the_targeted_source() -> None:
    sub = {"metadata": {"namespace": "ns"}, "spec": {"source": "cat", "sourceNamespace": "ns"}}
    sub["status"] = {"catalogHealth": [health("cat")]}
    assert _health_condition(sub, [])["message"] == "targeted catalogsource ns/cat missing"
    assert _health_condition(sub, [health("cat", False)])["message"] == (
        "targeted catalogsource ns/cat unhealthy"
    )
    sub["status"] = {"catalogHealth": []}
    assert _health_condition(sub, [])["message"] == (
        "dependency resolution requires at least one catalogsource"
    )


def test_a_refused_installplan_backs_off_instead_of_looping() -> None:
    """After the apiserver refuses a namespace's InstallPlan, resolution there waits 1 s,
    2 s, ... up to a minute: no hot loop of requests and events."""
    from olmtool.engine.subscriptions import MAX_BACKOFF, Namespace, Subscriptions

    subs = Subscriptions(kube=None, catalogs=None, global_namespace="olm")
    delays = []
    for _ in range(8):
        subs._back_off("ns")
        delays.append(subs._backoff["ns"][1])
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, MAX_BACKOFF, MAX_BACKOFF]
    # while backing off, a sync does nothing at all (kube None would fail otherwise)
    subs.sync(Namespace("ns", [{"metadata": {"name": "s"}}], [], []), set())


class RecordingKube:
    def __init__(self) -> None:
        self.written: list[JSON] = []

    def put(self, path: str, body: JSON) -> JSON:
        self.written.append(body)
        return body


def unsupported_plan(started: str) -> JSON:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    step = steps._step("op.v0.2.0", pod, "cat", "ns")
    return {
        "metadata": {"name": "install-abcde", "namespace": "ns", "uid": "u"},
        "status": {"phase": "Installing", "startTime": started, "plan": [step]},
    }


def test_an_unsupported_kind_fails_the_plan_once_the_window_from_start_time_is_over() -> None:
    """The retry window counts from ``status.startTime``, so an engine restarted during it
    does not start it again; the step is UnsupportedResource and nothing is applied."""
    from olmtool.engine.apply import Discovery
    from olmtool.engine.installplans import InstallPlans

    kube = RecordingKube()
    plans = InstallPlans(kube, Discovery(kube))
    plans.sync(unsupported_plan(objects_now()))
    (retrying,) = kube.written
    assert retrying["status"]["phase"] == "Installing"
    assert retrying["status"]["message"] == (
        "retrying execution due to error: the InstallPlan contains invalid data"
    )
    assert retrying["status"]["plan"][0]["status"] == "UnsupportedResource"
    plans.sync(unsupported_plan("2020-01-01T00:00:00Z"))
    failed = kube.written[-1]["status"]
    assert failed["phase"] == "Failed"
    (installed,) = failed["conditions"]
    assert (installed["reason"], installed["message"]) == (
        "InstallComponentFailed",
        "the InstallPlan contains invalid data",
    )
