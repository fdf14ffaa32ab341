"""The etcd operator on the local cluster, installed as OLM would install its CSV.

``install_from_csv`` creates what OLM v0 creates for an OperatorGroup targeting some
namespaces: the CSV's service account, a Role + RoleBinding per target namespace for
``permissions``, a ClusterRole + binding for ``clusterPermissions``, and the Deployment
with ``olm.targetNamespaces`` on its pod template (which the CSV's ``WATCH_NAMESPACE``
reads). ``Writer`` writes keys through the client Service and records which writes etcd
acknowledged; ``member_pid`` finds a member's etcd process to kill it.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmtool import yamlwrite
from olmtool.kube import Kube
from tests.e2e.helpers import JSON, established, wait_for

REPO = Path(__file__).resolve().parents[2]
GROUP = "etcd.olmtool.dev"
CLUSTERS = f"/apis/{GROUP}/v1beta1"


def bundle_manifests(version: str = "0.3.0") -> tuple[JSON, list[JSON]]:
    """The bundle's CSV and its other manifests."""
    csv, others = None, []
    for path in sorted((REPO / "bundle" / "etcd-operator" / version / "manifests").glob("*.yaml")):
        for document in yamlwrite.load_all(path):
            if document.get("kind") == "ClusterServiceVersion":
                csv = document
            else:
                others.append(document)
    assert csv is not None
    return csv, others


def install_crds(kube: Kube, manifests: list[JSON]) -> None:
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in (m for m in manifests if m.get("kind") == "CustomResourceDefinition"):
        url = f"{path}/{crd['metadata']['name']}"
        found = kube.get_or_none(url)
        if found is None:
            kube.create(path, crd)
        else:  # an older release's CRD (another test installed it): update it, as OLM does
            body = {
                **crd,
                "metadata": {
                    **crd["metadata"],
                    "resourceVersion": found["metadata"]["resourceVersion"],
                },
            }
            kube.put(url, body)
        wait_for(lambda url=url: established(kube.get(url)), 30, "CRD established")


@dataclass
class Installed:
    namespace: str
    targets: list[str]
    service_account: str
    deployment: str


def install_from_csv(
    kube: Kube, csv: JSON, namespace: str, targets: list[str], env: dict[str, str] | None = None
) -> Installed:
    spec = csv["spec"]["install"]["spec"]
    deployment = spec["deployments"][0]
    template = deployment["spec"]["template"]
    account = template["spec"].get("serviceAccountName") or "default"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    name = f"{csv['metadata']['name']}-{namespace}"
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": account}})
    subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    for target in targets:
        for rules in spec.get("permissions") or []:
            kube.create(
                f"{rbac}/namespaces/{target}/roles",
                {"metadata": {"name": name}, "rules": rules["rules"]},
            )
            kube.create(
                f"{rbac}/namespaces/{target}/rolebindings",
                {
                    "metadata": {"name": name},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Role",
                        "name": name,
                    },
                    "subjects": [subject],
                },
            )
    for rules in spec.get("clusterPermissions") or []:
        kube.create(f"{rbac}/clusterroles", {"metadata": {"name": name}, "rules": rules["rules"]})
        kube.create(
            f"{rbac}/clusterrolebindings",
            {
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [subject],
            },
        )
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": deployment["name"], "namespace": namespace},
        "spec": deployment["spec"],
    }
    annotations = body["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})
    annotations.update(
        {
            "olm.targetNamespaces": ",".join(targets),
            "olm.operatorNamespace": namespace,
            "olm.operatorGroup": "og",
        }
    )
    container = body["spec"]["template"]["spec"]["containers"][0]
    for key, value in (env or {}).items():
        container.setdefault("env", []).append({"name": key, "value": value})
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", body)
    return Installed(namespace, targets, account, deployment["name"])


def operator_ready(kube: Kube, installed: Installed) -> bool:
    pods = kube.get(f"/api/v1/namespaces/{installed.namespace}/pods").get("items", [])
    return any(
        not p["metadata"].get("deletionTimestamp")
        and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (p.get("status") or {}).get("conditions", [])
        )
        for p in pods
    )


