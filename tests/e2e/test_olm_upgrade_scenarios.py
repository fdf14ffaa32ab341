"""OLM's upgrade scenarios (reference olm-runtime.md section 6) against each OLM engine;
the install and OperatorGroup scenarios are in ``test_olm_scenarios``.

Every test runs once per ``engine`` (``real``: OLM v0.18.3 from ``../shared/peers``;
``olmtool``: ``python -m olmtool.engine``), each skipped with the reason when absent.
Upgrades start from ``startingCSV`` with Automatic approval: real OLM offers the next
version at a catalog resync (every 10 s here) after the install completed, one
resolution per hop.

Scenarios covered (numbers of section 6): 3 skipRange upgrade, 5 startingCSV then upgrade,
6 multi-hop upgrade, 14 Deployments on upgrade, 19 CRD upgrade allowed vs blocked by
stored-version loss (where olmtool's static checks, ``catalog validate`` and ``test
upgrade``, must give the cluster's verdict in its words), and an incompatible schema, 20 RBAC changes across an upgrade,
22 ServiceAccount shared by the old and new CSV; and, on olmtool's engine only, a
CatalogSource with ``spec.image`` served by a pod (upgrading when the image changes).
"""

from __future__ import annotations

import pytest

from olmtool.actions import catalog_validate, upgrade_test
from tests.e2e import olm_engines
from tests.e2e.helpers import JSON, wait_for
from tests.e2e.olm_engines import (
    CRDS,
    RBAC,
    V1ALPHA1,
    Bundle,
    World,
    condition,
    crd,
    deployment,
    owner_names,
    rules,
    status,
    steps,
)

engine = olm_engines.engine
world = olm_engines.world
LONG = 300.0  # several resolutions in a row


def _hops(w: World, namespace: str) -> list[list[str]]:
    """The CSVs of the namespace's InstallPlans, oldest first, a plan repeating the one
    before it left out: real OLM v0.18.3 often makes two identical plans (both Complete)."""
    hops: list[list[str]] = []
    for plan in w.plans(namespace):
        names = plan["spec"]["clusterServiceVersionNames"]
        if not hops or hops[-1] != names:
            hops.append(names)
    return hops


def _gone(w: World, namespace: str, csv: str, timeout: float = 120) -> None:
    wait_for(lambda: w.csv(namespace, csv) is None, timeout, f"{csv} deleted", interval=0.5)


def test_05_starting_csv_then_upgrade(world: World) -> None:
    """Real OLM (Automatic approval): installs startingCSV v0.1.0, then at a later resync
    (tens of seconds) a second InstallPlan upgrades to v0.2.0, whose CSV replaces v0.1.0;
    v0.1.0 is deleted."""
    w = world
    old, new = Bundle("start", "0.1.0"), Bundle("start", "0.2.0", replaces="start.v0.1.0")
    ns = w.install([old, new], starting_csv=old.name)
    w.wait_plan(ns, old.name, ("Complete",))
    sub = w.wait_installed(ns, "start", new.name, LONG)
    assert _hops(w, ns) == [[old.name], [new.name]]
    assert all(
        status(p)["phase"] == "Complete"
        for p in w.plans(ns)
        if p["spec"]["clusterServiceVersionNames"] == [old.name]
    )
    assert w.sub(ns, "start")["spec"]["startingCSV"] == old.name
    assert status(sub)["currentCSV"] == new.name
    assert w.csv(ns, new.name)["spec"]["replaces"] == old.name
    _gone(w, ns, old.name)


def test_06_multi_hop_upgrade(world: World) -> None:
    """Real OLM: 0.1.0 -> 0.2.0 -> 0.3.0, one InstallPlan per hop (never two CSVs in one
    plan), each CSV replacing the one before it."""
    w = world
    bundles = [
        Bundle("hop", "0.1.0"),
        Bundle("hop", "0.2.0", replaces="hop.v0.1.0"),
        Bundle("hop", "0.3.0", replaces="hop.v0.2.0"),
    ]
    ns = w.install(bundles, starting_csv=bundles[0].name)
    w.wait_installed(ns, "hop", bundles[2].name, 2 * LONG)
    assert _hops(w, ns) == [[b.name] for b in bundles]
    assert w.csv(ns, bundles[2].name)["spec"]["replaces"] == bundles[1].name
    _gone(w, ns, bundles[1].name)
    assert w.csv(ns, bundles[0].name) is None


