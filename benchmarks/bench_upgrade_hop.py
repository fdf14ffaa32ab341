"""Upgrade-hop benchmark: install seconds and seconds per hop, every start version.

    python benchmarks/bench_upgrade_hop.py [--kubeconfig KC] [--olm PEERS] [--runs 1]

Runs ``olmtool test upgrade --all`` (the library call ``upgrade_test_dynamic``) for the
etcd operator: each released version is installed through OLM with Manual approval, its
``alm-examples`` EtcdCluster created and the etcd probe's keys written, then upgraded hop
by hop to the channel head. Per start version it prints the install seconds (Subscription
to CSV Succeeded, example Ready, probe written) and each hop's seconds (OLM offering the
upgrade InstallPlan, approval, new CSV Succeeded, Deployment rolled, example Ready, probe
read back). Target: under 15 s per hop.

The cluster is ``--kubeconfig``, else ``$KUBECONFIG``; with neither, a fresh named local
cluster in a temporary directory (cached control-plane assets), which runs olmtool's OLM
engine. ``--olm DIR`` runs real OLM v0.18.3 (``olm`` and ``catalog`` from DIR, e.g.
``../shared/peers``) instead, for the benchmark's duration (the fresh cluster then starts
without the engine). The operator's images are built and pushed
to the fresh cluster's registry, or to ``--push-images REGISTRY``.

The catalog is ``--catalog`` (directory, host:port or image), by default the repository's
catalog with the bundles inline (rendered from ``bundle/etcd-operator``, no unpack Job),
served from this process on a loopback port (a local cluster only). The package's CRDs
are deleted before each start version (an older release cannot replace a newer CRD's
stored versions), so do not point this at a cluster whose EtcdClusters you want to keep.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from olmtool.actions.image_build import image_build  # noqa: E402
from olmtool.actions.upgrade_testing import upgrade_test_dynamic  # noqa: E402
from olmtool.cluster import lifecycle  # noqa: E402
from olmtool.cluster.assets import ensure_assets  # noqa: E402
from olmtool.kube import Kube  # noqa: E402
from olmtool.olm.upgrade_report import UpgradeReport  # noqa: E402
from tests.e2e import test_real_olm as real  # noqa: E402

console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 130)
PACKAGE = "etcd-operator"
TARGET_HOP_SECONDS = 15.0


@contextlib.contextmanager
def real_olm(kubeconfig: Path, peers: Path, logs: Path) -> Iterator[None]:
    """OLM's olm and catalog operators against ``kubeconfig`` (resync every 10 s)."""
    kube = Kube(kubeconfig)
    namespace = f"olm-{uuid.uuid4().hex[:6]}"
    try:
        real._install_olm_crds(kube)
        real._install_monitoring_crds(kube)  # the 0.3.0 bundle ships a ServiceMonitor
        kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    finally:
        kube.close()
    argvs = {
        "olm": [str(peers / "olm"), "--namespace", namespace, "--writeStatusName", ""],
        "catalog": [
            str(peers / "catalog"),
            f"-kubeconfig={kubeconfig}",
            f"-namespace={namespace}",
            "-configmapServerImage=quay.io/operator-framework/configmap-operator-registry:latest",
            "-util-image=quay.io/operator-framework/olm:v0.18.3",
            "-interval=10s",
        ],
    }
    processes = []
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    try:
        for name, argv in argvs.items():
            with (logs / f"{name}.log").open("wb") as out:
                processes.append(subprocess.Popen(argv, stdout=out, stderr=out, env=env))
        time.sleep(1)
        yield
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        console.print(f"real OLM logs: {logs}")


def run(kubeconfig: Path, catalog: str, timeout: float) -> UpgradeReport:
    with console.status("upgrading") as status:
        return upgrade_test_dynamic(
            catalog,
            PACKAGE,
            every=True,
            kubeconfig=kubeconfig,
            probe="etcd_operator.probe:EtcdProbe",
            probe_path=REPO / "operator",
            timeout=timeout,
            reset_crds=True,
            progress=status.update,
        )


