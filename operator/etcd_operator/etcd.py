"""etcd's cluster API over gRPC, with aetcd's generated stubs (maintained, protobuf 4-7).

aetcd's client dials plain gRPC only, and its typed methods lack learners (MemberAdd with
``isLearner``, MemberPromote, the learner flag): the calls here use its stubs
(``rpc.ClusterStub``, ``MaintenanceStub``, ``KVStub``) on a channel of our own, plain or
TLS with a client certificate (``spec.tls``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from aetcd import rpc

from etcd_operator.plan import name_from_peer_url
from etcd_operator.plan_model import Health, Member
from etcd_operator.tls import Credentials

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


@dataclass(frozen=True)
class Endpoint:
    """A member's client URL; an https one with the name its certificate has and the
    client certificate to present."""

    url: str
    server_name: str | None = None
    credentials: Credentials | None = None

    def __str__(self) -> str:
        return self.url

    @property
    def target(self) -> str:
        return self.url.split("://", 1)[-1]


@dataclass(frozen=True)
class Client:
    """The stubs of one channel."""

    clusterstub: Any
    maintenancestub: Any
    kvstub: Any


def _channel(endpoint: Endpoint) -> grpc.aio.Channel:
    if not endpoint.url.startswith("https://"):
        return grpc.aio.insecure_channel(endpoint.target)
    creds = endpoint.credentials
    credentials = grpc.ssl_channel_credentials(
        root_certificates=creds.ca if creds else None,
        private_key=creds.key if creds else None,
        certificate_chain=creds.cert if creds else None,
    )
    options = []
    if endpoint.server_name:
        # dialled by Pod IP, verified against the member's DNS name in its certificate
        options.append(("grpc.ssl_target_name_override", endpoint.server_name))
    return grpc.aio.secure_channel(endpoint.target, credentials, options=options)


@contextlib.asynccontextmanager
async def connect(endpoint: Endpoint | str, timeout: float = CALL_TIMEOUT) -> AsyncIterator[Client]:
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint)
    channel = _channel(endpoint)
    try:
        await asyncio.wait_for(channel.channel_ready(), timeout)
        yield Client(rpc.ClusterStub(channel), rpc.MaintenanceStub(channel), rpc.KVStub(channel))
    finally:
        with contextlib.suppress(Exception):
            await channel.close()


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


async def _first(endpoints: Sequence[Endpoint], call):  # type: ignore[no-untyped-def]
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


async def member_list(endpoints: Sequence[Endpoint]) -> tuple[Member, ...]:
    """The member list from the first voting member that answers, linearizable (agreed
    by a quorum) so a partitioned member's stale view never drives a change."""

    async def call(client: Client) -> tuple[Member, ...]:
        reply = await client.clusterstub.MemberList(
            rpc.MemberListRequest(linearizable=True), timeout=CALL_TIMEOUT
        )
        return tuple(sorted((_member(m) for m in reply.members), key=lambda m: m.name))

    return await _first(endpoints, call)


async def health(endpoint: Endpoint) -> Health | None:
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


async def alarms(endpoints: Sequence[Endpoint]) -> tuple[tuple[int, str], ...]:
    """The active alarms, as (member id, alarm name) pairs, sorted."""

    async def call(client: Client) -> tuple[tuple[int, str], ...]:
        request = rpc.AlarmRequest(action=rpc.AlarmRequest.GET, memberID=0, alarm=rpc.NONE)
        reply = await client.maintenancestub.Alarm(request, timeout=CALL_TIMEOUT)
        return tuple(sorted((int(a.memberID), rpc.AlarmType.Name(a.alarm)) for a in reply.alarms))

    return await _first(endpoints, call)


async def disarm(endpoints: Sequence[Endpoint], member_id: int) -> None:
    """Deactivate the member's NOSPACE alarm."""

    async def call(client: Client) -> None:
        request = rpc.AlarmRequest(
            action=rpc.AlarmRequest.DEACTIVATE, memberID=member_id, alarm=rpc.NOSPACE
        )
        await client.maintenancestub.Alarm(request, timeout=CALL_TIMEOUT)

    await _first(endpoints, call)


async def compact(endpoints: Sequence[Endpoint]) -> int:
    """Compact the key history up to the current revision (physically: the freed pages
    are free when it returns); returns that revision. A revision compacted already is
    not an error."""

    async def call(client: Client) -> int:
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


async def defragment(endpoint: Endpoint) -> None:
    """Defragment one member's database (it serves nothing meanwhile)."""
    async with connect(endpoint, timeout=DEFRAG_TIMEOUT) as client:
        await client.maintenancestub.Defragment(rpc.DefragmentRequest(), timeout=DEFRAG_TIMEOUT)


async def add_learner(endpoints: Sequence[Endpoint], peer_url: str) -> Member:
    async def call(client: Client) -> Member:
        reply = await client.clusterstub.MemberAdd(
            rpc.MemberAddRequest(peerURLs=[peer_url], isLearner=True), timeout=CALL_TIMEOUT
        )
        return _member(reply.member)

    return await _first(endpoints, call)


async def promote(endpoints: Sequence[Endpoint], member_id: int) -> None:
    async def call(client: Client) -> None:
        try:
            await client.clusterstub.MemberPromote(
                rpc.MemberPromoteRequest(ID=member_id), timeout=CALL_TIMEOUT
            )
        except rpc.AioRpcError as exc:
            if "in sync" in (exc.details() or "") or "not ready" in (exc.details() or ""):
                raise NotCaughtUp(exc.details()) from None
            raise

    await _first(endpoints, call)


async def remove(endpoints: Sequence[Endpoint], member_id: int) -> None:
    async def call(client: Client) -> None:
        try:
            await client.clusterstub.MemberRemove(
                rpc.MemberRemoveRequest(ID=member_id), timeout=CALL_TIMEOUT
            )
        except rpc.AioRpcError as exc:
            # a retried removal that already happened
            if "member not found" not in (exc.details() or ""):
                raise

    await _first(endpoints, call)


async def update_peer_url(endpoints: Sequence[Endpoint], member_id: int, peer_url: str) -> None:
    """Change the peer URL etcd has for a member (http -> https when TLS is turned on)."""

    async def call(client: Client) -> None:
        await client.clusterstub.MemberUpdate(
            rpc.MemberUpdateRequest(ID=member_id, peerURLs=[peer_url]), timeout=CALL_TIMEOUT
        )

    await _first(endpoints, call)
