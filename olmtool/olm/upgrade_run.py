"""The dynamic upgrade test: install a start version through OLM, create the CSV's
``alm-examples``, write probe data, then approve the upgrade InstallPlans hop by hop to
the channel head, checking at each hop that the CSV succeeded, the custom resources are
ready again and the probe's data is intact.

Each example is created at its kind's scope, as the cluster's discovery reports it
(``/apis/<group>/<version>``: the resource's plural and ``namespaced``): a namespaced kind
in the run's namespace, a cluster-scoped one at the cluster level, where clean-up
deletes it too (the namespace's deletion would not). ``examples`` picks how far they go:
``ready`` (each must report Ready, after the install and after every hop), ``create``
(created, never waited for) or ``none`` (not created).

Runs against any cluster with OLM (real OLM, or olmtool's engine once it runs): only the
``operators.coreos.com`` API and the operator's own resources are used.

The Subscription always names its channel (the package's default channel, read from the
registry, when none is given). OLM v0 (checked on v0.18.3) looks for an upgrade of an
installed CSV with ``FindReplacement(..., sub.Spec.Channel, ...)``, which asks the registry
for the head of channel ``""`` and for the bundle replacing the CSV in channel ``""``:
both fail, the Subscription is set ``AtLatestKnown``, and ``nothingToUpdate`` then skips
every later resolution of the namespace until a CatalogSource's connection state changes
("skipping update: no new updates to catalog since last sync"). A Subscription without a
channel installs, but is never offered an upgrade.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubernetes.client.exceptions import ApiException

from olmtool.jsonfields import json_fields
from olmtool.kube import JSON
from olmtool.olm.discovery import Discovery
from olmtool.olm.source import CatalogSourceUnavailable, default_channel
from olmtool.olm.subscription import (
    InstallFailed,
    InstallMode,
    SubscriptionSpec,
    follow,
    subscribe,
)

if TYPE_CHECKING:
    from olmtool.kube import Kube

OPERATORS = "/apis/operators.coreos.com/v1alpha1"
READY_PHASES = ("Running", "Ready", "Succeeded", "Available", "Healthy")
# what a run does with the CSV's alm-examples: create them and wait until each is Ready
# (after the install and after every hop), only create them, or leave them out
EXAMPLES = ("ready", "create", "none")


class Probe(Protocol):
    """Data an operator package checks across upgrades (e.g. keys in its etcd)."""

    def write(self, kube: Kube, namespace: str, resources: list[JSON]) -> None: ...

    def check(self, kube: Kube, namespace: str, resources: list[JSON]) -> None: ...


@dataclass
class Hop:
    from_csv: str
    to_csv: str
    seconds: float
    # of ``seconds``: until OLM offered the upgrade InstallPlan
    offer_seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "from": self.from_csv,
            "to": self.to_csv,
            "seconds": round(self.seconds, 2),
            "offerSeconds": round(self.offer_seconds, 2),
        }


@dataclass
class UpgradeRun:
    package: str
    start: str
    reached: str
    install_seconds: float = 0.0
    hops: list[Hop] = field(default_factory=list)
    failure: str | None = None
    channel: str = ""
    namespace: str = ""
    # API paths of the examples the run created (deleted first when cleaning up), each
    # at its kind's scope (a cluster-scoped one outside the namespace)
    created: list[str] = field(default_factory=list)
    examples: str = "ready"  # one of EXAMPLES

    @property
    def passed(self) -> bool:
        return self.failure is None

    def as_dict(self) -> dict[str, object]:
        hops = [h.as_dict() for h in self.hops]
        seconds = round(self.install_seconds, 2)
        return json_fields(
            self, skip=("created",), install_seconds=seconds, hops=hops, passed=self.passed
        )


def _examples(csv: JSON) -> list[JSON]:
    text = (csv.get("metadata", {}).get("annotations") or {}).get("alm-examples") or "[]"
    try:
        examples = json.loads(text)
    except ValueError:
        return []
    return [e for e in examples if isinstance(e, dict)]


def _collection_path(discovery: Discovery, example: JSON, namespace: str) -> tuple[str, bool]:
    """Where objects of the example's kind are created, and whether the kind is
    namespaced: the resource's plural and scope as the cluster's discovery reports them."""
    api_version, kind = str(example.get("apiVersion") or ""), str(example.get("kind") or "")
    name = (example.get("metadata") or {}).get("name") or "?"
    if not api_version or not kind:
        raise InstallFailed(f"alm-example {name} has no apiVersion or kind")
    found = discovery.collection(api_version, kind, namespace)
    if found is None:
        raise InstallFailed(
            f"alm-example {kind} {name}: the cluster serves no kind {kind} in {api_version}"
        )
    return found


def _ready(obj: JSON) -> bool:
    status = obj.get("status") or {}
    if status.get("phase") in READY_PHASES:
        return True
    return any(
        c.get("type") in ("Ready", "Available") and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise InstallFailed(f"timed out after {timeout:g}s waiting for {what}")


def _pending_upgrade(kube: Kube, namespace: str, current: str) -> JSON | None:
    plans = kube.get(f"{OPERATORS}/namespaces/{namespace}/installplans").get("items", [])
    for plan in plans:
        names = plan.get("spec", {}).get("clusterServiceVersionNames") or []
        waiting = (plan.get("status") or {}).get("phase") == "RequiresApproval"
        if waiting and not plan["spec"].get("approved") and current not in names:
            return plan
    return None


def run_upgrade(
    kube: Kube,
    *,
    catalog_address: str = "",
    catalog_image: str = "",
    package: str,
    start_csv: str,
    head_csv: str,
    namespace: str,
    channel: str = "",
    probe: Probe | None = None,
    timeout: float = 300.0,
    examples: str = "ready",
    on_change: Callable[[str], None] | None = None,
) -> UpgradeRun:
    """Install ``start_csv`` (Manual approval) and upgrade hop by hop to ``head_csv``.

    The catalog is a registry address (``catalog_address``) or an image
    (``catalog_image``); the channel defaults to the package's default channel, read
    from the registry (an image catalog needs ``channel``: see the module's doc).
    ``examples`` is one of :data:`EXAMPLES` (see the module's doc)."""
    if examples not in EXAMPLES:
        raise ValueError(f"examples={examples!r}: not one of {', '.join(EXAMPLES)}")
    say = on_change or (lambda _line: None)
    run = UpgradeRun(
        package, start_csv, start_csv, channel=channel, namespace=namespace, examples=examples
    )
    if not channel:
        if not catalog_address:
            run.failure = "an image catalog needs the channel named (OLM v0 upgrades need it)"
            return run
        try:
            run.channel = channel = default_channel(catalog_address, package)
        except CatalogSourceUnavailable as exc:
            run.failure = str(exc)
            return run
    started = time.monotonic()
    spec = SubscriptionSpec(package, f"{package}-catalog", namespace, channel, start_csv, "Manual")
    source = {"image": catalog_image} if catalog_image else {"address": catalog_address}
    try:
        subscribe(kube, namespace, spec, InstallMode("OwnNamespace", (namespace,)), **source)
        followed = follow(
            kube, namespace, package, target_csv=start_csv, timeout=timeout, on_change=say
        )
        _wait(lambda: _deployments_ready(kube, followed.csv, namespace), timeout, "the Deployments")
        resources: list[JSON] = []
        if examples != "none":
            resources = _create_examples(
                kube, followed.csv, namespace, timeout, run.created, wait=examples == "ready"
            )
        _probe(probe, "write", kube, namespace, resources)
        run.install_seconds = time.monotonic() - started
        if examples == "none":
            say(f"{start_csv} installed (examples not created)")
        else:
            done = "ready" if examples == "ready" else "created"
            say(f"{start_csv} installed, {len(resources)} example(s) {done}")
        while run.reached != head_csv:
            run.hops.append(_hop(kube, run, namespace, resources, probe, timeout, say))
            run.reached = run.hops[-1].to_csv
    except (InstallFailed, AssertionError, ApiException) as exc:
        run.failure = f"{_reason(exc)}; {_situation(kube, namespace, package)}"
    return run


def _hop(
    kube: Kube,
    run: UpgradeRun,
    namespace: str,
    resources: list[JSON],
    probe: Probe | None,
    timeout: float,
    say: Callable[[str], None],
) -> Hop:
    """Wait for OLM's upgrade InstallPlan from ``run.reached``, approve it, check it."""
    started = time.monotonic()
    plan: JSON | None = None

    def upgrade_offered() -> bool:
        nonlocal plan
        plan = _pending_upgrade(kube, namespace, run.reached)
        return plan is not None

    _wait(upgrade_offered, timeout, f"an upgrade InstallPlan from {run.reached}")
    assert plan is not None
    offered = time.monotonic() - started
    target = next(n for n in plan["spec"]["clusterServiceVersionNames"] if n != run.reached)
    say(f"upgrading {run.reached} -> {target}")
    followed = follow(
        kube, namespace, run.package, target_csv=target, timeout=timeout, on_change=say
    )
    _wait(lambda: _deployments_ready(kube, followed.csv, namespace), timeout, "the Deployments")
    if run.examples == "ready":
        _wait(
            lambda: all(_ready(kube.get(r["_path"])) for r in resources),
            timeout,
            "the examples to be ready again",
        )
    _probe(probe, "check", kube, namespace, resources)
    return Hop(run.reached, target, time.monotonic() - started, offered)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return f"the cluster refused a request: {exc.status} {exc.reason}"
    return str(exc)


def _probe(
    probe: Probe | None, step: str, kube: Kube, namespace: str, resources: list[JSON]
) -> None:
    """Run the probe's ``write`` or ``check``; any error of it fails the run."""
    if probe is None:
        return
    try:
        getattr(probe, step)(kube, namespace, resources)
    except AssertionError:
        raise
    except Exception as exc:  # the probe's own client errors (etcd, HTTP, ...)
        raise AssertionError(f"probe {step} failed: {type(exc).__name__}: {exc}") from exc


def _deployments_ready(kube: Kube, csv: JSON, namespace: str) -> bool:
    """Every Deployment of the CSV's install strategy exists, is owned by this CSV
    (OLM's ``olm.owner`` label) and has all its replicas updated and available."""
    name = csv.get("metadata", {}).get("name", "")
    specs = ((csv.get("spec", {}).get("install") or {}).get("spec") or {}).get("deployments") or []
    for spec in specs:
        found = kube.get_or_none(f"/apis/apps/v1/namespaces/{namespace}/deployments/{spec['name']}")
        if found is None:
            return False
        if (found["metadata"].get("labels") or {}).get("olm.owner") != name:
            return False
        wanted = found.get("spec", {}).get("replicas", 1)
        status = found.get("status") or {}
        current = status.get("observedGeneration", 0) >= found["metadata"].get("generation", 0)
        if not current or status.get("updatedReplicas", 0) < wanted:
            return False
        if status.get("availableReplicas", 0) < wanted:
            return False
    return True


def _situation(kube: Kube, namespace: str, package: str) -> str:
    """The Subscription's state and the namespace's InstallPlans, for a failure message."""
    sub = kube.get_or_none(f"{OPERATORS}/namespaces/{namespace}/subscriptions/{package}") or {}
    status = sub.get("status") or {}
    plans = kube.get(f"{OPERATORS}/namespaces/{namespace}/installplans").get("items", [])
    shown = [
        f"{p['metadata']['name']} {(p.get('status') or {}).get('phase')} "
        f"approved={p['spec'].get('approved')} {p['spec'].get('clusterServiceVersionNames')}"
        + _plan_failure(p)
        for p in plans
    ]
    return (
        f"subscription state={status.get('state')} currentCSV={status.get('currentCSV')} "
        f"installedCSV={status.get('installedCSV')}; install plans: {'; '.join(shown)}"
    )


def _plan_failure(plan: dict[str, Any]) -> str:
    """`` (reason: message)`` of a failed InstallPlan's condition, else nothing."""
    for condition in (plan.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "False" and condition.get("message"):
            return f" ({condition.get('reason')}: {condition['message']})"
    return ""


def _create_examples(
    kube: Kube, csv: JSON, namespace: str, timeout: float, created: list[str], *, wait: bool = True
) -> list[JSON]:
    """Create the CSV's alm-examples, each at its kind's scope (an existing one is left
    alone, and not recorded in ``created``); with ``wait``, until each is Ready."""
    resources = []
    discovery = Discovery(kube)
    for example in _examples(csv):
        path, namespaced = _collection_path(discovery, example, namespace)
        metadata = {k: v for k, v in (example.get("metadata") or {}).items() if k != "namespace"}
        if namespaced:
            metadata["namespace"] = namespace
        if not metadata.get("name"):
            raise InstallFailed(f"alm-example {example['kind']} has no metadata.name")
        body = {**example, "metadata": metadata}
        item = f"{path}/{metadata['name']}"
        if kube.get_or_none(item) is None:
            kube.create(path, body)
            created.append(item)
        resources.append({**body, "_path": item})
    for resource in resources if wait else ():
        _wait(
            lambda r=resource: _ready(kube.get(r["_path"])),
            timeout,
            f"{resource['kind']} {resource['metadata']['name']} ready",
        )
    return resources


def clean_up(kube: Kube, run: UpgradeRun, timeout: float = 120.0) -> bool:
    """Delete the run's examples (each at the path, and so the scope, it was created
    at: a cluster-scoped one is not deleted with the namespace), waiting (up to
    ``timeout``) while the operator still runs to process their finalizers, then its
    namespace; whether the examples went."""
    for path in run.created:
        with contextlib.suppress(ApiException):
            kube.delete(path)
    deadline = time.monotonic() + timeout
    gone = False
    while time.monotonic() < deadline:
        gone = all(kube.get_or_none(path) is None for path in run.created)
        if gone:
            break
        time.sleep(0.5)
    with contextlib.suppress(ApiException):
        kube.delete(f"/api/v1/namespaces/{run.namespace}")
    return gone
