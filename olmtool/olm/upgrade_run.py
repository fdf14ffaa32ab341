"""The dynamic upgrade test: install a start version through OLM, create the CSV's
``alm-examples``, write probe data, then approve the upgrade InstallPlans hop by hop to
the channel head, checking at each hop that the CSV succeeded, the custom resources are
ready again and the probe's data is intact.

Runs against any cluster with OLM (real OLM, or olmtool's engine once it runs): only the
``operators.coreos.com`` API and the operator's own resources are used.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from olmtool.olm.subscribe import (
    InstallFailed,
    InstallMode,
    SubscriptionSpec,
    follow,
    subscribe,
)

JSON = dict[str, Any]
OPERATORS = "/apis/operators.coreos.com/v1alpha1"
READY_PHASES = ("Running", "Ready", "Succeeded", "Available", "Healthy")


class Probe(Protocol):
    """Data an operator package checks across upgrades (e.g. keys in its etcd)."""

    def write(self, kube: Any, namespace: str, resources: list[JSON]) -> None: ...

    def check(self, kube: Any, namespace: str, resources: list[JSON]) -> None: ...


@dataclass
class Hop:
    from_csv: str
    to_csv: str
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {"from": self.from_csv, "to": self.to_csv, "seconds": round(self.seconds, 2)}


@dataclass
class UpgradeRun:
    package: str
    start: str
    reached: str
    install_seconds: float = 0.0
    hops: list[Hop] = field(default_factory=list)
    failure: str | None = None

    @property
    def passed(self) -> bool:
        return self.failure is None

    def as_dict(self) -> dict[str, object]:
        return {
            "package": self.package,
            "start": self.start,
            "reached": self.reached,
            "passed": self.passed,
            "installSeconds": round(self.install_seconds, 2),
            "hops": [h.as_dict() for h in self.hops],
            "failure": self.failure,
        }


def _examples(csv: JSON) -> list[JSON]:
    text = (csv.get("metadata", {}).get("annotations") or {}).get("alm-examples") or "[]"
    try:
        examples = json.loads(text)
    except ValueError:
        return []
    return [e for e in examples if isinstance(e, dict)]


def _plural_path(csv: JSON, example: JSON, namespace: str) -> str:
    group, _, version = example["apiVersion"].rpartition("/")
    owned = (csv.get("spec", {}).get("customresourcedefinitions") or {}).get("owned") or []
    crd = next(o for o in owned if o.get("kind") == example["kind"])
    plural = crd["name"].split(".", 1)[0]
    return f"/apis/{group}/{version}/namespaces/{namespace}/{plural}"


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


def _pending_upgrade(kube: Any, namespace: str, current: str) -> JSON | None:
    plans = kube.get(f"{OPERATORS}/namespaces/{namespace}/installplans").get("items", [])
    for plan in plans:
        names = plan.get("spec", {}).get("clusterServiceVersionNames") or []
        waiting = (plan.get("status") or {}).get("phase") == "RequiresApproval"
        if waiting and not plan["spec"].get("approved") and current not in names:
            return plan
    return None


def run_upgrade(
    kube: Any,
    *,
    catalog_address: str,
    package: str,
    start_csv: str,
    head_csv: str,
    namespace: str,
    channel: str = "",
    probe: Probe | None = None,
    timeout: float = 300.0,
    on_change: Callable[[str], None] | None = None,
) -> UpgradeRun:
    """Install ``start_csv`` (Manual approval) and upgrade hop by hop to ``head_csv``."""
    say = on_change or (lambda _line: None)
    run = UpgradeRun(package, start_csv, start_csv)
    started = time.monotonic()
    spec = SubscriptionSpec(package, f"{package}-catalog", namespace, channel, start_csv, "Manual")
    subscribe(
        kube, namespace, spec, InstallMode("OwnNamespace", (namespace,)), address=catalog_address
    )
    try:
        followed = follow(
            kube, namespace, package, target_csv=start_csv, timeout=timeout, on_change=say
        )
        resources = _create_examples(kube, followed.csv, namespace, timeout)
        if probe is not None:
            probe.write(kube, namespace, resources)
        run.install_seconds = time.monotonic() - started
        say(f"{start_csv} installed, {len(resources)} example(s) ready")
        while run.reached != head_csv:
            hop_started = time.monotonic()
            plan: JSON | None = None

            def upgrade_offered(current: str = run.reached) -> bool:
                nonlocal plan
                plan = _pending_upgrade(kube, namespace, current)
                return plan is not None

            _wait(upgrade_offered, timeout, f"an upgrade InstallPlan from {run.reached}")
            assert plan is not None
            target = next(n for n in plan["spec"]["clusterServiceVersionNames"] if n != run.reached)
            say(f"upgrading {run.reached} -> {target}")
            followed = follow(
                kube, namespace, package, target_csv=target, timeout=timeout, on_change=say
            )
            _wait(
                lambda: all(_ready(kube.get(r["_path"])) for r in resources),
                timeout,
                "the examples to be ready again",
            )
            if probe is not None:
                probe.check(kube, namespace, resources)
            run.hops.append(Hop(run.reached, target, time.monotonic() - hop_started))
            run.reached = target
    except (InstallFailed, AssertionError) as exc:
        run.failure = f"{exc}; {_situation(kube, namespace, package)}"
    return run


def _situation(kube: Any, namespace: str, package: str) -> str:
    """The Subscription's state and the namespace's InstallPlans, for a failure message."""
    sub = kube.get_or_none(f"{OPERATORS}/namespaces/{namespace}/subscriptions/{package}") or {}
    status = sub.get("status") or {}
    plans = kube.get(f"{OPERATORS}/namespaces/{namespace}/installplans").get("items", [])
    shown = [
        f"{p['metadata']['name']} {(p.get('status') or {}).get('phase')} "
        f"approved={p['spec'].get('approved')} {p['spec'].get('clusterServiceVersionNames')}"
        for p in plans
    ]
    return (
        f"subscription state={status.get('state')} currentCSV={status.get('currentCSV')} "
        f"installedCSV={status.get('installedCSV')}; install plans: {'; '.join(shown)}"
    )


def _create_examples(kube: Any, csv: JSON, namespace: str, timeout: float) -> list[JSON]:
    resources = []
    for example in _examples(csv):
        path = _plural_path(csv, example, namespace)
        body = {**example, "metadata": {**example.get("metadata", {}), "namespace": namespace}}
        if kube.get_or_none(f"{path}/{body['metadata']['name']}") is None:
            kube.create(path, body)
        resources.append({**body, "_path": f"{path}/{body['metadata']['name']}"})
    for resource in resources:
        _wait(
            lambda r=resource: _ready(kube.get(r["_path"])),
            timeout,
            f"{resource['kind']} {resource['metadata']['name']} ready",
        )
    return resources
