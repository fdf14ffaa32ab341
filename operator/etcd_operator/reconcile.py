"""One reconcile pass: observe, ask the planner for one step, do it, write status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from etcd_operator import (
    backups,
    etcd,
    maintenance,
    plan,
    plan_model,
    plan_tls,
    refs,
    resources,
    status,
    tls,
    validation,
)
from etcd_operator.kube import ApiError, Invalid, Kube, refused
from etcd_operator.refs import (
    CONFIG_ANNOTATION,
    MEMBER_LABEL,
    TLS_ANNOTATION,
    VERSION_LABEL,
    ClusterRef,
)
from etcd_operator.versions import VersionRefused, check_change, parse

log = logging.getLogger(__name__)

JSON = dict[str, Any]
CRASH_LOOP_RESTARTS = 3
# spec.nodeLossTimeoutSeconds's default (the CRD's too; a cluster made under an older CRD
# has none)
DEFAULT_NODE_LOSS_TIMEOUT = 300
# spec.maintenance.defragmentAbovePercent's default
DEFAULT_DEFRAG_PERCENT = 50
# spec.recovery.afterSeconds's default
DEFAULT_RECOVERY_AFTER = 300


@dataclass
class Pass:
    """What one pass saw and did (the daemon waits less while it is progressing)."""

    step: plan_model.Step
    status: JSON
    # what the operator refuses in the spec (each gets one Warning event)
    problems: list[str] = field(default_factory=list)

    @property
    def progressing(self) -> bool:
        backup_running = "succeeded" not in (self.status.get("lastBackup") or {"succeeded": 1})
        return backup_running or not isinstance(
            self.step, (plan_model.Settled, plan_model.Failed, plan_model.Blocked)
        )


# -- observing ---------------------------------------------------------------------------


def _pod_state(
    name: str, pod: JSON | None, claim: JSON | None, lost: Mapping[str, float] | None = None
) -> plan_model.MemberPod:
    """``lost``: for each node that is not Ready, for how many seconds."""
    meta = (pod or {}).get("metadata") or {}
    node = ((pod or {}).get("spec") or {}).get("nodeName") or None
    pod_status = (pod or {}).get("status") or {}
    statuses = pod_status.get("container_statuses") or pod_status.get("containerStatuses") or []
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod_status.get("conditions") or []
    )
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    waiting = [((s.get("state") or {}).get("waiting") or {}).get("reason") for s in statuses]
    return plan_model.MemberPod(
        name=name,
        pod=pod is not None,
        ready=ready,
        deleting=bool(meta.get("deletionTimestamp")),
        crash_looping=restarts >= CRASH_LOOP_RESTARTS and "CrashLoopBackOff" in waiting,
        version=(meta.get("labels") or {}).get(VERSION_LABEL),
        claim=claim is not None,
        claim_deleting=bool(((claim or {}).get("metadata") or {}).get("deletionTimestamp")),
        node=node,
        node_lost_for=(lost or {}).get(node) if node else None,
        config=(meta.get("annotations") or {}).get(CONFIG_ANNOTATION, ""),
        tls=(meta.get("annotations") or {}).get(TLS_ANNOTATION, ""),
    )


async def _lost_nodes(kube: Kube, names: set[str]) -> dict[str, float]:
    """For each of ``names`` whose Ready condition is not True, the seconds since it
    changed. Releases before 0.5.0 may not read Nodes (403): then nothing is known to
    be lost, and no member is replaced for its node."""
    lost: dict[str, float] = {}
    now = datetime.now(UTC)
    for name in sorted(names):
        try:
            node = await kube.get("v1", "Node", "", name)
        except ApiError as exc:
            log.debug("cannot read node %s: %s", name, exc)
            return {}
        if node is None:  # deleted: as gone as a node can be
            lost[name] = float("inf")
            continue
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None or ready.get("status") == "True":
            continue
        since = _timestamp(ready.get("lastTransitionTime"))
        lost[name] = (now - since).total_seconds() if since else 0.0
    return lost


def _timestamp(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def _endpoint(
    ref: ClusterRef, name: str, pod: JSON | None, certificates: tls.State | None
) -> etcd.Endpoint | None:
    """A running member's client endpoint: its Pod IP, over TLS once it serves TLS."""
    meta = (pod or {}).get("metadata") or {}
    if not pod or meta.get("deletionTimestamp"):
        return None
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return None
    if (meta.get("annotations") or {}).get(TLS_ANNOTATION) != "on":
        return etcd.Endpoint(f"http://{ip}:{refs.CLIENT_PORT}")
    return etcd.Endpoint(
        f"https://{ip}:{refs.CLIENT_PORT}",
        server_name=ref.host(name),
        credentials=certificates.client if certificates else None,
    )


