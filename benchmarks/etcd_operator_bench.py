"""etcd operator benchmark: EtcdCluster create -> Available, scale-up, recovery, upgrade.

    python benchmarks/etcd_operator_bench.py [--runs 2]

Starts a fresh named local cluster of three nodes (cached control-plane assets), builds
the operator's image with ``olmtool image build`` (time and layer sizes printed) and
pushes it to the cluster's registry, installs the operator from the 0.5.0 CSV as OLM
would (one target namespace), then per run times, with real etcd processes:

* create -> Available (every member healthy, phase Running) for 1, 3 and 5 members
  (target: 3 members within 20 s), and for 3 members with TLS (mode auto);
* scale-up 3 -> 5;
* recovery of a member whose process was killed, and of one whose data was deleted
  (replaced by a new member);
* a rolling upgrade 3.4.23 -> 3.5.1 of 3 members;
* certificate renewal: with a 120 s lifetime, how long after the renewal point (two
  thirds of it) every member serves its renewed certificate;
* node loss: a member's node stopped (nodeLossTimeoutSeconds 20) until 3 members run
  again, the new one on a surviving node (40 s of it is Kubernetes' NotReady grace);
* disaster recovery: two of three members' data deleted (spec.recovery, afterSeconds 0)
  until 3 members run again from the newest backup.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
RELEASE = "0.5.0"  # the bundle the operator is installed from: the newest
NODES = 3
sys.path.insert(0, str(REPO))

from olmtool.actions.image_build import image_build  # noqa: E402
from olmtool.cluster import lifecycle, node_start, node_stop  # noqa: E402
from olmtool.cluster.assets import ensure_assets  # noqa: E402
from olmtool.kube import Kube  # noqa: E402
from tests.e2e import etcd_env  # noqa: E402
from tests.e2e.helpers import service_account_ready, wait_for  # noqa: E402

console = Console()


def _namespace(kube: Kube, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait_for(lambda: service_account_ready(kube, name, "default"), 60, "default SA")
    return name


def _timed_create(
    kube: Kube, ns: str, replicas: int, version: str = "3.5.1", **spec: object
) -> tuple[str, float]:
    name = f"b{uuid.uuid4().hex[:5]}"
    started = time.monotonic()
    etcd_env.create_cluster(kube, ns, name, replicas=replicas, version=version, **spec)
    etcd_env.wait_running(kube, ns, name, replicas, version, timeout=180)
    return name, time.monotonic() - started


def _delete(kube: Kube, ns: str, name: str) -> None:
    """A measured cluster goes, so its members do not load the next measurement."""
    kube.delete(f"{etcd_env.CLUSTERS}/namespaces/{ns}/etcdclusters/{name}")


def _served_serials(kube: Kube, ns: str, name: str) -> dict[str, int]:
    members = etcd_env.member_endpoints(kube, ns, name)
    return {
        m: etcd_env.served_certificate(
            etcd_env.tls_endpoint(kube, ns, name, f"{m}@{address}")
        ).serial_number
        for m, address in members.items()
    }


def _renewal(kube: Kube, ns: str) -> float:
    """Seconds from the renewal point (2/3 of a 120 s lifetime) until every member serves
    a renewed certificate."""
    lifetime = 120
    tls = {"mode": "auto", "certificateLifetimeSeconds": lifetime}
    created = time.monotonic()
    name, _ = _timed_create(kube, ns, 3, tls=tls)
    first = _served_serials(kube, ns, name)

    def renewed() -> bool:
        now = _served_serials(kube, ns, name)
        return all(now[m] != first[m] for m in first)

    wait_for(renewed, lifetime * 2, "renewed certificates", interval=1)
    seconds = time.monotonic() - created - lifetime * 2 / 3
    _delete(kube, ns, name)
    return seconds


def _other_node(kube: Kube, ns: str, name: str, operator_ns: str) -> tuple[str, str]:
    """A member on a node that is neither the first (it cannot be stopped) nor the
    operator's, and that node."""
    status = etcd_env.get_cluster(kube, ns, name)["status"]
    operator_nodes = {
        p["spec"].get("nodeName")
        for p in kube.get(f"/api/v1/namespaces/{operator_ns}/pods")["items"]
    }
    keep = {"olmtool-node", *operator_nodes}
    return next((m["name"], m["node"]) for m in status["members"] if m.get("node") not in keep)


def _node_loss(
    kube: Kube, ns: str, cluster: lifecycle.Cluster, root: Path, operator_ns: str
) -> float:
    name, _ = _timed_create(kube, ns, 3, nodeLossTimeoutSeconds=20)
    victim, node = _other_node(kube, ns, name, operator_ns)
    started = time.monotonic()
    node_stop(node, name=cluster.name, root=root)
    try:

        def replaced() -> bool:
            members = etcd_env.get_cluster(kube, ns, name)["status"].get("members") or []
            names = {m["name"] for m in members}
            return victim not in names and etcd_env.running(kube, ns, name, 3)

        wait_for(replaced, 300, "a member replaced on a surviving node", interval=0.5)
        return time.monotonic() - started
    finally:
        node_start(node, name=cluster.name, root=root)
        _delete(kube, ns, name)


