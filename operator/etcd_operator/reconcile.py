"""One reconcile pass: observe, ask the planner for one step, do it, write status."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from etcd_operator import etcd, plan, resources, status
from etcd_operator.kube import ApiError, Kube
from etcd_operator.resources import BACKUP_REQUEST, MEMBER_LABEL, VERSION_LABEL, ClusterRef
from etcd_operator.versions import VersionRefused, check_change, parse

log = logging.getLogger(__name__)

JSON = dict[str, Any]
CRASH_LOOP_RESTARTS = 3


@dataclass
class Pass:
    """What one pass saw and did (the daemon waits less while it is progressing)."""

    step: plan.Step
    status: JSON

    @property
    def progressing(self) -> bool:
        backup_running = "succeeded" not in (self.status.get("lastBackup") or {"succeeded": 1})
        return backup_running or not isinstance(self.step, (plan.Settled, plan.Failed))


def parse_quantity(text: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(float(text))


# -- observing ---------------------------------------------------------------------------


def _pod_state(name: str, pod: JSON | None, claim: JSON | None) -> plan.MemberPod:
    meta = (pod or {}).get("metadata") or {}
    pod_status = (pod or {}).get("status") or {}
    statuses = pod_status.get("container_statuses") or pod_status.get("containerStatuses") or []
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod_status.get("conditions") or []
    )
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    waiting = [((s.get("state") or {}).get("waiting") or {}).get("reason") for s in statuses]
    return plan.MemberPod(
        name=name,
        pod=pod is not None,
        ready=ready,
        deleting=bool(meta.get("deletionTimestamp")),
        crash_looping=restarts >= CRASH_LOOP_RESTARTS and "CrashLoopBackOff" in waiting,
        version=(meta.get("labels") or {}).get(VERSION_LABEL),
        claim=claim is not None,
        claim_deleting=bool(((claim or {}).get("metadata") or {}).get("deletionTimestamp")),
    )


def _endpoint(pod: JSON | None) -> str | None:
    if not pod or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    ip = (pod.get("status") or {}).get("podIP")
    return f"http://{ip}:{resources.CLIENT_PORT}" if ip else None


@dataclass
class World:
    observed: plan.Observed
    pods: dict[str, JSON]
    endpoints: dict[str, str]
    running_version: str
    invalid: str | None


async def observe(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any], old: Mapping[str, Any]
) -> World:
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
    states = {n: _pod_state(n, pods.get(n), claims.get(n)) for n in sorted({*pods, *claims})}
    endpoints = {n: e for n, p in pods.items() if (e := _endpoint(p))}
    try:
        members = await etcd.member_list(list(endpoints.values())) if endpoints else None
    except etcd.EtcdUnavailable as exc:
        log.info("no member answered the member list: %s", exc)
        members = None
    healths = await asyncio.gather(
        *(etcd.health(endpoints[m.name]) if m.name in endpoints else _none() for m in members or ())
    )
    health = {m.id: h for m, h in zip(members or (), healths, strict=True) if h is not None}
    versions = sorted({s.version for s in states.values() if s.pod and s.version}, key=parse)
    current = versions[0] if versions else None
    target = str(spec.get("version") or "3.5.1")
    try:
        wanted = check_change(current, target)
        running, invalid = str(wanted), None
    except VersionRefused as exc:
        wanted = parse(current) if current else None
        running, invalid = current or target, f"spec.version {target}: {exc}"
    observed = plan.Observed(
        cluster=ref.name,
        replicas=int(spec.get("replicas") or 3),
        version=wanted or parse("0.0.0"),
        members=members,
        health=health,
        pods=states,
        bootstrapped=bool(old.get("members")) or bool(claims),
        upgrade_refused=invalid,
    )
    return World(observed, pods, endpoints, running, invalid)


async def _none() -> None:
    return None


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
    await kube.create(resources.data_claim(ref, member, str(spec.get("storageSize") or "1Gi")))
    member_spec = resources.MemberSpec(
        name=member,
        version=version,
        initial_cluster=initial,
        state=state,
        resources=spec.get("resources"),
        restore=restore,
    )
    await kube.create(resources.member_pod(ref, member_spec))


async def _delete_member_objects(kube: Kube, ref: ClusterRef, name: str) -> None:
    await kube.delete("v1", "Pod", ref.namespace, name)
    await kube.delete("v1", "PersistentVolumeClaim", ref.namespace, ref.data_claim(name))


async def act(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any], world: World, step: plan.Step
) -> plan.Step:
    """Do ``step``; returns the step (or a Wait explaining why it could not happen yet)."""
    endpoints = list(world.endpoints.values())
    observed = world.observed
    match step:
        case plan.Bootstrap(member=member):
            restore = spec.get("restore")
            await _start_member(
                kube, ref, spec, world, member, world.running_version, "new", [member], restore
            )
        case plan.StartPod(member=member, version=version):
            names = [m.name for m in observed.members or ()] or [member]
            await _start_member(kube, ref, spec, world, member, version, "existing", names)
        case plan.AddLearner(member=member):
            added = await etcd.add_learner(endpoints, ref.peer_url(member))
            log.info("added learner %s (%x)", member, added.id)
            members = await etcd.member_list(endpoints)
            names = [m.name for m in members]
            await _start_member(
                kube, ref, spec, world, member, world.running_version, "existing", names
            )
        case plan.Promote(member=member):
            try:
                await etcd.promote(endpoints, member.id)
            except etcd.NotCaughtUp as exc:
                return plan.Wait("AddingMember", f"learner {member.name} is catching up: {exc}")
        case plan.RemoveMember(member=member):
            others = [e for n, e in world.endpoints.items() if n != member.name] or endpoints
            await etcd.remove(others, member.id)
            await _delete_member_objects(kube, ref, member.name)
        case plan.DeleteLeftovers(name=name):
            await _delete_member_objects(kube, ref, name)
        case plan.Roll(member=member):
            # the next pass starts the member again at the target version (StartPod)
            await kube.delete("v1", "Pod", ref.namespace, member)
    return step


# -- owned objects -----------------------------------------------------------------------


async def ensure_shared(kube: Kube, ref: ClusterRef, spec: Mapping[str, Any]) -> None:
    replicas = int(spec.get("replicas") or 3)
    storage = parse_quantity(str(spec.get("storageSize") or "1Gi"))
    for body in (
        resources.peer_service(ref),
        resources.client_service(ref),
        resources.metrics_service(ref),
    ):
        await kube.create(body)
    await kube.ensure(resources.bootstrap_config(ref, storage), fields=())
    # optional extras: RBAC of older releases (0.1.0, 0.2.0) grants neither; the members
    # matter more than the budget and backups, so a refusal is logged, not fatal
    try:
        pdb_version = await kube.served("policy", "PodDisruptionBudget", ("v1", "v1beta1"))
        await kube.ensure(resources.disruption_budget(ref, replicas, pdb_version))
        await ensure_backups(kube, ref, spec)
    except ApiError as exc:
        if exc.code != 403:
            raise
        log.warning("skipping the disruption budget or backups: %s", exc)


async def ensure_backups(kube: Kube, ref: ClusterRef, spec: Mapping[str, Any]) -> None:
    cron_version = await kube.served("batch", "CronJob", ("v1", "v1beta1"))
    schedule = spec.get("backupSchedule")
    if schedule:
        await kube.create(resources.backup_claim(ref, str(spec.get("backupStorageSize") or "1Gi")))
        await kube.ensure(resources.backup_cronjob(ref, schedule, cron_version))
    else:
        await kube.delete(cron_version, "CronJob", ref.namespace, ref.backup_cronjob)


async def request_backup(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any], annotations: Mapping[str, str]
) -> None:
    """An on-demand backup for each new value of the backup-request annotation."""
    request = annotations.get(BACKUP_REQUEST)
    if not request:
        return
    name = f"{ref.name}-backup-{hashlib.sha256(request.encode()).hexdigest()[:8]}"
    await kube.create(resources.backup_claim(ref, str(spec.get("backupStorageSize") or "1Gi")))
    await kube.create(resources.backup_job(ref, name, f"{name}.db"))


async def last_backup(kube: Kube, ref: ClusterRef) -> JSON | None:
    selector = ref.label_selector("backup")
    try:
        jobs = await kube.list("batch/v1", "Job", ref.namespace, selector)
    except ApiError as exc:
        if exc.code != 403:
            raise
        return None
    if not jobs:
        return None
    job = max(
        jobs, key=lambda j: (j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"])
    )
    job_status = job.get("status") or {}
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    snapshot = args[-1].rsplit("/", 1)[-1].replace("$(JOB_NAME)", job["metadata"]["name"])
    backup: JSON = {"job": job["metadata"]["name"], "snapshot": snapshot}
    if job_status.get("succeeded"):
        backup["succeeded"] = True
    elif _job_failed(job_status):
        backup["succeeded"] = False
    return backup


def _job_failed(job_status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Failed" and c.get("status") == "True"
        for c in job_status.get("conditions") or []
    )


# -- the pass ----------------------------------------------------------------------------


async def reconcile(kube: Kube, ref: ClusterRef, body: Mapping[str, Any]) -> Pass:
    spec = body.get("spec") or {}
    old = body.get("status") or {}
    await ensure_shared(kube, ref, spec)
    await request_backup(kube, ref, spec, (body.get("metadata") or {}).get("annotations") or {})
    world = await observe(kube, ref, spec, old)
    if world.invalid and not world.observed.bootstrapped:
        step: plan.Step = plan.Failed("InvalidSpec", world.invalid)
    else:
        step = plan.next_step(world.observed, world.running_version)
        try:
            step = await act(kube, ref, spec, world, step)
        except etcd.EtcdUnavailable as exc:
            step = plan.Wait("Unreachable", f"etcd did not answer {step.reason}: {exc}")
    new_status = build_status(ref, body, world, step, await last_backup(kube, ref))
    return Pass(step, new_status)


def build_status(
    ref: ClusterRef, body: Mapping[str, Any], world: World, step: plan.Step, backup: JSON | None
) -> JSON:
    old = body.get("status") or {}
    observed = world.observed
    versions = sorted(
        {m["version"] for m in status.members(observed, ref) if m["version"]}, key=parse
    )
    was_creating = status.creating(old)
    stale = [dict(m, healthy=False, isLeader=False) for m in old.get("members") or []]
    new: JSON = {
        "phase": status.phase(step, world.invalid, old.get("phase")),
        "members": status.members(observed, ref) or stale,
        "readyMembers": len(observed.health),
        "currentVersion": versions[0] if versions else old.get("currentVersion"),
        "targetVersion": str((body.get("spec") or {}).get("version") or ""),
        "observedGeneration": (body.get("metadata") or {}).get("generation"),
        "conditions": status.conditions(
            step, observed, world.invalid, old.get("conditions") or [], was_creating
        ),
    }
    if backup:
        new["lastBackup"] = backup
    return new