@dataclass
class World:
    observed: plan_model.Observed
    pods: dict[str, JSON]
    endpoints: dict[str, etcd.Endpoint]
    running_version: str
    # what the operator refuses in the spec: InvalidSpec, one Warning event each
    problems: list[str] = field(default_factory=list)

    @property
    def invalid(self) -> str | None:
        return "; ".join(self.problems) or None


async def observe(
    kube: Kube,
    ref: ClusterRef,
    spec: Mapping[str, Any],
    old: Mapping[str, Any],
    problems: tuple[str, ...] = (),
    annotations: Mapping[str, str] | None = None,
    created: str = "",
    certificates: tls.State | None = None,
) -> World:
    """``problems``: what the pass found wrong with the spec so far (the version check
    adds its own, first); ``old``: the status the last pass wrote."""
    selector = ref.label_selector()
    pods_list, claims_list = await asyncio.gather(
        kube.list("v1", "Pod", ref.namespace, selector),
        kube.list("v1", "PersistentVolumeClaim", ref.namespace, selector),
    )
    pods = {
        p["metadata"]["labels"][MEMBER_LABEL]: p
        for p in pods_list
        if MEMBER_LABEL in p["metadata"].get("labels", {})
    }
    claims = {
        c["metadata"]["labels"][MEMBER_LABEL]: c
        for c in claims_list
        if MEMBER_LABEL in c["metadata"].get("labels", {})
    }
    nodes = {n for p in pods.values() if (n := (p.get("spec") or {}).get("nodeName"))}
    lost = await _lost_nodes(kube, nodes) if nodes else {}
    states = {n: _pod_state(n, pods.get(n), claims.get(n), lost) for n in sorted({*pods, *claims})}
    endpoints = {n: e for n, p in pods.items() if (e := _endpoint(ref, n, p, certificates))}
    try:
        members = await etcd.member_list(list(endpoints.values())) if endpoints else None
    except etcd.EtcdUnavailable as exc:
        log.info("no member answered the member list: %s", exc)
        members = None
    healths = await asyncio.gather(
        *(etcd.health(endpoints[m.name]) if m.name in endpoints else _none() for m in members or ())
    )
    health = {m.id: h for m, h in zip(members or (), healths, strict=True) if h is not None}
    alarms = await maintenance.alarms(list(endpoints.values())) if members else ()
    versions = sorted({s.version for s in states.values() if s.pod and s.version}, key=parse)
    current = versions[0] if versions else None
    target = str(spec.get("version") or "3.5.1")
    try:
        wanted = check_change(current, target)
        running, invalid = str(wanted), None
    except VersionRefused as exc:
        wanted = parse(current) if current else None
        running, invalid = current or target, f"spec.version {target}: {exc}"
    found = [invalid] if invalid else []
    # the snapshot a rebuild would start from, looked for only when members are missing
    degraded = members is None or len(health) < len(members)
    snapshot = await backups.newest_snapshot(kube, ref, created) if degraded else None
    observed = plan_model.Observed(
        cluster=ref.name,
        replicas=int(spec.get("replicas") or 3),
        version=wanted or parse("0.0.0"),
        members=members,
        health=health,
        pods=states,
        bootstrapped=bool(old.get("members")) or bool(claims),
        upgrade_refused=invalid,
        storage_refused=validation.size_problem(spec, "storageSize"),
        node_loss_timeout=float(spec.get("nodeLossTimeoutSeconds", DEFAULT_NODE_LOSS_TIMEOUT)),
        config=None
        if validation.options_problem(spec)
        else resources.config_digest(validation.options(spec)),
        alarms=alarms,
        quota_bytes=maintenance.quota_bytes(spec),
        defrag_requested=maintenance.defrag_request(annotations or {}, old) is not None,
        defrag_percent=int(
            (spec.get("maintenance") or {}).get("defragmentAbovePercent", DEFAULT_DEFRAG_PERCENT)
        ),
        last_voters=tuple(str(m["name"]) for m in old.get("members") or () if not m.get("learner")),
        recovery_after=recovery_after(spec),
        lost_for_good_for=_seconds_since(old.get("quorumLostForGoodSince")),
        snapshot=snapshot,
        tls="on" if certificates else "",
    )
    return World(observed, pods, endpoints, running, [*found, *problems])


