"""Keys and certificates for a local control plane: a CA, serving and client certs, SA
signing keys."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    write_private(path, data)


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only (0600 from the start: no
    moment where another user could open it), replacing what was there."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, 0o600)  # whatever the umask
    os.replace(tmp, path)


def private_dir(path: Path) -> Path:
    """``path`` created if missing, and 0700 (only its owner can list or enter it)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def create_ca(directory: Path, name: str = "olmtool-ca") -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(key, hashes.SHA256())
    )
    return _write_pair(directory, name, cert, key)


def _write_pair(directory: Path, name: str, cert: x509.Certificate, key: Any) -> KeyPair:
    """``<name>.crt`` and ``<name>.key`` (0600) in ``directory``."""
    pair = KeyPair(directory / f"{name}.crt", directory / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pair.key, key)
    return pair


def _issue(
    directory: Path,
    ca: KeyPair,
    name: str,
    subject: x509.Name,
    extensions: list[x509.ExtensionType],
) -> KeyPair:
    """A certificate for a new key, signed by ``ca``, written as ``<name>.crt/.key``."""
    ca_key = serialization.load_pem_private_key(ca.key.read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    return _write_pair(directory, name, cert, key)


def create_serving_cert(
    directory: Path,
    ca: KeyPair,
    name: str,
    *,
    hosts: tuple[str, ...],
    ips: tuple[str, ...],
    client: bool = False,
) -> KeyPair:
    """A TLS server certificate for ``hosts`` and ``ips``, signed by ``ca``; ``client``
    makes it a client certificate too (etcd's peer certificate is both)."""
    names: list[x509.GeneralName] = [x509.DNSName(h) for h in hosts]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    uses = [x509.OID_SERVER_AUTH, *([x509.OID_CLIENT_AUTH] if client else [])]
    usage = x509.ExtendedKeyUsage(uses)
    return _issue(directory, ca, name, _name(name), [x509.SubjectAlternativeName(names), usage])


def certificate_ips(cert: Path) -> set[str]:
    """The IP addresses a certificate's subjectAltName holds (empty if it has none)."""
    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    try:
        names = loaded.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}


def create_client_cert(
    directory: Path,
    ca: KeyPair,
    name: str,
    *,
    organization: str | None = None,
    file_stem: str | None = None,
) -> KeyPair:
    """A TLS client certificate for the user ``name`` (group ``organization``), signed
    by ``ca``, written as ``<file_stem or name>.crt/.key``: what the apiserver presents
    to kubelets, and a kubelet's own identity (``system:node:<node>``)."""
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    usage = x509.ExtendedKeyUsage([x509.OID_CLIENT_AUTH])
    return _issue(directory, ca, file_stem or name, x509.Name(attributes), [usage])


def issued_by(pair: KeyPair, ca: KeyPair) -> bool:
    """Whether ``pair``'s certificate exists, was signed by ``ca`` and is still valid."""
    try:
        cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
        ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
        cert.verify_directly_issued_by(ca_cert)
    except (OSError, ValueError, TypeError, InvalidSignature):
        return False
    return pair.key.is_file() and cert.not_valid_after_utc > datetime.datetime.now(datetime.UTC)


def create_signing_key(directory: Path, name: str = "service-account") -> KeyPair:
    """A key pair for signing service-account tokens (``cert`` holds the public key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    pair = KeyPair(directory / f"{name}.pub", directory / f"{name}.key")
    pair.cert.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    _write_key(pair.key, key)
    return pair
