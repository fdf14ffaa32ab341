"""The etcd operator's upgrade probe for ``olmtool test upgrade``: keys written into each
example cluster's etcd before the first hop must read back unchanged after every hop.

Runs in the tester's process (not in the operator), reaching each cluster through its
client Service's ClusterIP.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aetcd

KEYS = {f"olmtool-probe/{i:03d}": f"value-{i}" for i in range(50)}


def _endpoint(kube: Any, namespace: str, cluster: dict[str, Any]) -> tuple[str, int]:
    name = cluster["metadata"]["name"]
    service = kube.get(f"/api/v1/namespaces/{namespace}/services/{name}-client")
    return service["spec"]["clusterIP"], 2379


async def _put(host: str, port: int) -> None:
    async with aetcd.Client(host=host, port=port, timeout=5) as client:
        for key, value in KEYS.items():
            await client.put(key.encode(), value.encode())


async def _get(host: str, port: int) -> dict[str, str]:
    async with aetcd.Client(host=host, port=port, timeout=5) as client:
        found = await client.get_prefix(b"olmtool-probe/")
        return {kv.key.decode(): kv.value.decode() for kv in found}


class EtcdProbe:
    def write(self, kube: Any, namespace: str, resources: list[dict[str, Any]]) -> None:
        for cluster in (r for r in resources if r.get("kind") == "EtcdCluster"):
            asyncio.run(_put(*_endpoint(kube, namespace, cluster)))

    def check(self, kube: Any, namespace: str, resources: list[dict[str, Any]]) -> None:
        for cluster in (r for r in resources if r.get("kind") == "EtcdCluster"):
            found = asyncio.run(_get(*_endpoint(kube, namespace, cluster)))
            missing = sorted(set(KEYS) - set(found))
            changed = sorted(k for k in KEYS if k in found and found[k] != KEYS[k])
            if missing or changed:
                raise AssertionError(
                    f"{cluster['metadata']['name']}: {len(missing)} probe keys missing, {len(changed)} changed"
                )