async def _none() -> None:
    return None


def recovery_after(spec: Mapping[str, Any]) -> float | None:
    recovery = spec.get("recovery") or {}
    if not recovery.get("fromLatestBackup"):
        return None
    return float(recovery.get("afterSeconds", DEFAULT_RECOVERY_AFTER))


def _seconds_since(text: object) -> float:
    since = _timestamp(text) if text else None
    return (datetime.now(UTC) - since).total_seconds() if since else 0.0


# -- acting ------------------------------------------------------------------------------


async def _start_member(
    kube: Kube,
    ref: ClusterRef,
    spec: Mapping[str, Any],
    world: World,
    member: str,
    version: str,
    state: str,
    initial: list[str],
    restore: Mapping[str, str] | None = None,
) -> None:
    # an existing volume (a member restarting with its data) is not requested again: the
    # apiserver validates a create before it finds the claim exists
    existing = world.observed.pods.get(member)
    if existing is None or not existing.claim:
        size = validation.size(spec, "storageSize")
        await kube.create(resources.data_claim(ref, member, size))
    stage = plan_tls.start_stage(world.observed, member)
    if stage:
        await tls.ensure_member(kube, ref, spec, member)
    member_spec = refs.MemberSpec(
        name=member,
        version=version,
        initial_cluster=initial,
        state=state,
        resources=spec.get("resources"),
        restore=restore,
        placement=spec.get("placement"),
        options=validation.options(spec),
        tls=stage,
        tls_refs=tls.secret_refs(spec),
        peer_urls={m.name: m.peer_url for m in world.observed.members or ()},
    )
    await kube.create(resources.member_pod(ref, member_spec))


async def _delete_member_objects(
    kube: Kube, ref: ClusterRef, name: str, pod: plan_model.MemberPod | None = None
) -> None:
    """The member's Pod and volume. A Pod on a node that is not Ready is deleted at once
    (grace 0): no kubelet is there to confirm it stopped, and until the Pod object is
    gone its volume claim cannot go either."""
    force = pod is not None and pod.node_lost_for is not None
    await kube.delete("v1", "Pod", ref.namespace, name, grace=0 if force else None)
    await kube.delete("v1", "PersistentVolumeClaim", ref.namespace, ref.data_claim(name))
    await kube.delete("v1", "Secret", ref.namespace, ref.member_secret(name))


async def act(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any], world: World, step: plan_model.Step
) -> plan_model.Step:
    """Do ``step``; returns the step (or a Wait explaining why it could not happen yet)."""
    endpoints = list(world.endpoints.values())
    observed = world.observed
    match step:
        case plan_model.Bootstrap(member=member):
            restore = spec.get("restore")
            await _start_member(
                kube, ref, spec, world, member, world.running_version, "new", [member], restore
            )
        case plan_model.StartPod(member=member, version=version):
            names = [m.name for m in observed.members or ()] or [member]
            await _start_member(kube, ref, spec, world, member, version, "existing", names)
        case plan_model.AddLearner(member=member):
            secure = bool(observed.tls)
            added = await etcd.add_learner(endpoints, ref.peer_url(member, secure))
            log.info("added learner %s (%x)", member, added.id)
            members = await etcd.member_list(endpoints)
            names = [m.name for m in members]
            await _start_member(
                kube, ref, spec, world, member, world.running_version, "existing", names
            )
        case plan_model.Promote(member=member):
            try:
                await etcd.promote(endpoints, member.id)
            except etcd.NotCaughtUp as exc:
                return plan_model.Wait(
                    "AddingMember", f"learner {member.name} is catching up: {exc}"
                )
        case plan_model.RemoveMember(member=member):
            others = [e for n, e in world.endpoints.items() if n != member.name] or endpoints
            await etcd.remove(others, member.id)
            await _delete_member_objects(kube, ref, member.name, observed.pods.get(member.name))
        case plan_model.DeleteLeftovers(name=name):
            await _delete_member_objects(kube, ref, name, observed.pods.get(name))
        case plan_model.Roll(member=member, secure=secure):
            if secure:
                # peers dial it with TLS from now on; it serves TLS once restarted
                current = next(m for m in observed.members or () if m.name == member)
                await etcd.update_peer_url(endpoints, current.id, ref.peer_url(member, True))
            # the next pass starts the member again at the target version (StartPod)
            await kube.delete("v1", "Pod", ref.namespace, member)
        case plan_model.Defragment(member=member):
            return await maintenance.defragment(observed, world.endpoints, step, member)
        case plan_model.RecoverSpace():
            return await maintenance.recover_space(observed, world.endpoints, step)
        case plan_model.RebuildFromBackup(member=member, snapshot=snapshot):
            for name, pod in observed.pods.items():
                await _delete_member_objects(kube, ref, name, pod)
            restore = {"claimName": ref.backup_claim, "snapshot": snapshot}
            await _start_member(
                kube, ref, spec, world, member, world.running_version, "new", [member], restore
            )
    return step


