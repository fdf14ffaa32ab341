"""Backups: the CronJob of spec.backupSchedule, an on-demand backup for each new value of
the backup-request annotation, and what the backup Jobs tell (the newest snapshot a
rebuild starts from, the last backup status shows)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from etcd_operator import resources_backup, validation
from etcd_operator.kube import ApiError, Invalid, Kube, refused
from etcd_operator.refs import BACKUP_REQUEST, ClusterRef

JSON = dict[str, Any]


async def _ensure_backup_claim(kube: Kube, ref: ClusterRef, spec: Mapping[str, Any]) -> None:
    """The backups volume, unless its size is refused (the pass reports that): an existing
    one is used as it is, a missing one leaves the backup Pods pending until it is fixed."""
    if validation.size_problem(spec, "backupStorageSize") is None:
        size = validation.size(spec, "backupStorageSize")
        await kube.create(resources_backup.backup_claim(ref, size))


async def ensure_backups(kube: Kube, ref: ClusterRef, spec: Mapping[str, Any]) -> None:
    cron_version = await kube.served("batch", "CronJob", ("v1", "v1beta1"))
    schedule = spec.get("backupSchedule")
    if schedule:
        await _ensure_backup_claim(kube, ref, spec)
        await kube.ensure(resources_backup.backup_cronjob(ref, schedule, cron_version))
    else:
        await kube.delete(cron_version, "CronJob", ref.namespace, ref.backup_cronjob)


async def request_backup(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any], annotations: Mapping[str, str]
) -> list[str]:
    """An on-demand backup for each new value of the backup-request annotation; returns
    what the apiserver refused of it."""
    request = annotations.get(BACKUP_REQUEST)
    if not request:
        return []
    name = f"{ref.name}-backup-{hashlib.sha256(request.encode()).hexdigest()[:8]}"
    try:
        await _ensure_backup_claim(kube, ref, spec)
        await kube.create(resources_backup.backup_job(ref, name, f"{name}.db"))
    except Invalid as exc:
        return [refused(exc)]
    return []


async def _backup_jobs(kube: Kube, ref: ClusterRef) -> list[JSON]:
    """The backup Jobs, newest first (none when the RBAC of an older release denies)."""
    selector = ref.label_selector("backup")
    try:
        jobs = await kube.list("batch/v1", "Job", ref.namespace, selector)
    except ApiError as exc:
        if exc.code != 403:
            raise
        return []
    return sorted(
        jobs,
        key=lambda j: (j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"]),
        reverse=True,
    )


def _snapshot_file(job: Mapping[str, Any]) -> str:
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    return str(args[-1]).rsplit("/", 1)[-1].replace("$(JOB_NAME)", job["metadata"]["name"])


async def newest_snapshot(kube: Kube, ref: ClusterRef, created: str) -> str | None:
    """The snapshot of the newest backup Job that succeeded since the EtcdCluster was
    created (``created``; the backups volume outlives a deleted cluster of the same name,
    whose final snapshot is not this cluster's data)."""
    for job in await _backup_jobs(kube, ref):
        made = job["metadata"].get("creationTimestamp") or ""
        if (job.get("status") or {}).get("succeeded") and made >= created:
            return _snapshot_file(job)
    return None


async def last_backup(kube: Kube, ref: ClusterRef) -> JSON | None:
    jobs = await _backup_jobs(kube, ref)
    if not jobs:
        return None
    job = jobs[0]
    job_status = job.get("status") or {}
    backup: JSON = {"job": job["metadata"]["name"], "snapshot": _snapshot_file(job)}
    if job_status.get("succeeded"):
        backup["succeeded"] = True
    elif job_failed(job_status):
        backup["succeeded"] = False
    return backup


def job_failed(job_status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Failed" and c.get("status") == "True"
        for c in job_status.get("conditions") or []
    )