def _disaster_recovery(kube: Kube, ns: str) -> float:
    recovery = {"fromLatestBackup": True, "afterSeconds": 0}
    name, _ = _timed_create(kube, ns, 3, backupSchedule="0 3 * * *", recovery=recovery)
    path = f"{etcd_env.CLUSTERS}/namespaces/{ns}/etcdclusters/{name}"
    kube.patch(path, {"metadata": {"annotations": {"etcd.olmtool.dev/backup-request": "b"}}})
    wait_for(
        lambda: (
            (etcd_env.get_cluster(kube, ns, name)["status"].get("lastBackup") or {}).get(
                "succeeded"
            )
            is True
        ),
        120,
        "a backup",
    )
    started = time.monotonic()
    for victim in (f"{name}-1", f"{name}-2"):
        kube.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
        kube.delete(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{victim}-data")
    wait_for(
        lambda: "lastRecovery" in etcd_env.get_cluster(kube, ns, name)["status"],
        120,
        "a rebuild",
    )
    etcd_env.wait_running(kube, ns, name, 3, timeout=240)
    seconds = time.monotonic() - started
    _delete(kube, ns, name)
    return seconds


def run_once(
    kube: Kube, ns: str, cluster: lifecycle.Cluster, root: Path, operator_ns: str
) -> dict[str, float]:
    result: dict[str, float] = {}
    for replicas in (1, 3, 5):
        _, result[f"create {replicas}"] = _timed_create(kube, ns, replicas)
    secure, result["create 3 TLS"] = _timed_create(kube, ns, 3, tls={"mode": "auto"})
    _delete(kube, ns, secure)
    name, _ = _timed_create(kube, ns, 3)
    etcd_env.patch_spec(kube, ns, name, replicas=5)
    result["scale 3->5"] = etcd_env.wait_running(kube, ns, name, 5, timeout=180)
    pid = etcd_env.member_pid(ns, name, f"{name}-1")
    assert pid is not None
    started = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not etcd_env.running(kube, ns, name, 5), 30, "member down", interval=0.05)
    etcd_env.wait_running(kube, ns, name, 5, timeout=180)
    result["killed member back"] = time.monotonic() - started
    started = time.monotonic()
    kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}-2")
    kube.delete(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}-2-data")
    wait_for(lambda: not etcd_env.running(kube, ns, name, 5), 30, "member lost", interval=0.05)
    etcd_env.wait_running(kube, ns, name, 5, timeout=180)
    result["lost member replaced"] = time.monotonic() - started
    old, _ = _timed_create(kube, ns, 3, version="3.4.23")
    etcd_env.patch_spec(kube, ns, old, version="3.5.1")
    started = time.monotonic()
    wait_for(lambda: not etcd_env.running(kube, ns, old, 3, "3.4.23"), 30, "upgrade started")
    etcd_env.wait_running(kube, ns, old, 3, "3.5.1", timeout=180)
    result["upgrade 3.4->3.5"] = time.monotonic() - started
    result["TLS renewal"] = _renewal(kube, ns)
    result["node loss"] = _node_loss(kube, ns, cluster, root, operator_ns)
    result["disaster recovery"] = _disaster_recovery(kube, ns)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    assets = ensure_assets()
    with tempfile.TemporaryDirectory(prefix="olmtool-etcd-bench-") as workdir:
        cluster = lifecycle.up(
            "etcd-bench", root=Path(workdir), assets=assets, registry_port=0, nodes=NODES
        )
        try:
            built = image_build(
                config=REPO / "olmtool.yaml", bundle_tags=True, push=True, registry=cluster.registry
            )
            layers = ", ".join(f"{layer.name} {layer.size / 1e6:.1f} MB" for layer in built.layers)
            console.print(
                f"image build + push of {len(built.tags)} tags: {built.seconds:.1f} s ({layers})"
            )
            kube = Kube(cluster.kubeconfig)
            csv, manifests = etcd_env.bundle_manifests(RELEASE)
            etcd_env.install_crds(kube, manifests)
            operator_ns, watched = _namespace(kube, "etcd-op"), _namespace(kube, "bench")
            installed = etcd_env.install_from_csv(kube, csv, operator_ns, [watched])
            started = time.monotonic()
            wait_for(lambda: etcd_env.operator_ready(kube, installed), 120, "operator Ready")
            console.print(f"operator pod Ready in {time.monotonic() - started:.1f} s")
            results = []
            for run in range(1, args.runs + 1):
                result = run_once(kube, watched, cluster, Path(workdir), operator_ns)
                console.print(
                    f"run {run}: " + ", ".join(f"{k} {v:.1f} s" for k, v in result.items())
                )
                results.append(result)
        finally:
            lifecycle.down("etcd-bench", root=Path(workdir), delete=True)
    table = Table(title=f"etcd operator ({args.runs} runs, median seconds)")
    for key in results[0]:
        table.add_column(key, justify="right")
    table.add_row(*(f"{statistics.median(r[k] for r in results):.1f}" for k in results[0]))
    console.print(table)
    three = statistics.median(r["create 3"] for r in results)
    console.print(
        f"3 members Available in {three:.1f} s (target 20 s): {'met' if three <= 20 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
