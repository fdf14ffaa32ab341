"""Control-plane credentials: the serving certificate names the cluster's Service IP;
etcd has a CA of its own; keys are 0600 in a 0700 folder."""

from __future__ import annotations

import stat
from pathlib import Path

from olmtool.cluster import pki
from olmtool.cluster.planecerts import (
    admin_credentials,
    etcd_credentials,
    kubelet_client_credentials,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_serving_cert_without_the_service_ip_is_issued_again(tmp_path: Path) -> None:
    ca, serving, _, token = admin_credentials(tmp_path, ("127.0.0.1", "10.0.0.1"))
    assert pki.certificate_ips(serving.cert) == {"127.0.0.1", "10.0.0.1"}
    ca_pem, serving_pem = ca.cert.read_bytes(), serving.cert.read_bytes()
    # the same network again: everything is reused
    _, same, _, same_token = admin_credentials(tmp_path, ("127.0.0.1", "10.0.0.1"))
    assert same.cert.read_bytes() == serving_pem and same_token == token
    # another network: a new serving cert from the same CA, the same token
    _, moved, _, moved_token = admin_credentials(tmp_path, ("127.0.0.1", "10.96.3.1"))
    assert pki.certificate_ips(moved.cert) == {"127.0.0.1", "10.96.3.1"}
    assert ca.cert.read_bytes() == ca_pem and moved_token == token


def test_etcd_trusts_only_its_own_ca(tmp_path: Path) -> None:
    ca, *_ = admin_credentials(tmp_path, ("127.0.0.1",))
    kubelet_client = kubelet_client_credentials(tmp_path, ca)
    etcd = etcd_credentials(tmp_path)
    assert etcd.ca.cert != ca.cert
    for pair in (etcd.server, etcd.peer, etcd.client):
        assert pki.issued_by(pair, etcd.ca) and not pki.issued_by(pair, ca)
    assert not pki.issued_by(kubelet_client, etcd.ca)  # cluster-CA certs do not open etcd
    assert pki.certificate_ips(etcd.server.cert) == {"127.0.0.1"}
    # reused as long as they are valid
    again = etcd_credentials(tmp_path)
    assert again.client.cert.read_bytes() == etcd.client.cert.read_bytes()


def test_keys_are_private_from_the_start(tmp_path: Path) -> None:
    admin_credentials(tmp_path, ("127.0.0.1",))
    etcd_credentials(tmp_path)
    folder = tmp_path / "pki"
    assert _mode(folder) == 0o700
    keys = sorted(folder.glob("*.key"))
    assert len(keys) >= 6
    assert {key.name: _mode(key) for key in keys} == {key.name: 0o600 for key in keys}
    assert _mode(tmp_path / "tokens.csv") == 0o600
    assert not list(folder.glob(".*.tmp"))  # written through a 0600 temporary file


def test_write_private_replaces_with_mode_0600(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    target.write_text("old")
    target.chmod(0o644)
    pki.write_private(target, b"new")
    assert target.read_bytes() == b"new" and _mode(target) == 0o600
