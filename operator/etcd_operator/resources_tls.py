"""A member Pod's TLS (pure): etcd's flags for each TLS stage, and the volume with the
member's certificates (the Secrets themselves are :mod:`etcd_operator.tls`'s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etcd_operator.refs import TLS_DIR, ClusterRef, MemberSpec

JSON = dict[str, Any]


def tls_args(stage: str) -> list[str]:
    """etcd's TLS flags for a stage: "ready" dials peers that serve TLS with the peer
    certificate (etcd ignores the files for its own plain listener), "on" serves clients
    and peers with TLS only and asks both for a certificate of the cluster's CA. Metrics
    and /health stay plain on their own port (probes and scrapers need no certificate)."""
    if not stage:
        return []
    dial = [
        f"--peer-trusted-ca-file={TLS_DIR}/peer-ca.crt",
        f"--peer-cert-file={TLS_DIR}/peer.crt",
        f"--peer-key-file={TLS_DIR}/peer.key",
    ]
    if stage != "on":
        return dial
    return [
        *dial,
        "--peer-client-cert-auth=true",
        "--client-cert-auth=true",
        f"--trusted-ca-file={TLS_DIR}/ca.crt",
        f"--cert-file={TLS_DIR}/server.crt",
        f"--key-file={TLS_DIR}/server.key",
    ]


def _items(secret: str, keys: Mapping[str, str]) -> JSON:
    return {"secret": {"name": secret, "items": [{"key": k, "path": p} for k, p in keys.items()]}}


def tls_volume(ref: ClusterRef, spec: MemberSpec) -> JSON:
    """The member's certificates under :data:`TLS_DIR` as ``ca.crt``, ``server.crt/key``,
    ``peer-ca.crt`` and ``peer.crt/key``: from its own Secret (mode auto), or from the
    user's (cert-manager's shape: ``tls.crt``, ``tls.key``, ``ca.crt``). The kubelet
    updates the files when a Secret changes, and etcd reads them at every handshake, so
    a renewed certificate needs no restart."""
    if spec.tls_refs:
        sources = [
            _items(
                spec.tls_refs["server"],
                {"tls.crt": "server.crt", "tls.key": "server.key", "ca.crt": "ca.crt"},
            ),
            _items(
                spec.tls_refs["peer"],
                {"tls.crt": "peer.crt", "tls.key": "peer.key", "ca.crt": "peer-ca.crt"},
            ),
        ]
    else:
        sources = [{"secret": {"name": ref.member_secret(spec.name)}}]
    return {"name": "tls", "projected": {"sources": sources}}
