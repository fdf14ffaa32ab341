"""kopf handlers for EtcdCluster: one reconcile daemon per cluster, woken by changes to
the cluster or its member Pods; a delete handler that takes the final snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from typing import Any

import kopf

from etcd_operator import backups, reconcile, resources_backup, status, tls, validation
from etcd_operator.kube import Invalid, Kube, refused
from etcd_operator.refs import GROUP, ClusterRef

log = logging.getLogger(__name__)

PLURAL = "etcdclusters"
# how long the daemon sleeps between passes unless something wakes it
BUSY_INTERVAL, IDLE_INTERVAL = 1.0, 15.0
FINAL_SNAPSHOT_TIMEOUT = 180.0

_wakeups: dict[str, asyncio.Event] = {}
# steps worth a Warning event on the EtcdCluster (kubectl describe), once each: a member
# replaced because its data, its process or its node is gone; a full database; a cluster
# rebuilt from its newest backup
WARNED_STEPS = {"ReplacingMember", "NoSpace", "RestoringFromBackup"}
# steps worth a Normal event: maintenance done to a member
NOTED_STEPS = {"Defragmenting"}


def _wakeup(uid: str) -> asyncio.Event:
    return _wakeups.setdefault(uid, asyncio.Event())


def cluster_ref(body: kopf.Body) -> ClusterRef:
    ref = ClusterRef(
        name=body["metadata"]["name"],
        namespace=body["metadata"]["namespace"],
        uid=body["metadata"]["uid"],
        api_version=body["apiVersion"],
        etcd_image=os.environ.get("ETCD_OPERATOR_ETCD_IMAGE", "quay.io/coreos/etcd"),
        backup_image=os.environ.get("ETCD_OPERATOR_BACKUP_IMAGE", "quay.io/coreos/etcd:v3.5.1"),
    )
    spec, _ = status.with_tls_kept(body.get("spec") or {}, body.get("status") or {})
    return dataclasses.replace(ref, client_tls=tls.client_secret_name(ref, spec))


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # progress and the diff base in annotations: the CRD's status schema has no kopf fields
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    settings.persistence.finalizer = f"{GROUP}/finalizer"
    settings.posting.level = logging.WARNING
    # Scope is fixed (WATCH_NAMESPACE names namespaces exactly, or all of them) and OLM
    # installs the CRD before the operator: no namespace or CRD scanning, hence no
    # cluster-scoped permissions at all.
    settings.scanning.disabled = True
    # watches that stall silently are restarted (kopf's fix for frozen watches)
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    settings.watching.inactivity_timeout = 300
    settings.networking.request_timeout = 30
    memo.kube = await Kube.connect()


@kopf.on.cleanup()
async def close(memo: kopf.Memo, **_: Any) -> None:
    kube = getattr(memo, "kube", None)
    if kube is not None:
        await kube.close()


@kopf.on.probe(id="clusters")
def clusters_watched(**_: Any) -> int:
    return len(_wakeups)


@kopf.on.update(GROUP, PLURAL)
@kopf.on.create(GROUP, PLURAL)
def changed(uid: str, **_: Any) -> None:
    _wakeup(uid).set()


@kopf.index("v1", "pods", labels={"app.kubernetes.io/managed-by": "etcd-operator"})
def member_pods(meta: kopf.Meta, **_: Any) -> dict[str, str] | None:
    """Wakes the owning cluster's daemon on every change of a member or backup Pod (an
    index rather than an event handler: indexers run on every event without logging)."""
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "EtcdCluster" and owner.get("uid") in _wakeups:
            _wakeups[owner["uid"]].set()
            return {str(owner["uid"]): str(meta.get("name"))}
    return None


@kopf.daemon(GROUP, PLURAL, cancellation_timeout=10.0, initial_delay=0)
async def run_cluster(
    stopped: kopf.DaemonStopped,
    body: kopf.Body,
    uid: str,
    memo: kopf.Memo,
    logger: logging.Logger,
    **_: Any,
) -> None:
    """Reconcile passes until the cluster is deleted or the operator stops: quickly
    while something is changing, every 15 s (or when woken) when settled."""
    kube: Kube = memo.kube
    wake = _wakeup(uid)
    last_message = None
    reported: list[str] = []  # the spec problems of the last pass, each posted once
    try:
        while not stopped:
            wake.clear()
            ref = cluster_ref(body)
            previous = (body.get("status") or {}).get("conditions") or []
            try:
                outcome = await reconcile.reconcile(kube, ref, dict(body))
            except Invalid as exc:
                # an object made from the spec that the pass could not do without: not
                # retried until the cluster changes (or the idle interval passes)
                problem = refused(exc)
                logger.info("invalid spec: %s", problem)
                _warn(body, status.unreported([problem], previous, reported))
                reported = [problem]
                await _report_failure(kube, body, problem, "InvalidSpec")
                await _sleep(wake, stopped, IDLE_INTERVAL)
                continue
            except Exception as exc:
                message = f"{exc.__class__.__name__}: {exc}"
                logger.warning("reconcile failed: %s", message)
                await _report_failure(kube, body, message)
                await _sleep(wake, stopped, BUSY_INTERVAL * 3)
                continue
            _warn(body, status.unreported(outcome.problems, previous, reported))
            reported = outcome.problems
            if outcome.status != (body.get("status") or {}):
                await kube.patch(
                    body["apiVersion"],
                    "EtcdCluster",
                    ref.namespace,
                    ref.name,
                    {"status": outcome.status},
                    status=True,
                )
            message = f"{outcome.step.reason}: {outcome.step.message}"
            if message != last_message:
                logger.info(message)
                if outcome.step.reason in WARNED_STEPS:
                    kopf.warn(body, reason=outcome.step.reason, message=outcome.step.message)
                elif outcome.step.reason in NOTED_STEPS:
                    # kopf.info obeys posting.level (WARNING: kopf's own chatter stays out)
                    kopf.event(
                        body,
                        type="Normal",
                        reason=outcome.step.reason,
                        message=outcome.step.message,
                    )
                last_message = message
            interval = BUSY_INTERVAL if outcome.progressing else IDLE_INTERVAL
            await _sleep(wake, stopped, interval)
    finally:
        _wakeups.pop(uid, None)


def _warn(body: kopf.Body, problems: list[str]) -> None:
    """A Warning event on the EtcdCluster for each spec problem (``kubectl describe``)."""
    for problem in problems:
        kopf.warn(body, reason="InvalidSpec", message=problem[:1000])


async def _report_failure(
    kube: Kube, body: kopf.Body, message: str, reason: str = "ReconcileFailed"
) -> None:
    """Status says the pass failed (Degraded, ReconcileFailed or InvalidSpec) so the
    failure is visible without the operator's logs; best effort, the next pass retries."""
    old = dict(body.get("status") or {})
    conditions = [c for c in old.get("conditions") or [] if c.get("type") != "Degraded"]
    conditions.append(
        status.condition("Degraded", True, reason, message[:1000], old.get("conditions") or [])
    )
    with contextlib.suppress(Exception):
        await kube.patch(
            body["apiVersion"],
            "EtcdCluster",
            body["metadata"]["namespace"],
            body["metadata"]["name"],
            {"status": {"conditions": conditions}},
            status=True,
        )