# -- owned objects -----------------------------------------------------------------------


async def ensure_shared(kube: Kube, ref: ClusterRef, spec: Mapping[str, Any]) -> list[str]:
    """The objects every member shares; returns what the apiserver refused of those made
    from the spec (the pass goes on: the members matter more)."""
    replicas = int(spec.get("replicas") or 3)
    for body in (
        resources.peer_service(ref),
        resources.client_service(ref),
        resources.metrics_service(ref),
    ):
        await kube.create(body)
    # the quota follows storageSize; created once (never patched), so not from a size
    # that is refused (no member starts until it is fixed)
    if validation.size_problem(spec, "storageSize") is None:
        storage = validation.size_bytes(validation.size(spec, "storageSize"))
        await kube.ensure(resources.bootstrap_config(ref, storage), fields=())
    # optional extras: RBAC of older releases (0.1.0, 0.2.0) grants neither; the members
    # matter more than the budget and backups, so a refusal is logged or reported, not fatal
    problems: list[str] = []
    await _optional(_ensure_budget(kube, ref, replicas), problems)
    await _optional(backups.ensure_backups(kube, ref, spec), problems)
    return problems


async def _optional(action: Awaitable[None], problems: list[str]) -> None:
    try:
        await action
    except ApiError as exc:
        if exc.code == 403:
            log.warning("skipping the disruption budget or backups: %s", exc)
        elif isinstance(exc, Invalid):
            problems.append(refused(exc))
        else:
            raise


async def _ensure_budget(kube: Kube, ref: ClusterRef, replicas: int) -> None:
    pdb_version = await kube.served("policy", "PodDisruptionBudget", ("v1", "v1beta1"))
    await kube.ensure(resources.disruption_budget(ref, replicas, pdb_version))


# -- the pass ----------------------------------------------------------------------------


async def reconcile(kube: Kube, ref: ClusterRef, body: Mapping[str, Any]) -> Pass:
    old = body.get("status") or {}
    spec, kept = status.with_tls_kept(body.get("spec") or {}, old)
    ref = replace(ref, client_tls=tls.client_secret_name(ref, spec))
    problems = validation.spec_problems(spec) + ([kept] if kept else [])
    certificates, tls_problems = await tls.certificates(kube, ref, spec)
    problems += tls_problems
    problems += await ensure_shared(kube, ref, spec)
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    problems += await backups.request_backup(kube, ref, spec, annotations)
    created = str((body.get("metadata") or {}).get("creationTimestamp") or "")
    world = await observe(kube, ref, spec, old, tuple(problems), annotations, created, certificates)
    if world.invalid and not world.observed.bootstrapped:
        # nothing is created from a spec the operator refuses
        step: plan_model.Step = plan_model.Failed("InvalidSpec", world.invalid)
    else:
        step = plan.next_step(world.observed, world.running_version)
        try:
            step = await act(kube, ref, spec, world, step)
        except etcd.EtcdUnavailable as exc:
            step = plan_model.Wait("Unreachable", f"etcd did not answer {step.reason}: {exc}")
        except Invalid as exc:
            # not retried until the spec changes (the daemon wakes on every change)
            world.problems.append(refused(exc))
            step = plan_model.Blocked("InvalidSpec", f"{step.message}: {refused(exc)}")
    backup = await backups.last_backup(kube, ref)
    new_status = status.build_status(ref, body, world.observed, world.invalid, step, backup)
    if certificates is not None:
        new_status["tls"] = {**certificates.status(), **status.tls_record(spec)}
    return Pass(step, new_status, list(dict.fromkeys(world.problems)))
