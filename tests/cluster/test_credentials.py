"""Control-plane credentials: the serving certificate names the cluster's Service IP."""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster import pki
from olmtool.cluster.controlplane import _credentials


def test_a_serving_cert_without_the_service_ip_is_issued_again(tmp_path: Path) -> None:
    ca, serving, _, token = _credentials(tmp_path, ("127.0.0.1", "10.0.0.1"))
    assert pki.certificate_ips(serving.cert) == {"127.0.0.1", "10.0.0.1"}
    ca_pem, serving_pem = ca.cert.read_bytes(), serving.cert.read_bytes()
    # the same network again: everything is reused
    _, same, _, same_token = _credentials(tmp_path, ("127.0.0.1", "10.0.0.1"))
    assert same.cert.read_bytes() == serving_pem and same_token == token
    # another network: a new serving cert from the same CA, the same token
    _, moved, _, moved_token = _credentials(tmp_path, ("127.0.0.1", "10.96.3.1"))
    assert pki.certificate_ips(moved.cert) == {"127.0.0.1", "10.96.3.1"}
    assert ca.cert.read_bytes() == ca_pem and moved_token == token