def describe_operator(kube: Kube, installed: Installed) -> str:
    """The operator Pods' status and the namespace's events, for a failure message."""
    lines = []
    for pod in kube.get(f"/api/v1/namespaces/{installed.namespace}/pods").get("items", []):
        name = pod["metadata"]["name"]
        lines.append(f"{name}: {(pod.get('status') or {}).get('containerStatuses')}")
    events = kube.get(f"/api/v1/namespaces/{installed.namespace}/events").get("items", [])
    lines += [f"{e.get('reason')}: {e.get('message')}" for e in events[-20:]]
    return "\n".join(lines)


# -- EtcdClusters ------------------------------------------------------------------------


def create_cluster(kube: Kube, namespace: str, name: str, **spec: Any) -> JSON:
    body = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "EtcdCluster",
        "metadata": {"name": name},
        "spec": {"storageSize": "64Mi", **spec},
    }
    return kube.create(f"{CLUSTERS}/namespaces/{namespace}/etcdclusters", body)


def get_cluster(kube: Kube, namespace: str, name: str) -> JSON:
    return kube.get(f"{CLUSTERS}/namespaces/{namespace}/etcdclusters/{name}")


def patch_spec(kube: Kube, namespace: str, name: str, **spec: Any) -> None:
    kube.patch(f"{CLUSTERS}/namespaces/{namespace}/etcdclusters/{name}", {"spec": spec})


def condition(cluster: JSON, kind: str) -> JSON:
    return next(
        (c for c in (cluster.get("status") or {}).get("conditions", []) if c["type"] == kind), {}
    )


def running(
    kube: Kube, namespace: str, name: str, replicas: int, version: str | None = None
) -> bool:
    status = get_cluster(kube, namespace, name).get("status") or {}
    members = status.get("members") or []
    return (
        status.get("phase") == "Running"
        and status.get("readyMembers") == replicas
        and len(members) == replicas
        and all(m.get("healthy") and not m.get("learner") for m in members)
        and (version is None or status.get("currentVersion") == version)
    )


def wait_running(
    kube: Kube,
    namespace: str,
    name: str,
    replicas: int,
    version: str | None = None,
    timeout: float = 90,
) -> float:
    started = time.monotonic()
    wait_for(
        lambda: running(kube, namespace, name, replicas, version),
        timeout,
        f"{name}: {replicas} members Running",
        interval=0.25,
    )
    return time.monotonic() - started


def client_endpoint(kube: Kube, namespace: str, name: str) -> str:
    service = kube.get(f"/api/v1/namespaces/{namespace}/services/{name}-client")
    return f"{service['spec']['clusterIP']}:2379"


def member_pid(namespace: str, cluster: str, member: str) -> int | None:
    """The host pid of a member's etcd process (its container's, seen from the host)."""
    marker = f"--advertise-client-urls=http://{member}.{cluster}.{namespace}.svc:2379"
    out = subprocess.run(["pgrep", "-f", "--", re.escape(marker)], capture_output=True, text=True)
    pids = [int(p) for p in out.stdout.split()]
    return pids[0] if pids else None


def operator_pid(watch_namespace: str) -> int | None:
    out = subprocess.run(["pgrep", "-f", "--", "-m etcd_operator"], capture_output=True, text=True)
    for pid in (int(p) for p in out.stdout.split()):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"WATCH_NAMESPACE={watch_namespace}".encode() in environ:
            return pid
    return None


# -- etcd clients ------------------------------------------------------------------------


def _client(endpoint: str):  # type: ignore[no-untyped-def]
    import aetcd

    host, _, port = endpoint.rpartition(":")
    return aetcd.Client(host=host, port=int(port), timeout=3)


def put_keys(endpoint: str, keys: dict[str, str]) -> None:
    async def run() -> None:
        async with _client(endpoint) as client:
            for key, value in keys.items():
                await client.put(key.encode(), value.encode())

    asyncio.run(run())


def get_prefix(endpoint: str, prefix: str) -> dict[str, str]:
    async def run() -> dict[str, str]:
        async with _client(endpoint) as client:
            result = await client.get_prefix(prefix.encode())
            return {kv.key.decode(): kv.value.decode() for kv in result}

    return asyncio.run(run())


