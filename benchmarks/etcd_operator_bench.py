"""etcd operator benchmark: EtcdCluster create -> Available, scale-up, recovery, upgrade.

    python benchmarks/etcd_operator_bench.py [--runs 2]

Starts a fresh named local cluster (cached control-plane assets), builds the operator's
image with ``olmtool image build`` (time and layer sizes printed) and pushes it to the
cluster's registry, installs the operator from the 0.4.0 CSV as OLM would (one target
namespace), then per run times, with real etcd processes:

* create -> Available (every member healthy, phase Running) for 1, 3 and 5 members
  (target: 3 members within 20 s);
* scale-up 3 -> 5;
* recovery of a member whose process was killed, and of one whose data was deleted
  (replaced by a new member);
* a rolling upgrade 3.4.23 -> 3.5.1 of 3 members.
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
RELEASE = "0.4.0"  # the bundle the operator is installed from: the newest
sys.path.insert(0, str(REPO))

from olmtool.actions.image_build import image_build  # noqa: E402
from olmtool.cluster import lifecycle  # noqa: E402
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


def _timed_create(kube: Kube, ns: str, replicas: int, version: str = "3.5.1") -> tuple[str, float]:
    name = f"b{uuid.uuid4().hex[:5]}"
    started = time.monotonic()
    etcd_env.create_cluster(kube, ns, name, replicas=replicas, version=version)
    etcd_env.wait_running(kube, ns, name, replicas, version, timeout=180)
    return name, time.monotonic() - started


def run_once(kube: Kube, ns: str) -> dict[str, float]:
    result: dict[str, float] = {}
    for replicas in (1, 3, 5):
        _, result[f"create {replicas}"] = _timed_create(kube, ns, replicas)
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
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    assets = ensure_assets()
    with tempfile.TemporaryDirectory(prefix="olmtool-etcd-bench-") as workdir:
        cluster = lifecycle.up("etcd-bench", root=Path(workdir), assets=assets, registry_port=0)
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
                result = run_once(kube, watched)
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
