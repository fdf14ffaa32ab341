"""spec.tls: the certificates of mode auto, the member flags per stage, and the two-roll
turn-on that never leaves two members unable to reach each other."""

from __future__ import annotations

import asyncio
import base64
import datetime
from typing import Any

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from etcd_operator import certs, plan, plan_tls, resources, resources_backup, resources_tls, tls
from etcd_operator.refs import ClusterRef, MemberSpec

from tests.etcdop.test_plan import member, observed, pod, step
from tests.etcdop.test_reconcile import FakeKube, cluster, run

REF = ClusterRef(name="ex", namespace="ns", uid="0123456789abcdef")
MINUTE = datetime.timedelta(minutes=1)


def _cert(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def test_a_member_certificate_names_the_member_and_the_client_service() -> None:
    ca = certs.new_ca("ex CA", datetime.timedelta(days=1))
    values = tls.member_values(REF, ca, "ex-1", 5 * MINUTE)
    server, peer = _cert(values["server.crt"]), _cert(values["peer.crt"])
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "ex-1.ex.ns.svc" in names.get_values_for_type(x509.DNSName)
    assert "ex-client.ns.svc" in names.get_values_for_type(x509.DNSName)
    usages = peer.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    # signed by the CA
    server.verify_directly_issued_by(_cert(ca.cert))
    assert values["ca.crt"] == values["peer-ca.crt"] == ca.cert


def test_a_certificate_is_due_in_the_last_third_of_its_life() -> None:
    ca = certs.new_ca("ex CA", datetime.timedelta(days=1))
    leaf = certs.issue(ca, "x", 30 * MINUTE)
    issued = _cert(leaf.cert).not_valid_before_utc + certs.BACKDATE
    assert not certs.due(leaf.cert, issued + 10 * MINUTE)
    assert certs.due(leaf.cert, issued + 21 * MINUTE)
    assert certs.due("not a certificate")


def _secrets(kube: FakeKube) -> dict[str, dict[str, str]]:
    return {
        name: {k: base64.b64decode(v).decode() for k, v in body["data"].items()}
        for (kind, name), body in kube.objects.items()
        if kind == "Secret"
    }


class PatchingKube(FakeKube):
    async def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        patch: Any,
        status: bool = False,
    ) -> Any:
        body = self.objects[(kind, name)]
        body.update(patch)
        return body


def test_a_new_tls_cluster_gets_a_ca_a_client_and_member_certificates_and_serves_tls() -> None:
    kube = PatchingKube()
    outcome = run(kube, cluster({"tls": {"mode": "auto"}}))
    assert isinstance(outcome.step, plan.Bootstrap)
    secrets = _secrets(kube)
    assert {"ex-ca", "ex-client-tls", "ex-0-tls"} <= set(secrets)
    seed = kube.objects[("Pod", "ex-0")]
    args = seed["spec"]["containers"][0]["args"]
    assert "--listen-client-urls=https://$(POD_IP):2379" in args
    assert "--initial-advertise-peer-urls=https://ex-0.ex.ns.svc:2380" in args
    assert "--client-cert-auth=true" in args and "--peer-client-cert-auth=true" in args
    assert "--listen-metrics-urls=http://$(POD_IP):2381" in args  # probes stay plain
    assert seed["metadata"]["annotations"][resources.TLS_ANNOTATION] == "on"
    assert outcome.status["tls"]["caSecret"] == "ex-ca"
    assert outcome.status["tls"]["clientSecret"] == "ex-client-tls"
    # the next pass finds the member's certificate and says when it expires
    again = run(kube, cluster({"tls": {"mode": "auto"}}, outcome.status))
    assert again.status["tls"]["expiry"] > "2026"
    # backups go over https with the client certificate
    cron = resources_backup.backup_pod_template(
        ClusterRef(name="ex", namespace="ns", uid="u", client_tls="ex-client-tls"), "s.db"
    )
    backup_args = cron["spec"]["containers"][0]["args"]
    assert "--endpoints=https://ex-client.ns.svc:2379" in backup_args
    assert "--cert=/etc/etcd/client-tls/tls.crt" in backup_args


def test_a_due_member_certificate_is_renewed_in_place() -> None:
    kube = PatchingKube()
    spec = {"tls": {"mode": "auto", "certificateLifetimeSeconds": 120}}
    asyncio.run(tls.ensure_member(kube, REF, spec, "ex-0"))  # type: ignore[arg-type]
    before = _secrets(kube)["ex-0-tls"]["server.crt"]
    asyncio.run(tls.ensure_member(kube, REF, spec, "ex-0"))  # type: ignore[arg-type]
    assert _secrets(kube)["ex-0-tls"]["server.crt"] == before  # not due yet
    secret = kube.objects[("Secret", "ex-0-tls")]
    ca = tls.certs.KeyPair(_secrets(kube)["ex-ca"]["tls.crt"], _secrets(kube)["ex-ca"]["tls.key"])
    old = certs.issue(ca, "ex-0", datetime.timedelta(seconds=-60))  # already expired
    secret["data"]["server.crt"] = base64.b64encode(old.cert.encode()).decode()
    asyncio.run(tls.ensure_member(kube, REF, spec, "ex-0"))  # type: ignore[arg-type]
    renewed = _secrets(kube)["ex-0-tls"]["server.crt"]
    assert renewed != old.cert and not certs.due(renewed)


