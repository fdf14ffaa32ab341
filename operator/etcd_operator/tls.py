"""``spec.tls`` on the Kubernetes side: the Secrets of mode auto (made and renewed), the
user's Secrets of mode secretRefs (read), and the client credentials the operator dials
members with.

Secrets of mode auto, all owned by the EtcdCluster:

- ``<name>-ca``: the CA (``tls.crt``, ``tls.key``, ``ca.crt``), ten years or more;
- ``<member>-tls``: a member's ``server.crt/key`` and ``peer.crt/key`` with ``ca.crt`` and
  ``peer-ca.crt`` (the file names :func:`etcd_operator.resources_tls.tls_volume` mounts), made
  before the member's Pod and deleted with it;
- ``<name>-client-tls``: the client certificate (cert-manager's shape), for the operator,
  the backup Jobs and olmtool's upgrade probe.

Leaf certificates are renewed in the last third of their lifetime by rewriting their
Secret: the kubelet updates the mounted files and etcd reads them at every new handshake,
so no member restarts and quorum is never at stake.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from etcd_operator import certs, validation
from etcd_operator.refs import MEMBER_LABEL, ClusterRef

if TYPE_CHECKING:
    from etcd_operator.kube import Kube

JSON = dict[str, Any]
DEFAULT_LIFETIME = 7_776_000  # spec.tls.certificateLifetimeSeconds's default: 90 days
CA_LIFETIME = datetime.timedelta(days=3650)


@dataclass(frozen=True)
class Credentials:
    """What a client needs to reach a member that requires client certificates (PEM)."""

    ca: bytes
    cert: bytes
    key: bytes


@dataclass(frozen=True)
class State:
    """The certificates of one pass."""

    refs: Mapping[str, str] | None  # spec.tls.secretRefs (mode secretRefs), else None
    client_secret: str
    ca_secret: str
    client: Credentials | None  # None: the client Secret is missing or incomplete
    expiry: str | None  # the first serving or peer certificate to expire (RFC 3339)
    problems: tuple[str, ...] = ()

    def status(self) -> JSON:
        found: JSON = {"caSecret": self.ca_secret, "clientSecret": self.client_secret}
        if self.expiry:
            found["expiry"] = self.expiry
        return found


def requested(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    tls = spec.get("tls")
    return tls if isinstance(tls, Mapping) else None


def secret_refs(spec: Mapping[str, Any]) -> Mapping[str, str] | None:
    tls = requested(spec) or {}
    return tls.get("secretRefs") if tls.get("mode") == "secretRefs" else None


def client_secret_name(ref: ClusterRef, spec: Mapping[str, Any]) -> str | None:
    """The Secret with the client certificate, when spec.tls is set."""
    if requested(spec) is None:
        return None
    refs = secret_refs(spec)
    return refs["client"] if refs else ref.client_secret


def _lifetime(spec: Mapping[str, Any]) -> datetime.timedelta:
    seconds = (requested(spec) or {}).get("certificateLifetimeSeconds") or DEFAULT_LIFETIME
    return datetime.timedelta(seconds=int(seconds))


def _decoded(secret: JSON | None, key: str) -> str:
    value = ((secret or {}).get("data") or {}).get(key)
    try:
        return base64.b64decode(value).decode() if value else ""
    except (ValueError, UnicodeDecodeError):
        return ""


def _data(values: Mapping[str, str]) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in sorted(values.items())}


def _secret(ref: ClusterRef, name: str, values: Mapping[str, str], kind: str) -> JSON:
    meta = ref.meta(name, "tls")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": kind,
        "data": _data(values),
    }


async def _write(
    kube: Kube, ref: ClusterRef, name: str, values: Mapping[str, str], kind: str
) -> None:
    body = _secret(ref, name, values, kind)
    found = await kube.get("v1", "Secret", ref.namespace, name)
    if found is None:
        await kube.create(body)
    else:
        await kube.patch("v1", "Secret", ref.namespace, name, {"data": body["data"]})


async def _ca(kube: Kube, ref: ClusterRef, lifetime: datetime.timedelta) -> certs.KeyPair:
    found = await kube.get("v1", "Secret", ref.namespace, ref.ca_secret)
    cert, key = _decoded(found, "tls.crt"), _decoded(found, "tls.key")
    if cert and key:
        return certs.KeyPair(cert, key)
    ca = certs.new_ca(f"{ref.name}.{ref.namespace} etcd CA", max(CA_LIFETIME, lifetime * 2))
    values = {"tls.crt": ca.cert, "tls.key": ca.key, "ca.crt": ca.cert}
    await _write(kube, ref, ref.ca_secret, values, "kubernetes.io/tls")
    # another pass may have made one first: use what the apiserver holds
    stored = await kube.get("v1", "Secret", ref.namespace, ref.ca_secret)
    return certs.KeyPair(
        _decoded(stored, "tls.crt") or ca.cert, _decoded(stored, "tls.key") or ca.key
    )


def member_values(
    ref: ClusterRef, ca: certs.KeyPair, member: str, lifetime: datetime.timedelta
) -> dict[str, str]:
    server = certs.issue(ca, member, lifetime, ref.server_names(member), server=True)
    peer = certs.issue(ca, member, lifetime, ref.peer_names(member), server=True, client=True)
    return {
        "ca.crt": ca.cert,
        "peer-ca.crt": ca.cert,
        "server.crt": server.cert,
        "server.key": server.key,
        "peer.crt": peer.cert,
        "peer.key": peer.key,
    }


async def ensure_member(
    kube: Kube,
    ref: ClusterRef,
    spec: Mapping[str, Any],
    member: str,
    ca: certs.KeyPair | None = None,
) -> str | None:
    """The member's Secret (mode auto), made or renewed when due; returns when its first
    certificate expires. Nothing for mode secretRefs."""
    if requested(spec) is None or secret_refs(spec) is not None:
        return None
    lifetime = _lifetime(spec)
    name = ref.member_secret(member)
    found = await kube.get("v1", "Secret", ref.namespace, name)
    current = [_decoded(found, "server.crt"), _decoded(found, "peer.crt")]
    if found is None or any(not c or certs.due(c) for c in current):
        ca = ca or await _ca(kube, ref, lifetime)
        values = member_values(ref, ca, member, lifetime)
        body = _secret(ref, name, values, "Opaque")
        body["metadata"]["labels"]["etcd.olmtool.dev/member"] = member
        if found is None:
            await kube.create(body)
        else:
            await kube.patch("v1", "Secret", ref.namespace, name, {"data": body["data"]})
        current = [values["server.crt"], values["peer.crt"]]
    return _first_expiry(current)


def _first_expiry(pems: Iterable[str]) -> str | None:
    found = []
    for pem in pems:
        try:
            found.append(certs.expiry(pem))
        except ValueError:
            continue
    return min(found).strftime("%Y-%m-%dT%H:%M:%SZ") if found else None


async def ensure(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any], members: Iterable[str]
) -> State | None:
    """The pass's certificates: for mode auto the CA, the client certificate and every
    member's Secret, each made or renewed when due; for secretRefs the user's Secrets
    read. None without spec.tls."""
    if requested(spec) is None:
        return None
    refs = secret_refs(spec)
    if refs is not None:
        return await _read_refs(kube, ref, refs)
    lifetime = _lifetime(spec)
    ca = await _ca(kube, ref, lifetime)
    found = await kube.get("v1", "Secret", ref.namespace, ref.client_secret)
    cert, key = _decoded(found, "tls.crt"), _decoded(found, "tls.key")
    if found is None or not cert or certs.due(cert):
        client = certs.issue(ca, "etcd-operator", lifetime, server=False, client=True)
        cert, key = client.cert, client.key
        values = {"tls.crt": cert, "tls.key": key, "ca.crt": ca.cert}
        await _write(kube, ref, ref.client_secret, values, "kubernetes.io/tls")
    expiries = [e for m in sorted(members) if (e := await ensure_member(kube, ref, spec, m, ca))]
    return State(
        refs=None,
        client_secret=ref.client_secret,
        ca_secret=ref.ca_secret,
        client=Credentials(ca.cert.encode(), cert.encode(), key.encode()),
        expiry=min(expiries) if expiries else None,
    )


async def certificates(
    kube: Kube, ref: ClusterRef, spec: Mapping[str, Any]
) -> tuple[State | None, list[str]]:
    """The pass's certificates (made or renewed for every member Pod), and what is wrong
    with the user's Secrets."""
    if requested(spec) is None or validation.tls_problem(spec):
        return None, []
    pods = await kube.list("v1", "Pod", ref.namespace, ref.label_selector())
    members = [
        p["metadata"]["labels"][MEMBER_LABEL]
        for p in pods
        if MEMBER_LABEL in (p["metadata"].get("labels") or {})
    ]
    state = await ensure(kube, ref, spec, members)
    return state, list(state.problems) if state else []


async def _read_refs(kube: Kube, ref: ClusterRef, refs: Mapping[str, str]) -> State:
    secrets = {
        role: await kube.get("v1", "Secret", ref.namespace, refs[role])
        for role in ("server", "peer", "client")
    }
    problems = tuple(
        f'spec.tls.secretRefs.{role}: Secret "{refs[role]}" has no {key}'
        for role, secret in secrets.items()
        for key in ("tls.crt", "tls.key", "ca.crt")
        if not _decoded(secret, key)
    )
    client = secrets["client"]
    credentials = None
    if all(_decoded(client, k) for k in ("tls.crt", "tls.key")) and _decoded(
        secrets["server"], "ca.crt"
    ):
        credentials = Credentials(
            _decoded(secrets["server"], "ca.crt").encode(),
            _decoded(client, "tls.crt").encode(),
            _decoded(client, "tls.key").encode(),
        )
    return State(
        refs=refs,
        client_secret=refs["client"],
        ca_secret=refs["server"],
        client=credentials,
        expiry=_first_expiry(_decoded(secrets[r], "tls.crt") for r in ("server", "peer")),
        problems=problems,
    )