def report_table(reports: list[UpgradeReport]) -> Table:
    table = Table(title=f"upgrade hops of {PACKAGE} ({len(reports)} run(s), median seconds)")
    for column in ("start", "install s", "hops", "s per hop", "offered after s", "result"):
        table.add_column(column, justify="left" if column in ("start", "hops") else "right")
    for start in [r.start for r in reports[0].runs]:
        runs = [r for report in reports for r in report.runs if r.start == start]
        hop_names = " -> ".join(h.to_csv for h in runs[0].hops) or "-"
        per_hop = [h.seconds for r in runs for h in r.hops]
        offered = [h.offer_seconds for r in runs for h in r.hops]
        table.add_row(
            start,
            f"{statistics.median(r.install_seconds for r in runs):.1f}",
            hop_names,
            f"{statistics.median(per_hop):.1f}" if per_hop else "-",
            f"{statistics.median(offered):.1f}" if offered else "-",
            "passed" if all(r.passed for r in runs) else "FAILED",
        )
    return table


def benchmark(kubeconfig: Path, catalog: str | None, runs: int, timeout: float) -> int:
    with tempfile.TemporaryDirectory(prefix="olmtool-upgrade-bench-") as workdir:
        if catalog is None:
            catalog = str(real._inline_catalog(Path(workdir) / PACKAGE))
        reports = []
        for number in range(1, runs + 1):
            report = run(kubeconfig, catalog, timeout)
            for upgrade in report.runs:
                hops = ", ".join(f"{h.to_csv} {h.seconds:.1f} s" for h in upgrade.hops) or "-"
                verdict = "passed" if upgrade.passed else f"FAILED: {upgrade.failure}"
                console.print(
                    f"run {number}: {upgrade.start}: install {upgrade.install_seconds:.1f} s, "
                    f"hops {hops}; {verdict}"
                )
            reports.append(report)
    console.print(report_table(reports))
    hops = [h.seconds for report in reports for r in report.runs for h in r.hops]
    passed = all(report.passed for report in reports)
    if hops:
        worst = max(hops)
        met = "met" if worst <= TARGET_HOP_SECONDS else "MISSED"
        console.print(
            f"seconds per hop: median {statistics.median(hops):.1f}, max {worst:.1f} "
            f"(target {TARGET_HOP_SECONDS:g} s): {met}"
        )
    return 0 if passed else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--olm", type=Path, help="run real OLM from this directory")
    parser.add_argument("--push-images", metavar="REGISTRY", help="push the operator images")
    parser.add_argument("--catalog", help="catalog (default: the repository's, inline)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="olmtool-bench-")))
        kubeconfig, registry, olm = args.kubeconfig, args.push_images, args.olm
        if kubeconfig is None:
            cluster = lifecycle.up(
                "upgrade-bench",
                root=workdir,
                assets=ensure_assets(),
                registry_port=0,
                engine=olm is None,
            )
            stack.callback(lifecycle.down, "upgrade-bench", root=workdir, delete=True)
            kubeconfig, registry = Path(cluster.kubeconfig), registry or cluster.registry
        if registry:
            built = image_build(
                config=REPO / "olmtool.yaml", bundle_tags=True, push=True, registry=registry
            )
            console.print(f"operator images pushed to {registry} in {built.seconds:.1f} s")
        if olm is not None:
            logs = Path(tempfile.mkdtemp(prefix="olmtool-upgrade-bench-olm-"))
            stack.enter_context(real_olm(Path(kubeconfig), olm, logs))
        engine = (
            f"real OLM from {olm}"
            if olm
            else "the cluster's (olmtool's engine unless --kubeconfig)"
        )
        console.print(f"OLM: {engine}")
        code = benchmark(Path(kubeconfig), args.catalog, args.runs, args.timeout)
    sys.exit(code)


if __name__ == "__main__":
    main()
