"""Certificates for ``spec.tls: {mode: auto}`` (pure, with the ``cryptography`` library).

The operator keeps one CA per EtcdCluster and issues, from it, each member's serving and
peer certificates and one client certificate for itself and the backup Jobs. Keys are
ECDSA P-256 (what cert-manager and kubeadm default to for new keys). Everything is PEM,
as in the Secrets cert-manager writes (``tls.crt``, ``tls.key``, ``ca.crt``).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# a certificate is valid from a little before it is made: clocks of nodes differ
BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class KeyPair:
    cert: str  # PEM
    key: str  # PEM

    @property
    def not_after(self) -> datetime.datetime:
        return expiry(self.cert)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "etcd-operator"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64]),
        ]
    )


def new_ca(common_name: str, lifetime: datetime.timedelta) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _key_pem(key))


def issue(
    ca: KeyPair,
    common_name: str,
    lifetime: datetime.timedelta,
    dns_names: Sequence[str] = (),
    server: bool = True,
    client: bool = False,
) -> KeyPair:
    """A leaf certificate signed by ``ca``: ``server`` for serving (TLS server auth),
    ``client`` for presenting to a server that checks client certificates (both for a
    peer: it serves its peers and dials them)."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert.encode())
    ca_key = serialization.load_pem_private_key(ca.key.encode(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [ExtendedKeyUsageOID.CLIENT_AUTH] * client
    names: list[x509.GeneralName] = []
    for name in dns_names:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + lifetime, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                key_cert_sign=False,
                crl_sign=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _key_pem(key))


def expiry(cert_pem: str) -> datetime.datetime:
    """When the (first) certificate in ``cert_pem`` expires."""
    return x509.load_pem_x509_certificate(cert_pem.encode()).not_valid_after_utc


def due(cert_pem: str, at: datetime.datetime | None = None) -> bool:
    """Whether a certificate is due for renewal: in the last third of its lifetime (as
    cert-manager renews by default), expired, or unreadable."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
    except ValueError:
        return True
    now = at or _now()
    # the lifetime asked for: from when it was issued (not_before is backdated)
    issued = cert.not_valid_before_utc + BACKDATE
    return now >= cert.not_valid_after_utc - (cert.not_valid_after_utc - issued) / 3