def test_03_skip_range_upgrade(world: World) -> None:
    """Real OLM: from 0.1.0 the head 0.3.0 (skipRange >=0.1.0 <0.3.0) is chosen over
    0.2.0 (which replaces 0.1.0): one hop; OLM rewrites the new CSV's spec.replaces to the
    installed CSV it replaces (0.1.0)."""
    w = world
    bundles = [
        Bundle("skip", "0.1.0"),
        Bundle("skip", "0.2.0", replaces="skip.v0.1.0"),
        Bundle("skip", "0.3.0", replaces="skip.v0.2.0", skip_range=">=0.1.0 <0.3.0"),
    ]
    ns = w.install(bundles, starting_csv=bundles[0].name)
    w.wait_installed(ns, "skip", bundles[2].name, LONG)
    assert _hops(w, ns) == [[bundles[0].name], [bundles[2].name]]
    head = w.csv(ns, bundles[2].name)
    assert head["metadata"]["annotations"]["olm.skipRange"] == ">=0.1.0 <0.3.0"
    assert head["spec"]["replaces"] == bundles[0].name
    _gone(w, ns, bundles[0].name)


def test_14_deployments_on_upgrade(world: World) -> None:
    """Real OLM: a Deployment of the same name is updated in place (same uid, new env,
    owner and olm.owner label the new CSV); one only the old CSV had is deleted; a new
    one is created."""
    w = world
    old = Bundle("deps", "0.1.0", deployments=[deployment("dep-same"), deployment("dep-old")])
    new = Bundle(
        "deps",
        "0.2.0",
        replaces=old.name,
        deployments=[
            deployment("dep-same", env=[{"name": "VERSION", "value": "2"}]),
            deployment("dep-new"),
        ],
    )
    ns = w.install([old, new], starting_csv=old.name)
    same = wait_for(lambda: w.deployment(ns, "dep-same"), 120, "dep-same")
    wait_for(lambda: w.deployment(ns, "dep-old"), 120, "dep-old")
    w.wait_installed(ns, "deps", new.name, LONG)
    _gone(w, ns, old.name)
    updated = w.deployment(ns, "dep-same")
    assert updated["metadata"]["uid"] == same["metadata"]["uid"]
    assert owner_names(updated) == [new.name]
    assert updated["metadata"]["labels"]["olm.owner"] == new.name
    (container,) = updated["spec"]["template"]["spec"]["containers"]
    assert {"name": "VERSION", "value": "2"} in container["env"]
    assert {"name": "OPERATOR_CONDITION_NAME", "value": new.name} in container["env"]
    wait_for(lambda: w.deployment(ns, "dep-old") is None, 60, "dep-old deleted")
    added = w.deployment(ns, "dep-new")
    assert added and owner_names(added) == [new.name]


def test_19_crd_upgrade_allowed_then_blocked_by_stored_version_loss(world: World) -> None:
    """Real OLM: 0.1.0 serves v1; 0.2.0 adds v2 as the storage version (allowed: the CRD
    is updated, storedVersions becomes [v1, v2]); 0.3.0 drops v1, which is still a stored
    version: its InstallPlan fails ("risk of data loss")."""
    w = world
    group = w.group("crdup")
    bundles = [
        Bundle("crdup", "0.1.0", owned=[crd(group, "Widget", ["v1"])]),
        Bundle(
            "crdup", "0.2.0", replaces="crdup.v0.1.0", owned=[crd(group, "Widget", ["v1", "v2"])]
        ),
        Bundle("crdup", "0.3.0", replaces="crdup.v0.2.0", owned=[crd(group, "Widget", ["v2"])]),
    ]
    ns = w.install(bundles, starting_csv=bundles[0].name)
    # The plan for 0.3.0 exists only once 0.2.0 succeeded; waiting for 0.2.0 as the
    # installed CSV would race the Automatic upgrade, which moves on within a second.
    plan = w.wait_plan(ns, bundles[2].name, ("Failed",), LONG)
    assert status(w.csv(ns, bundles[1].name))["phase"] in ("Succeeded", "Replacing")
    stored = w.kube.get(f"{CRDS}/widgets.{group}")
    assert [v["name"] for v in stored["spec"]["versions"]] == ["v1", "v2"]
    assert status(stored)["storedVersions"] == ["v1", "v2"]
    message = (
        f"risk of data loss updating widgets.{group}: new CRD removes version v1 that is "
        "listed as a stored version on the existing CRD"
    )
    _assert_failed_upgrade(w, ns, "crdup", plan, message, bundles[1], bundles[2])
    assert status(w.kube.get(f"{CRDS}/widgets.{group}"))["storedVersions"] == ["v1", "v2"]
    # the static verdicts agree, word for word: catalog validate refuses the edge into
    # 0.3.0 (v1 stored since 0.1.0), the static test upgrade the hop from 0.1.0's path
    catalog = w.tmp / "catalog0" / "catalog"  # what w.serve served
    (refused,) = [f for f in catalog_validate(catalog).errors if f.check.startswith("crd-")]
    assert refused.scope == f'bundle "{bundles[2].name}"' and message in refused.message
    assert "v1 stored by an earlier release on the way" in refused.message
    problems = upgrade_test(catalog, "crdup").problems
    assert [(p.kind, p.bundle) for p in problems] == [("crd-stored-versions", bundles[0].name)]
    assert problems[0].message.endswith(
        f"{bundles[1].name} -> {bundles[2].name} fails: OLM v0 refuses it: {message}"
    )


