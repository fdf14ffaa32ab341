"""Maintenance, planned (pure): recovery from a NOSPACE alarm, and defragmentation on
request or above spec.maintenance.defragmentAbovePercent."""

from __future__ import annotations

from etcd_operator.plan_model import Defragment, Observed, RecoverSpace, Step, ordinal

MiB = 1024 * 1024
# what a member must have free before a defragmentation is worth its pause: on request,
# and automatically (besides spec.maintenance.defragmentAbovePercent)
REQUESTED_MIN_FREE = 1 * MiB
AUTO_MIN_FREE = 64 * MiB


def mib(size: int) -> str:
    return f"{size / MiB:.1f} MiB"


def recover_space(observed: Observed) -> Step | None:
    ids = sorted({member_id for member_id, alarm in observed.alarms if alarm == "NOSPACE"})
    if not ids:
        return None
    names = [m.name for m in observed.members or () if m.id in ids] or [f"{i:x}" for i in ids]
    quota = f" ({mib(observed.quota_bytes)})" if observed.quota_bytes else ""
    return RecoverSpace(
        "NoSpace",
        f"NOSPACE alarm on {', '.join(names)}: the database reached its quota{quota} and "
        "writes are refused; compacting, defragmenting one member at a time, then disarming",
    )


def defragment(observed: Observed) -> Step | None:
    """One member to defragment, followers first: every member with something to reclaim
    when asked by annotation, else a member whose free pages are above the threshold."""
    if observed.defrag_requested:
        percent, minimum = 0, REQUESTED_MIN_FREE
    elif observed.defrag_percent:
        percent, minimum = observed.defrag_percent, AUTO_MIN_FREE
    else:
        return None
    leader = observed.leader_id
    for member in sorted(observed.voters, key=lambda m: (m.id == leader, ordinal(m.name))):
        health = observed.health.get(member.id)
        if health is None or health.free < minimum or health.free * 100 < percent * health.db_size:
            continue
        return Defragment(
            "Defragmenting",
            f"defragmenting member {member.name}: {mib(health.free)} of {mib(health.db_size)} free",
            member=member,
        )
    return None
