"""Maintenance of the members' databases: the alarms they raise, the quota they run with,
defragmentation (on request by annotation, or above spec.maintenance.defragmentAbovePercent)
and recovery from a NOSPACE alarm (compact, defragment, disarm)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from etcd_operator import etcd, resources, validation
from etcd_operator.plan_maintenance import REQUESTED_MIN_FREE, mib
from etcd_operator.plan_model import (
    Defragment,
    Member,
    Observed,
    RecoverSpace,
    Step,
    Wait,
    ordinal,
)
from etcd_operator.refs import DEFRAG_REQUEST

log = logging.getLogger(__name__)


async def alarms(endpoints: list[str]) -> tuple[tuple[int, str], ...]:
    try:
        return await etcd.alarms(endpoints)
    except etcd.EtcdUnavailable as exc:
        log.info("no member answered the alarm list: %s", exc)
        return ()


def quota_bytes(spec: Mapping[str, Any]) -> int:
    """The database quota the members run with (0: not known, the size is refused)."""
    quota = (validation.options(spec) or {}).get("quotaBackendBytes")
    if quota:
        return int(quota)
    if validation.size_problem(spec, "storageSize"):
        return 0
    return resources.default_quota(validation.size_bytes(validation.size(spec, "storageSize")))


def defrag_request(annotations: Mapping[str, str], old: Mapping[str, Any]) -> str | None:
    """The defragment-request annotation's value when no defragmentation answered it yet."""
    request = annotations.get(DEFRAG_REQUEST)
    done = (old.get("lastDefragmentation") or {}).get("request")
    return request if request and request != done else None


async def defragment(
    observed: Observed, endpoints: Mapping[str, etcd.Endpoint], step: Step, member: Member
) -> Step:
    endpoint = endpoints[member.name]
    before = observed.health.get(member.id)
    await etcd.defragment(endpoint)
    after = await etcd.health(endpoint)
    if before is None or after is None:
        return step
    message = f"defragmented member {member.name}: {mib(before.db_size)} -> " + mib(after.db_size)
    return Defragment(step.reason, message, member=member)


async def recover_space(
    observed: Observed, endpoints: Mapping[str, etcd.Endpoint], step: Step
) -> Step:
    """One pass of NOSPACE recovery: compact, then defragment one member with something
    to reclaim; when none has, disarm if every database fits the quota again."""
    await etcd.compact(list(endpoints.values()))
    members = [m for m in observed.voters if m.name in endpoints]
    sizes = {m.name: await etcd.health(endpoints[m.name]) for m in members}
    leader = observed.leader_id
    for member in sorted(members, key=lambda m: (m.id == leader, ordinal(m.name))):
        health = sizes[member.name]
        if health is not None and health.free >= REQUESTED_MIN_FREE:
            return await defragment(observed, endpoints, step, member)
    largest = max((h.db_size for h in sizes.values() if h), default=0)
    quota = observed.quota_bytes
    if quota and largest >= quota:
        return Wait(
            "NoSpace",
            f"the database ({mib(largest)}) still fills its quota ({mib(quota)}) "
            "after compaction and defragmentation: delete keys, or raise "
            "spec.options.quotaBackendBytes (and storageSize)",
        )
    for member_id in sorted({i for i, alarm in observed.alarms if alarm == "NOSPACE"}):
        await etcd.disarm(list(endpoints.values()), member_id)
    return RecoverSpace(
        step.reason, f"disarmed the NOSPACE alarm: the largest database is {mib(largest)}"
    )