def test_19_a_release_stops_serving_an_old_crd_version_with_objects_in_it(
    world: World,
) -> None:
    """Real OLM v0.18.3: 0.2.0 keeps v1alpha1 (still a stored version) but stops serving
    it, with a Gadget stored in it: the upgrade succeeds (existing objects are checked
    against their version's new schema, served or not)."""
    w = world
    group = w.group("unserve")
    old_crd = crd(group, "Gadget", ["v1alpha1"])
    new_crd = crd(group, "Gadget", ["v1alpha1", "v1"], storage="v1")
    new_crd["spec"]["versions"][0]["served"] = False
    bundles = [
        Bundle("unserve", "0.1.0", owned=[old_crd]),
        Bundle("unserve", "0.2.0", replaces="unserve.v0.1.0", owned=[new_crd]),
    ]
    ns = w.install(bundles, starting_csv=bundles[0].name, approval="Manual")
    first = w.wait_plan(ns, bundles[0].name, ("RequiresApproval",))
    w.kube.patch(
        f"{V1ALPHA1}/namespaces/{ns}/installplans/{first['metadata']['name']}",
        {"spec": {"approved": True}},
    )
    w.wait_phase(ns, bundles[0].name, "Succeeded")
    gadget = {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "Gadget",
        "metadata": {"name": "stored-in-v1alpha1"},
        "spec": {"size": 1},
    }
    w.kube.create(f"/apis/{group}/v1alpha1/namespaces/{ns}/gadgets", gadget)
    plan = w.wait_plan(ns, bundles[1].name, ("RequiresApproval",), LONG)
    w.kube.patch(
        f"{V1ALPHA1}/namespaces/{ns}/installplans/{plan['metadata']['name']}",
        {"spec": {"approved": True}},
    )
    w.wait_installed(ns, "unserve", bundles[1].name, LONG)
    served = {
        v["name"]: v["served"] for v in w.kube.get(f"{CRDS}/gadgets.{group}")["spec"]["versions"]
    }
    assert served == {"v1alpha1": False, "v1": True}
    assert w.kube.get(f"/apis/{group}/v1/namespaces/{ns}/gadgets/stored-in-v1alpha1")
    # statically too: the stored version is kept (unserved), no edge or hop is refused
    catalog = w.tmp / "catalog0" / "catalog"  # what w.serve served
    assert not [f for f in catalog_validate(catalog).findings if f.check.startswith("crd-")]
    assert upgrade_test(catalog, "unserve").passed


# corpus cases (tests/crd/test_upgrade_safety.py) whose verdict is OLM v0's to give: a
# stored version dropped (refused), an unstored one dropped, an enum narrowed (OLM v1's
# rule only: OLM v0 upgrades)
CORPUS_CASES = ("stored-version-removed", "unstored-version-removed", "enum-value-removed")


