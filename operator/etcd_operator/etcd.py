"""etcd's cluster API, through aetcd (asyncio gRPC, maintained, protobuf 4-7).

aetcd's typed methods cover member list/add/remove and status; learners (MemberAdd with
``isLearner``, MemberPromote) and the learner flag of MemberList/Status are only on its
raw gRPC stubs, which it exposes (``clusterstub``, ``maintenancestub``), so those calls go
through them with the same connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

import aetcd
from aetcd import rpc

from etcd_operator.plan import Health, Member, name_from_peer_url

log = logging.getLogger(__name__)

CALL_TIMEOUT = 3.0
# a defragmentation rewrites the whole database file (etcdctl allows it a minute too)
DEFRAG_TIMEOUT = 120.0


class EtcdUnavailable(Exception):
    """No endpoint answered."""


class NotCaughtUp(Exception):
    """etcd refused to promote a learner that is not in sync with the leader yet."""


def describe(exc: BaseException) -> str:
    """One line for an etcd call's failure (gRPC errors carry multi-line debug text)."""
    if isinstance(exc, rpc.AioRpcError):
        return f"{exc.code().name}: {(exc.details() or '').splitlines()[0][:200]}"
    return f"{exc.__class__.__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.split("://", 1)[-1].rpartition(":")
    return host.strip("[]"), int(port)


@contextlib.asynccontextmanager
async def connect(endpoint: str, timeout: float = CALL_TIMEOUT) -> AsyncIterator[aetcd.Client]:
    host, port = _host_port(endpoint)
    client = aetcd.Client(host=host, port=port, timeout=timeout)
    try:
        await asyncio.wait_for(client.connect(), timeout)
        yield client
    finally:
        with contextlib.suppress(Exception):
            await client.close()


def _member(raw: object) -> Member:
    name = getattr(raw, "name", "") or ""
    urls = list(getattr(raw, "peerURLs", []))
    peer_url = urls[0] if urls else ""
    return Member(
        id=int(raw.ID),  # type: ignore[attr-defined]
        name=name or name_from_peer_url(peer_url),
        peer_url=peer_url,
        learner=bool(getattr(raw, "isLearner", False)),
        started=bool(name),
    )


async def _first(endpoints: Sequence[str], call):  # type: ignore[no-untyped-def]
    errors = []
    for endpoint in endpoints:
        try:
            async with connect(endpoint) as client:
                return await call(client)
        except NotCaughtUp:
            raise
        except Exception as exc:
            errors.append(f"{endpoint}: {describe(exc)}")
    raise EtcdUnavailable("; ".join(errors) or "no endpoints")


async def member_list(endpoints: Sequence[str]) -> tuple[Member, ...]:
    """The member list from the first voting member that answers, linearizable (agreed
    by a quorum) so a partitioned member's stale view never drives a change."""

    async def call(client: aetcd.Client) -> tuple[Member, ...]:
        reply = await client.clusterstub.MemberList(
            rpc.MemberListRequest(linearizable=True), timeout=CALL_TIMEOUT
        )
        return tuple(sorted((_member(m) for m in reply.members), key=lambda m: m.name))

    return await _first(endpoints, call)


async def health(endpoint: str) -> Health | None:
    """A member's own status (version, leader, raft index), None if it does not answer."""
    try:
        async with connect(endpoint, timeout=2.0) as client:
            reply = await client.maintenancestub.Status(rpc.StatusRequest(), timeout=2.0)
    except Exception:
        return None
    # an active alarm is listed among the errors ("memberID:... alarm:NOSPACE"): the
    # member still serves reads and the operator's repairs, so it is not unhealthy
    errors = [e for e in reply.errors if "alarm:" not in e]
    if reply.leader == 0 or errors:
        return None
    return Health(
        leader_id=int(reply.leader),
        raft_index=int(reply.raftIndex),
        version=reply.version,
        db_size=int(reply.dbSize),
        db_size_in_use=int(reply.dbSizeInUse),
    )


async def alarms(endpoints: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """The active alarms, as (member id, alarm name) pairs, sorted."""

    async def call(client: aetcd.Client) -> tuple[tuple[int, str], ...]:
        request = rpc.AlarmRequest(action=rpc.AlarmRequest.GET, memberID=0, alarm=rpc.NONE)
        reply = await client.maintenancestub.Alarm(request, timeout=CALL_TIMEOUT)
        return tuple(sorted((int(a.memberID), rpc.AlarmType.Name(a.alarm)) for a in reply.alarms))

    return await _first(endpoints, call)


async def disarm(endpoints: Sequence[str], member_id: int) -> None:
    """Deactivate the member's NOSPACE alarm."""

    async def call(client: aetcd.Client) -> None:
        request = rpc.AlarmRequest(
            action=rpc.AlarmRequest.DEACTIVATE, memberID=member_id, alarm=rpc.NOSPACE
        )
        await client.maintenancestub.Alarm(request, timeout=CALL_TIMEOUT)

    await _first(endpoints, call)


async def compact(endpoints: Sequence[str]) -> int:
    """Compact the key history up to the current revision (physically: the freed pages
    are free when it returns); returns that revision. A revision compacted already is
    not an error."""

    async def call(client: aetcd.Client) -> int:
        reply = await client.maintenancestub.Status(rpc.StatusRequest(), timeout=CALL_TIMEOUT)
        revision = int(reply.header.revision)
        try:
            await client.kvstub.Compact(
                rpc.CompactionRequest(revision=revision, physical=True), timeout=DEFRAG_TIMEOUT
            )
        except rpc.AioRpcError as exc:
            if "compacted" not in (exc.details() or ""):
                raise
        return revision

    return await _first(endpoints, call)


async def defragment(endpoint: str) -> None:
    """Defragment one member's database (it serves nothing meanwhile)."""
    async with connect(endpoint, timeout=DEFRAG_TIMEOUT) as client:
        await client.maintenancestub.Defragment(rpc.DefragmentRequest(), timeout=DEFRAG_TIMEOUT)


async def add_learner(endpoints: Sequence[str], peer_url: str) -> Member:
    async def call(client: aetcd.Client) -> Member:
        reply = await client.clusterstub.MemberAdd(
            rpc.MemberAddRequest(peerURLs=[peer_url], isLearner=True), timeout=CALL_TIMEOUT
        )
        return _member(reply.member)

    return await _first(endpoints, call)


async def promote(endpoints: Sequence[str], member_id: int) -> None:
    async def call(client: aetcd.Client) -> None:
        try:
            await client.clusterstub.MemberPromote(
                rpc.MemberPromoteRequest(ID=member_id), timeout=CALL_TIMEOUT
            )
        except rpc.AioRpcError as exc:
            if "in sync" in (exc.details() or "") or "not ready" in (exc.details() or ""):
                raise NotCaughtUp(exc.details()) from None
            raise

    await _first(endpoints, call)


async def remove(endpoints: Sequence[str], member_id: int) -> None:
    async def call(client: aetcd.Client) -> None:
        try:
            await client.clusterstub.MemberRemove(
                rpc.MemberRemoveRequest(ID=member_id), timeout=CALL_TIMEOUT
            )
        except rpc.AioRpcError as exc:
            # a retried removal that already happened
            if "member not found" not in (exc.details() or ""):
                raise

    await _first(endpoints, call)