def get_prefix_retrying(endpoint: str, prefix: str, timeout: float = 30.0) -> dict[str, str]:
    """:func:`get_prefix`, retried while the connection is refused or the cluster is
    unavailable, as etcd's own clients retry: just after a member restarts, the client
    Service may still route to it before it listens again."""
    import aetcd.exceptions

    deadline = time.monotonic() + timeout
    while True:
        try:
            return get_prefix(endpoint, prefix)
        except (aetcd.exceptions.ConnectionFailedError, aetcd.exceptions.ConnectionTimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class Writer(threading.Thread):
    """Puts ``prefix/<n>`` keys one after the other until stopped; ``acked`` holds the keys
    etcd acknowledged, ``failed`` counts attempts that got an error (retried later)."""

    def __init__(self, endpoint: str, prefix: str) -> None:
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.prefix = prefix
        self.acked: list[str] = []
        self.failed = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        asyncio.run(self._write())

    async def _write(self) -> None:
        n = 0
        client = _client(self.endpoint)
        while not self._stop_event.is_set():
            key = f"{self.prefix}/{n:07d}"
            try:
                await asyncio.wait_for(client.put(key.encode(), b"x"), 5)
            except Exception:
                self.failed += 1
                await client.close()
                client = _client(self.endpoint)
                await asyncio.sleep(0.1)
                continue
            self.acked.append(key)
            n += 1
            await asyncio.sleep(0.01)
        await client.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=15)


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def member_endpoints(kube: Kube, namespace: str, name: str) -> dict[str, str]:
    """Each running member's own client endpoint (Pod IP), by member name."""
    pods = kube.get(
        f"/api/v1/namespaces/{namespace}/pods",
        labelSelector=f"app.kubernetes.io/instance={name},app.kubernetes.io/component=member",
    )["items"]
    return {
        p["metadata"]["name"]: f"{p['status']['podIP']}:2379"
        for p in pods
        if (p.get("status") or {}).get("podIP") and not p["metadata"].get("deletionTimestamp")
    }


def db_size(endpoint: str) -> int:
    """The member's database file size in bytes (its Status answer)."""

    from aetcd import rpc

    async def run() -> int:
        async with _client(endpoint) as client:
            await client.connect()
            reply = await client.maintenancestub.Status(rpc.StatusRequest(), timeout=3)
            return int(reply.dbSize)

    return asyncio.run(run())


def fill_history(endpoint: str, key: str, mib: int) -> int:
    """Overwrite ``key`` with 1 MiB values ``mib`` times (history, not live data) until etcd
    refuses; returns how many puts it acknowledged."""

    async def run() -> int:
        value = os.urandom(512 * 1024).hex().encode()
        async with _client(endpoint) as client:
            for n in range(mib):
                try:
                    await client.put(key.encode(), value)
                except Exception:
                    return n
        return mib

    return asyncio.run(run())


def compact(endpoint: str) -> None:
    """Compact the key history to the current revision, as a user (or auto-compaction) would."""

    from aetcd import rpc

    async def run() -> None:
        async with _client(endpoint) as client:
            await client.connect()
            reply = await client.maintenancestub.Status(rpc.StatusRequest(), timeout=3)
            await client.compact(reply.header.revision, physical=True)

    asyncio.run(run())


def events(kube: Kube, namespace: str, name: str) -> list[JSON]:
    """The events of an EtcdCluster, oldest first."""
    found = kube.get(
        f"/api/v1/namespaces/{namespace}/events",
        fieldSelector=f"involvedObject.name={name},involvedObject.kind=EtcdCluster",
    )["items"]
    return sorted(found, key=lambda e: e.get("lastTimestamp") or e["metadata"]["creationTimestamp"])


# -- TLS (spec.tls) ------------------------------------------------------------------------


def _operator_package() -> None:
    """etcd_operator lives in operator/ (see tests/etcdop/conftest.py)."""
    import sys

    if str(REPO / "operator") not in sys.path:
        sys.path.insert(0, str(REPO / "operator"))