def _in_group(manifest: JSON, group: str) -> JSON:
    """A corpus CRD moved to this test's API group (CRDs are cluster-wide), without the
    corpus's oneOf field (not structural: the apiserver refuses it)."""
    manifest["metadata"]["name"] = f"widgets.{group}"
    manifest["spec"]["group"] = group
    for version in manifest["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"].pop("port", None)
    return manifest


def test_19_crd_corpus_verdicts_agree_with_olm_v0(world: World) -> None:
    """Each case's old and new CRD as an upgrade 0.1.0 -> 0.2.0 on the cluster: OLM v0
    fails the InstallPlan exactly where the static verdict (catalog validate) refuses
    the edge, in the same words."""
    from tests.crd.test_upgrade_safety import CASES, base_crd

    w = world
    started = []
    for index, case_id in enumerate(CORPUS_CASES):
        case = next(c for c in CASES if c.id == case_id)
        group = w.group(f"corpus{index}")
        old, new = _in_group(base_crd(), group), base_crd()
        case.change(new)
        new = _in_group(new, group)
        package = f"corpus{index}"
        bundles = [
            Bundle(package, "0.1.0", owned=[old]),
            Bundle(package, "0.2.0", replaces=f"{package}.v0.1.0", owned=[new]),
        ]
        ns = w.install(bundles, starting_csv=bundles[0].name)
        catalog = w.tmp / f"catalog{w.served - 1}" / "catalog"
        started.append((case, group, ns, bundles, catalog))
    for case, group, ns, bundles, catalog in started:
        static = [f for f in catalog_validate(catalog).errors if f.check.startswith("crd-")]
        if case.olm_v0:
            plan = w.wait_plan(ns, bundles[1].name, ("Failed",), LONG)
            message = (
                f"risk of data loss updating widgets.{group}: new CRD removes version "
                "v1alpha1 that is listed as a stored version on the existing CRD"
            )
            assert status(plan)["message"] == message, case.id
            assert [f.check for f in static] == ["crd-upgrade/stored-versions"], case.id
            assert message in static[0].message
        else:
            w.wait_installed(ns, bundles[1].package, bundles[1].name, LONG)
            assert static == [], case.id


def _assert_failed_upgrade(
    w: World, ns: str, package: str, plan: dict, message: str, old: Bundle, new: Bundle
) -> None:
    """What real OLM v0.18.3 leaves after a CRD step fails an upgrade's InstallPlan: the
    plan Failed (Installed False/InstallComponentFailed, the message also in
    status.message; the CSV step was applied first). The new CSV exists, stuck Pending
    (RequirementsNotMet: the CRD "installed alongside other CSV(s): <old>" and the
    ServiceAccount "owned by another ClusterServiceVersion"), the old one stays Replacing
    with its Deployment running. Surprising (a bug?): the Subscription then reports
    installedCSV = currentCSV = the new, Pending CSV, state AtLatestKnown, and keeps the
    stale InstallPlanPending True/Installing condition."""
    assert status(plan)["message"] == message
    installed = condition(plan, "Installed")
    assert installed and installed["status"] == "False"
    assert installed["reason"] == "InstallComponentFailed" and installed["message"] == message
    assert steps(plan)[0][0] == "ClusterServiceVersion"
    assert steps(plan)[0][2] in ("Created", "Present")
    csv = wait_for(
        lambda: status(c := w.csv(ns, new.name)).get("reason") == "RequirementsNotMet" and c,
        60,
        f"{new.name} RequirementsNotMet",
    )
    assert status(csv)["phase"] == "Pending"
    requirements = {r["kind"]: r for r in status(csv)["requirementStatus"]}
    crd_status = requirements["CustomResourceDefinition"]
    if w.engine.name == "real":
        assert crd_status["status"] == "PresentNotSatisfied"
        assert crd_status["message"] == f"CRD installed alongside other CSV(s): {old.name}"
    # olmtool's engine reports the CRD as it is; the ServiceAccount still owned by the old
    # CSV alone (the plan stopped before its steps) keeps the new CSV Pending, as in OLM
    assert requirements["ServiceAccount"]["status"] == "PresentNotSatisfied"
    assert requirements["ServiceAccount"]["message"] == (
        "Service account is owned by another ClusterServiceVersion"
    )
    replaced = w.wait_phase(ns, old.name, "Replacing")
    assert status(replaced)["reason"] == "BeingReplaced"
    assert status(replaced)["message"] == f"being replaced by csv: {new.name}"
    dep = w.deployment(ns, f"{package}-operator")
    assert owner_names(dep) == [old.name] and status(dep)["availableReplicas"] == 1
    sub = w.sub(ns, package)
    # real OLM v0.18.3 calls the Pending CSV installed
    assert status(sub)["installedCSV"] == status(sub)["currentCSV"] == new.name
    assert status(sub)["state"] == "AtLatestKnown"


