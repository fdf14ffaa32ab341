"""The etcd operator's upgrade probe for ``olmtool test upgrade``: keys written into each
example cluster's etcd before the first hop must read back unchanged after every hop.

Runs in the tester's process (not in the operator), reaching each cluster through its
client Service's ClusterIP; over TLS with the cluster's client certificate when its
status says it serves TLS (``status.tls.clientSecret``).
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from aetcd import rpc

from etcd_operator import etcd
from etcd_operator.tls import Credentials

KEYS = {f"olmtool-probe/{i:03d}": f"value-{i}" for i in range(50)}
PREFIX = b"olmtool-probe/"
TIMEOUT = 5.0


def _endpoint(kube: Any, namespace: str, cluster: dict[str, Any]) -> etcd.Endpoint:
    name = cluster["metadata"]["name"]
    service = kube.get(f"/api/v1/namespaces/{namespace}/services/{name}-client")
    address = f"{service['spec']['clusterIP']}:2379"
    # the version the example was written in: the oldest releases serve only v1alpha1
    group_version = cluster["apiVersion"]
    current = kube.get(f"/apis/{group_version}/namespaces/{namespace}/etcdclusters/{name}")
    secret_name = ((current.get("status") or {}).get("tls") or {}).get("clientSecret")
    if not secret_name:
        return etcd.Endpoint(f"http://{address}")
    secret = kube.get(f"/api/v1/namespaces/{namespace}/secrets/{secret_name}")
    data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    credentials = Credentials(data.get("ca.crt", b""), data["tls.crt"], data["tls.key"])
    return etcd.Endpoint(f"https://{address}", f"{name}-client.{namespace}.svc", credentials)


async def _put(endpoint: etcd.Endpoint) -> None:
    async with etcd.connect(endpoint, TIMEOUT) as client:
        for key, value in KEYS.items():
            await client.kvstub.Put(
                rpc.PutRequest(key=key.encode(), value=value.encode()), timeout=TIMEOUT
            )


async def _get(endpoint: etcd.Endpoint) -> dict[str, str]:
    end = PREFIX[:-1] + bytes([PREFIX[-1] + 1])
    async with etcd.connect(endpoint, TIMEOUT) as client:
        reply = await client.kvstub.Range(
            rpc.RangeRequest(key=PREFIX, range_end=end), timeout=TIMEOUT
        )
    return {kv.key.decode(): kv.value.decode() for kv in reply.kvs}


class EtcdProbe:
    def write(self, kube: Any, namespace: str, resources: list[dict[str, Any]]) -> None:
        for cluster in (r for r in resources if r.get("kind") == "EtcdCluster"):
            asyncio.run(_put(_endpoint(kube, namespace, cluster)))

    def check(self, kube: Any, namespace: str, resources: list[dict[str, Any]]) -> None:
        for cluster in (r for r in resources if r.get("kind") == "EtcdCluster"):
            found = asyncio.run(_get(_endpoint(kube, namespace, cluster)))
            missing = sorted(set(KEYS) - set(found))
            changed = sorted(k for k in KEYS if k in found and found[k] != KEYS[k])
            if missing or changed:
                raise AssertionError(
                    f"{cluster['metadata']['name']}: {len(missing)} probe keys missing, "
                    f"{len(changed)} changed"
                )
