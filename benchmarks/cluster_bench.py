"""Local cluster benchmark: start-up time and Deployment create -> pod Ready.

    python benchmarks/cluster_bench.py [--runs 3] [--pods 3]

Each run starts a fresh named cluster (cached assets and images, new state), so
"start-up" is the start a user or CI sees after the one-time builds: etcd, kube-apiserver,
controller-manager, scheduler, registry (the stand-in images pushed), containerd,
kubelet, kube-proxy, DNS and provisioner until the node is Ready and schedulable. Then a
Deployment of ``--pods`` busybox replicas with a readiness probe is created and timed
until every pod is Ready, and one pod is deleted and timed until its replacement is Ready.
The last line compares with the node agent olmtool ran before its real node (measured
the same way on this kind of machine, with OLM's API and engine started too).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kubernetes import client, config
from rich.console import Console
from rich.table import Table

from olmtool.cluster import lifecycle
from olmtool.cluster.assets import ensure_assets

console = Console()


def _deployment(replicas: int) -> dict[str, object]:
    labels = {"app": "bench"}
    container = {
        "name": "main",
        "image": "docker.io/library/busybox:1.35",
        "command": ["sh", "-c", "touch /tmp/ready-$$; sleep 3600"],
        "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def _ready_pods(core: client.CoreV1Api) -> list[client.V1Pod]:
    pods = core.list_namespaced_pod("default", label_selector="app=bench").items
    return [
        p
        for p in pods
        if p.metadata.deletion_timestamp is None
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    ]


def _wait(predicate, timeout: float = 120.0) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.1)
    raise TimeoutError(f"not done after {timeout:.0f}s")


def run_once(assets: Path, root: Path, replicas: int) -> dict[str, float]:
    start = time.monotonic()
    cluster = lifecycle.up("bench", root=root, assets=assets, registry_port=0)
    startup = time.monotonic() - start
    try:
        api = config.new_client_from_config(config_file=cluster.kubeconfig)
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        _wait(lambda: core.list_namespaced_service_account("default").items)
        created = time.monotonic()
        apps.create_namespaced_deployment("default", _deployment(replicas))
        _wait(lambda: len(_ready_pods(core)) == replicas)
        to_ready = time.monotonic() - created
        victim = _ready_pods(core)[0]
        core.delete_namespaced_pod(victim.metadata.name, "default", grace_period_seconds=0)
        deleted = time.monotonic()
        _wait(
            lambda: (
                len([p for p in _ready_pods(core) if p.metadata.name != victim.metadata.name])
                == replicas
            )
        )
        replaced = time.monotonic() - deleted
    finally:
        lifecycle.down("bench", root=root, delete=True)
    return {"startup": startup, "ready": to_ready, "replaced": replaced}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pods", type=int, default=3)
    args = parser.parse_args()
    assets = ensure_assets()
    results = []
    with tempfile.TemporaryDirectory(prefix="olmtool-cluster-bench-") as workdir:
        for run in range(1, args.runs + 1):
            result = run_once(assets, Path(workdir), args.pods)
            console.print(
                f"run {run}: start-up {result['startup']:.2f} s, "
                f"{args.pods} pods Ready {result['ready']:.2f} s, "
                f"deleted pod replaced {result['replaced']:.2f} s"
            )
            results.append(result)
    table = Table(title=f"local cluster ({args.runs} runs, median)")
    for column in (
        "cold start-up to node Ready",
        f"Deployment ({args.pods} pods) to Ready",
        "deleted pod replaced and Ready",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        *(
            f"{statistics.median(r[key] for r in results):.2f} s"
            for key in ("startup", "ready", "replaced")
        )
    )
    console.print(table)
    medians = [statistics.median(r[key] for r in results) for key in ("startup", "ready")]
    console.print(
        f"the retired node agent: start-up {AGENT['startup']:.1f} s, {AGENT['pods']} pods Ready "
        f"{AGENT['ready']:.1f} s; the real node: x{medians[0] / AGENT['startup']:.1f} and "
        f"x{medians[1] / AGENT['ready']:.1f}"
    )


# the node agent's numbers, last measured (README, before the real node): a node agent
# ran Pods as host processes, no images, no network namespaces of a node's
AGENT = {"startup": 8.5, "ready": 0.4, "pods": 3}


if __name__ == "__main__":
    main()