def test_19_incompatible_schema_fails_the_upgrade(world: World) -> None:
    """Real OLM: an existing CR that the new version's schema rejects fails the upgrade's
    InstallPlan ("error validating existing CRs against new CRD's schema")."""
    w = world
    group = w.group("schema")
    size = {"type": "object", "properties": {"size": {"type": "integer"}}}
    small = {"type": "object", "properties": {"size": {"type": "integer", "maximum": 3}}}
    loose = crd(group, "Widget", ["v1"], schema=size)
    strict = crd(group, "Widget", ["v1"], schema=small)
    # the CRD and a CR exist before the operator is installed (OLM adopts the CRD)
    w.kube.create(CRDS, loose)
    ns = w.namespace()
    wait_for(
        lambda: w.kube.create(
            f"/apis/{group}/v1/namespaces/{ns}/widgets",
            {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": "big"},
                "spec": {"size": 5},
            },
        ),
        30,
        "the Widget created",
        interval=1,
    )
    old = Bundle("schema", "0.1.0", owned=[loose])
    new = Bundle("schema", "0.2.0", replaces=old.name, owned=[strict])
    w.catalog_source(ns, w.serve([old, new]))
    w.operator_group(ns)
    w.subscription(ns, "schema", starting_csv=old.name)
    w.wait_plan(ns, old.name, ("Complete",))
    plan = w.wait_plan(ns, new.name, ("Failed",), LONG)
    message = (
        f"error validating existing CRs against new CRD's schema: widgets.{group}: error "
        f"validating custom resource against new schema for Widget {ns}/big: "
    )
    # the field error is the apiserver's wording on real OLM, olmtool's validator's on the
    # engine (same field, same verdict)
    detail = status(plan)["message"].removeprefix(message)
    if w.engine.name == "real":
        assert (
            detail
            == "[].spec.size: Invalid value: 5: spec.size in body should be less than or equal to 3"
        )
    else:
        assert detail.startswith("spec.size: 5 ")
    _assert_failed_upgrade(w, ns, "schema", plan, message + detail, old, new)
    current = w.kube.get(f"{CRDS}/widgets.{group}")
    schema = current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "maximum" not in schema["properties"]["spec"]["properties"]["size"]  # not updated


def test_22_service_account_shared_and_rbac_changed_across_an_upgrade(world: World) -> None:
    """Real OLM: both versions use ServiceAccount ``operator``; the upgrade keeps it (same
    uid): the new CSV is added to its ownerReferences, and the old CSV's reference
    goes once that CSV is deleted (garbage collector). The new
    version's Role ``<csv>-operator-<hash>`` has the new rules (configmaps + secrets); the
    old Role goes with the old CSV. Each CSV also gets a Role/RoleBinding named after it
    for its OperatorCondition (owned by the OperatorCondition)."""
    w = world
    old = Bundle("shared", "0.1.0")
    new = Bundle(
        "shared",
        "0.2.0",
        replaces=old.name,
        permissions=[{"serviceAccountName": "operator", "rules": rules("configmaps", "secrets")}],
    )
    ns = w.install([old, new], starting_csv=old.name)
    account = wait_for(
        lambda: w.kube.get_or_none(f"/api/v1/namespaces/{ns}/serviceaccounts/operator"), 120, "SA"
    )
    old_role = wait_for(
        lambda: [
            r
            for r in w.items(ns, "roles", RBAC)
            if r["metadata"]["name"].startswith(old.name + "-")
        ],
        120,
        "old Role",
    )
    w.wait_installed(ns, "shared", new.name, LONG)
    _gone(w, ns, old.name)
    now = w.kube.get(f"/api/v1/namespaces/{ns}/serviceaccounts/operator")
    assert now["metadata"]["uid"] == account["metadata"]["uid"]
    assert owner_names(account) == [old.name]
    assert new.name in owner_names(now)  # added; the old one is dropped by the GC
    wait_for(
        lambda: (
            owner_names(w.kube.get(f"/api/v1/namespaces/{ns}/serviceaccounts/operator"))
            == [new.name]
        ),
        60,
        "the SA owned by the new CSV only",
    )
    roles = {r["metadata"]["name"]: r for r in w.items(ns, "roles", RBAC)}
    wait_for(
        lambda: (
            old_role[0]["metadata"]["name"]
            not in {r["metadata"]["name"] for r in w.items(ns, "roles", RBAC)}
        ),
        60,
        "the old Role deleted",
    )
    (role,) = [r for name, r in roles.items() if name.startswith(f"{new.name}-operator-")]
    assert owner_names(role) == [new.name]
    assert role["rules"] == rules("configmaps", "secrets")
    binding = w.kube.get(f"{RBAC}/namespaces/{ns}/rolebindings/{role['metadata']['name']}")
    assert [s["name"] for s in binding["subjects"]] == ["operator"]
    # the OperatorCondition's Role, named after the CSV
    assert owner_names(roles[new.name]) == [new.name]
    dep = w.deployment(ns, "shared-operator")
    assert owner_names(dep) == [new.name] and status(dep)["availableReplicas"] == 1
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "operator"