def test_member_flags_per_tls_stage() -> None:
    assert resources_tls.tls_args("") == []
    ready = resources_tls.tls_args("ready")
    assert "--peer-cert-file=/etc/etcd/tls/peer.crt" in ready
    assert not any("client-cert-auth" in a for a in ready)
    plain = resources.member_pod(
        REF, MemberSpec("ex-1", "3.5.1", ["ex-0", "ex-1"], "existing", tls="ready")
    )
    assert "--listen-peer-urls=http://$(POD_IP):2380" in plain["spec"]["containers"][0]["args"]
    refs = {"server": "s", "peer": "p", "client": "c"}
    on = resources.member_pod(
        REF,
        MemberSpec(
            "ex-1", "3.5.1", ["ex-0", "ex-1"], "existing", tls="on", tls_refs=refs,
            peer_urls={"ex-0": "http://ex-0.ex.ns.svc:2380"},
        ),
    )  # fmt: skip
    args = on["spec"]["containers"][0]["args"]
    # the other member keeps the peer URL etcd has for it
    assert (
        "--initial-cluster=ex-0=http://ex-0.ex.ns.svc:2380,ex-1=https://ex-1.ex.ns.svc:2380"
    ) in args
    sources = on["spec"]["volumes"][-1]["projected"]["sources"]
    assert [s["secret"]["name"] for s in sources] == ["s", "p"]


# -- turning TLS on for a running cluster --------------------------------------------------


def test_turning_tls_on_rolls_each_member_to_its_certificates_then_to_tls() -> None:
    members = [member(i) for i in range(3)]
    first = step(observed(members, [pod(i) for i in range(3)], leader=0, tls="on"))
    assert isinstance(first, plan.Roll) and first.member == "c-1" and not first.secure
    assert "step 1 of 2" in first.message
    # every member holds its certificates: now each moves to https, followers first
    pods = [pod(i, tls="ready") for i in range(3)]
    second = step(observed(members, pods, leader=0, tls="on"))
    assert isinstance(second, plan.Roll) and second.secure and second.member == "c-1"
    assert "step 2 of 2" in second.message
    # not while any member is still plain
    pods = [pod(0), pod(1, tls="ready"), pod(2, tls="ready")]
    got = step(observed(members, pods, leader=0, tls="on"))
    assert isinstance(got, plan.Roll) and got.member == "c-0" and not got.secure


def test_a_restarted_member_serves_what_its_peer_url_says() -> None:
    secure = plan.Member(id=101, name="c-1", peer_url="https://c-1.c.ns.svc:2380")
    obs = observed([member(0), secure], [pod(0), pod(1)], tls="on")
    assert plan_tls.start_stage(obs, "c-1") == "on"
    assert plan_tls.start_stage(obs, "c-0") == "ready"
    assert plan_tls.start_stage(obs, "c-7") == "on"  # a new member of a TLS cluster
    assert plan_tls.start_stage(observed([member(0)], [pod(0)]), "c-0") == ""


def test_no_new_member_while_tls_is_being_turned_on() -> None:
    obs = observed([member(0)], [pod(0, tls="ready")], replicas=3, tls="on")
    got = step(obs)
    assert isinstance(got, plan.Roll) and got.secure


def test_tls_removed_from_the_spec_stays_on_and_is_reported() -> None:
    kube = PatchingKube()
    old = {"tls": {"caSecret": "ex-ca", "clientSecret": "ex-client-tls", "mode": "auto"}}
    outcome = run(kube, cluster({}, old))
    assert "spec.tls cannot be removed once the members serve TLS: it stays on" in outcome.problems
    assert outcome.status["tls"]["mode"] == "auto"


class _SyncKube:
    """The synchronous client olmtool's upgrade test hands a probe."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def get(self, path: str) -> Any:
        return self.objects[path]


def test_the_upgrade_probe_speaks_tls_to_a_cluster_whose_status_says_so() -> None:
    from etcd_operator import probe

    service = {"spec": {"clusterIP": "10.96.0.7"}}
    plain = _SyncKube(
        {
            "/api/v1/namespaces/ns/services/ex-client": service,
            "/apis/etcd.olmtool.dev/v1alpha1/namespaces/ns/etcdclusters/ex": {"status": {}},
        }
    )
    # read in the version the example was written in: 0.1.0 serves only v1alpha1
    oldest = {"apiVersion": "etcd.olmtool.dev/v1alpha1", "metadata": {"name": "ex"}}
    assert probe._endpoint(plain, "ns", oldest).url == "http://10.96.0.7:2379"
    cluster_body = {"apiVersion": "etcd.olmtool.dev/v1beta1", "metadata": {"name": "ex"}}
    secret = {
        "data": {k: base64.b64encode(k.encode()).decode() for k in ("ca.crt", "tls.crt", "tls.key")}
    }
    secure = _SyncKube(
        {
            "/api/v1/namespaces/ns/services/ex-client": service,
            "/apis/etcd.olmtool.dev/v1beta1/namespaces/ns/etcdclusters/ex": {
                "status": {"tls": {"clientSecret": "ex-client-tls"}}
            },
            "/api/v1/namespaces/ns/secrets/ex-client-tls": secret,
        }
    )
    endpoint = probe._endpoint(secure, "ns", cluster_body)
    assert endpoint.url == "https://10.96.0.7:2379"
    assert endpoint.server_name == "ex-client.ns.svc"
    assert endpoint.credentials is not None and endpoint.credentials.cert == b"tls.crt"
