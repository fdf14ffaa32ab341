"""The control plane's keys and certificates, kept in ``<state>/pki`` (0700, keys 0600).

* The cluster CA (``olmtool-ca``) signs the apiserver's serving certificate, its client
  certificate for kubelets, the serving certificates of kube-controller-manager and
  kube-scheduler, and the node's (:mod:`olmtool.cluster.kubeletnode`: the kubelet's
  identity and serving certificate, kube-proxy's identity).
* etcd has a CA of its own (``etcd-ca``, as kubeadm does): it signs etcd's serving and
  peer certificates and the one client certificate etcd accepts, the apiserver's
  (``kube-apiserver-etcd-client``, also what olmtool's health checks present). A
  certificate the cluster CA issues therefore never opens etcd.
* The service-account signing key and the admin token (``tokens.csv``).

Everything is reused when present and valid, so a restarted cluster keeps its
kubeconfig and service-account tokens; a certificate that is missing, expired or from
another CA is issued again.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from olmtool.cluster import pki
from olmtool.ports import LOOPBACK

APISERVER_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
ETCD_CLIENT = "kube-apiserver-etcd-client"


@dataclass(frozen=True)
class EtcdCredentials:
    ca: pki.KeyPair
    server: pki.KeyPair  # etcd's client URL (127.0.0.1, localhost)
    peer: pki.KeyPair  # its peer URL (server and client use)
    client: pki.KeyPair  # the apiserver's (and olmtool's health checks')


def pki_dir(state_dir: Path) -> Path:
    return pki.private_dir(state_dir / "pki")


def admin_credentials(
    state_dir: Path, ips: tuple[str, ...]
) -> tuple[pki.KeyPair, pki.KeyPair, pki.KeyPair, str]:
    """CA, serving cert (for ``ips``), SA signing key and admin token: reused when the
    state dir has them, so a restarted cluster keeps its kubeconfig and service-account
    tokens valid; a serving cert lacking one of ``ips`` (the cluster moved to another
    network) is issued again by the same CA."""
    directory = pki_dir(state_dir)
    tokens = state_dir / "tokens.csv"
    ca = pki.KeyPair(directory / "olmtool-ca.crt", directory / "olmtool-ca.key")
    serving = pki.KeyPair(directory / "kube-apiserver.crt", directory / "kube-apiserver.key")
    sa = pki.KeyPair(directory / "service-account.pub", directory / "service-account.key")
    paths = (ca.cert, ca.key, serving.cert, serving.key, sa.cert, sa.key, tokens)
    if all(path.is_file() for path in paths):
        if not set(ips) <= pki.certificate_ips(serving.cert):
            serving = _apiserver_cert(directory, ca, ips)
        return ca, serving, sa, tokens.read_text().split(",", 1)[0]
    ca = pki.create_ca(directory)
    serving = _apiserver_cert(directory, ca, ips)
    sa = pki.create_signing_key(directory)
    token = secrets.token_hex(16)
    pki.write_private(tokens, f'{token},admin,admin,"system:masters"\n'.encode())
    return ca, serving, sa, token


def _apiserver_cert(directory: Path, ca: pki.KeyPair, ips: tuple[str, ...]) -> pki.KeyPair:
    return pki.create_serving_cert(directory, ca, "kube-apiserver", hosts=APISERVER_NAMES, ips=ips)


def kubelet_client_credentials(state_dir: Path, ca: pki.KeyPair) -> pki.KeyPair:
    """The apiserver's client certificate for kubelets (logs, exec, port-forward), signed
    by the cluster CA; issued again when missing or from another CA."""
    directory = pki_dir(state_dir)
    client = pki.KeyPair(
        directory / "kube-apiserver-kubelet-client.crt",
        directory / "kube-apiserver-kubelet-client.key",
    )
    if not pki.issued_by(client, ca):
        # the user and group a kubeadm apiserver presents to kubelets
        client = pki.create_client_cert(
            directory, ca, "kube-apiserver-kubelet-client", organization="system:masters"
        )
    return client


def loopback_serving_cert(
    state_dir: Path, ca: pki.KeyPair, name: str, *, client: bool = False
) -> pki.KeyPair:
    """``<name>.crt/.key`` for ``localhost`` and 127.0.0.1 signed by ``ca``: reused, or
    issued again when missing, expired or from another CA."""
    directory = pki_dir(state_dir)
    pair = pki.KeyPair(directory / f"{name}.crt", directory / f"{name}.key")
    if pki.issued_by(pair, ca):
        return pair
    return pki.create_serving_cert(
        directory, ca, name, hosts=("localhost",), ips=(LOOPBACK,), client=client
    )


def etcd_credentials(state_dir: Path) -> EtcdCredentials:
    """etcd's CA, serving, peer and client certificates (see the module's docstring)."""
    directory = pki_dir(state_dir)
    ca = pki.KeyPair(directory / "etcd-ca.crt", directory / "etcd-ca.key")
    if not (ca.cert.is_file() and ca.key.is_file()):
        ca = pki.create_ca(directory, "etcd-ca")
    # its gRPC gateway dials its own client URL with this certificate: client use too
    server = loopback_serving_cert(state_dir, ca, "etcd-server", client=True)
    peer = loopback_serving_cert(state_dir, ca, "etcd-peer", client=True)
    client = pki.KeyPair(directory / f"{ETCD_CLIENT}.crt", directory / f"{ETCD_CLIENT}.key")
    if not pki.issued_by(client, ca):
        client = pki.create_client_cert(directory, ca, ETCD_CLIENT)
    return EtcdCredentials(ca, server, peer, client)