def test_catalog_image_is_served_by_a_pod_and_upgrades_when_the_image_changes(
    world: World,
) -> None:
    """A CatalogSource with ``spec.image`` (the catalog image ``catalog publish --image``
    builds, in the cluster's registry) gets the registry pod OLM creates, run by the
    image's own entrypoint (``olmtool catalog serve``) and probed by its
    ``grpc_health_probe``, and a Service named after the source, which the catalog
    operator dials by its cluster DNS name; pointing the source at a newer image replaces
    the pod and the Subscription upgrades."""
    w = world
    registry = w.engine.cluster.registry
    if registry is None:
        pytest.skip("docker-registry is not installed (make tools)")
    from olmtool.catalog.publishing import catalog_image
    from olmtool.images import push
    from tests.e2e.olm_engines import write_catalog

    old = Bundle("imaged", "0.1.0")
    new = Bundle("imaged", "0.2.0", replaces=old.name)
    references = []
    for index, bundles in enumerate(([old], [old, new])):
        root = write_catalog(w.tmp / f"imaged-{index}", bundles)
        push(catalog_image(root, None), f"{registry}/scenario/imaged-{w.id}:{index}")
        references.append(f"localhost:5000/scenario/imaged-{w.id}:{index}")  # the alias
    ns = w.namespace()
    source = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": "catalog"},
        "spec": {"sourceType": "grpc", "image": references[0]},
    }
    w.kube.create(f"{V1ALPHA1}/namespaces/{ns}/catalogsources", source)
    w.operator_group(ns)
    w.subscription(ns, "imaged")
    w.wait_installed(ns, "imaged", old.name)
    served = status(w.get(ns, "catalogsources", "catalog"))
    assert served["connectionState"]["lastObservedState"] == "READY"
    assert served["registryService"]["serviceName"] == "catalog"
    assert w.kube.get_or_none(f"/api/v1/namespaces/{ns}/services/catalog") is not None

    def registry_pods() -> list[JSON]:  # real OLM replaces a registry pod slow to be Ready
        selector = "olm.catalogSource=catalog"
        pods = w.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"]
        return [p for p in pods if "deletionTimestamp" not in p["metadata"]]

    (pod,) = wait_for(lambda: len(found := registry_pods()) == 1 and found, 60, "one registry pod")
    (container,) = pod["spec"]["containers"]
    assert container["image"] == references[0] and "command" not in container
    assert container["readinessProbe"]["exec"]["command"] == ["grpc_health_probe", "-addr=:50051"]

    def ready() -> bool:  # the image's grpc_health_probe answered 0
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for now in registry_pods()
            for c in status(now).get("conditions", [])
        )

    wait_for(ready, 60, "the registry pod Ready")

    path = f"{V1ALPHA1}/namespaces/{ns}/catalogsources/catalog"
    w.kube.patch(path, {"spec": {"image": references[1]}})
    w.wait_installed(ns, "imaged", new.name, LONG)

    def images() -> list[str]:
        return [p["spec"]["containers"][0]["image"] for p in registry_pods()]

    wait_for(lambda: images() == [references[1]], 60, "only the new image's pod")