async def _sleep(wake: asyncio.Event, stopped: kopf.DaemonStopped, seconds: float) -> None:
    """Until woken, stopped (so shutdown never waits out an idle interval), or timed out."""
    waiters = [asyncio.ensure_future(wake.wait()), asyncio.ensure_future(stopped.wait())]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


@kopf.on.delete(GROUP, PLURAL)
async def take_final_snapshot(
    body: kopf.Body, spec: kopf.Spec, memo: kopf.Memo, logger: logging.Logger, **_: Any
) -> None:
    """Before the members go (their Pods and volumes are owned, so deletion cascades),
    snapshot the data into the kept backups volume unless ``finalSnapshot: false``."""
    if spec.get("finalSnapshot") is False:
        return
    kube: Kube = memo.kube
    ref = cluster_ref(body)
    selector = ref.label_selector()
    if not await kube.list("v1", "Pod", ref.namespace, selector):
        logger.info("no members left: no final snapshot")
        return
    name = f"{ref.name}-final-{ref.uid[:8]}"
    problem = validation.size_problem(spec, "backupStorageSize")
    if problem is None:
        size = validation.size(spec, "backupStorageSize")
        await kube.create(resources_backup.backup_claim(ref, size))
    elif await kube.get("v1", "PersistentVolumeClaim", ref.namespace, ref.backup_claim) is None:
        logger.warning("no final snapshot: no backups volume, and %s", problem)
        return
    await kube.create(resources_backup.backup_job(ref, name, f"{ref.name}-final.db"))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FINAL_SNAPSHOT_TIMEOUT
    while loop.time() < deadline:
        job = await kube.get("batch/v1", "Job", ref.namespace, name)
        job_status = (job or {}).get("status") or {}
        if job_status.get("succeeded"):
            logger.info("final snapshot %s-final.db saved in %s", ref.name, ref.backup_claim)
            return
        if backups.job_failed(job_status):
            break
        await asyncio.sleep(1.0)
    logger.warning("final snapshot failed or timed out; deleting the cluster without it")