def tls_endpoint(kube: Kube, namespace: str, name: str, address: str | None = None) -> Any:
    """An ``etcd_operator.etcd.Endpoint`` over TLS with the cluster's client certificate
    (read now, so a renewed one is used): the client Service, or ``address`` (a member's
    ``ip:port``, verified as the member ``server_name`` when given as ``member@ip:port``)."""
    import base64

    _operator_package()
    from etcd_operator.etcd import Endpoint
    from etcd_operator.tls import Credentials

    status = get_cluster(kube, namespace, name).get("status") or {}
    secret_name = (status.get("tls") or {}).get("clientSecret") or f"{name}-client-tls"
    secret = kube.get(f"/api/v1/namespaces/{namespace}/secrets/{secret_name}")
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    credentials = Credentials(data["ca.crt"], data["tls.crt"], data["tls.key"])
    if address and "@" in address:
        member, address = address.split("@", 1)
        server_name = f"{member}.{name}.{namespace}.svc"
    else:
        server_name = f"{name}-client.{namespace}.svc"
        address = address or client_endpoint(kube, namespace, name)
    return Endpoint(f"https://{address}", server_name, credentials)


def tls_put(endpoint: Any, keys: dict[str, str]) -> None:
    _operator_package()
    from aetcd import rpc
    from etcd_operator import etcd

    async def run() -> None:
        async with etcd.connect(endpoint, 5) as client:
            for key, value in keys.items():
                await client.kvstub.Put(
                    rpc.PutRequest(key=key.encode(), value=value.encode()), timeout=5
                )

    asyncio.run(run())


def tls_get_prefix(endpoint: Any, prefix: str) -> dict[str, str]:
    _operator_package()
    from aetcd import rpc
    from etcd_operator import etcd

    raw = prefix.encode()
    end = raw[:-1] + bytes([raw[-1] + 1])

    async def run() -> dict[str, str]:
        async with etcd.connect(endpoint, 5) as client:
            reply = await client.kvstub.Range(rpc.RangeRequest(key=raw, range_end=end), timeout=5)
        return {kv.key.decode(): kv.value.decode() for kv in reply.kvs}

    return asyncio.run(run())


def served_certificate(endpoint: Any) -> Any:
    """The certificate a member serves now (a new handshake), as a cryptography object."""
    import socket
    import ssl
    import tempfile

    from cryptography import x509

    host, _, port = endpoint.target.rpartition(":")
    context = ssl.create_default_context(cadata=endpoint.credentials.ca.decode())
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder, "c.pem"), Path(folder, "k.pem")
        cert.write_bytes(endpoint.credentials.cert)
        key.write_bytes(endpoint.credentials.key)
        context.load_cert_chain(cert, key)
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=endpoint.server_name) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der)


def plain_refused(address: str) -> bool:
    """Whether a plain-HTTP client gets nothing from ``ip:port`` (a TLS-only member)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{address}/version", timeout=5) as answer:
            answer.read()
    except (urllib.error.URLError, ConnectionError, OSError):
        return True
    return False


class TlsWriter(threading.Thread):
    """:class:`Writer` over TLS: ``endpoint()`` makes a fresh endpoint for each connection
    (so a renewed client certificate is picked up when the old one has expired)."""

    def __init__(self, endpoint: Any, prefix: str) -> None:
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.prefix = prefix
        self.acked: list[str] = []
        self.failed = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        asyncio.run(self._write())

    async def _write(self) -> None:
        _operator_package()
        from aetcd import rpc
        from etcd_operator import etcd

        n = 0
        while not self._stop_event.is_set():
            try:
                async with etcd.connect(self.endpoint(), 5) as client:
                    while not self._stop_event.is_set():
                        key = f"{self.prefix}/{n:07d}"
                        request = rpc.PutRequest(key=key.encode(), value=b"x")
                        await client.kvstub.Put(request, timeout=5)
                        self.acked.append(key)
                        n += 1
                        await asyncio.sleep(0.01)
            except Exception:
                self.failed += 1
                await asyncio.sleep(0.2)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=15)
