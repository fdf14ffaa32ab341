"""``bundle validate`` timings: the etcd-operator 0.3.0 bundle, and the same bundle with a
CSV declaring many admission webhooks (every one valid, so the numbers measure the
checks, not error paths).

Each case is timed in-process (load + every suite, best of ``--repeat`` runs after one
warm-up, so schemas are compiled once per process as in a long-lived caller) and as the
CLI (``python -m olmtool bundle validate --select all``, fresh interpreter: start-up and
first-use compilation included; best of ``--cli-repeat``: the machine's other load
only ever adds).

    python benchmarks/bench_bundle_validate.py [--webhooks 50] [--repeat 20]

Run it against another checkout with ``PYTHONPATH=/that/checkout`` to compare.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ETCD = REPO / "bundle" / "etcd-operator" / "0.3.0"
CSV = "manifests/etcd-operator.clusterserviceversion.yaml"
# The webhook server's port, declared by the operator container (after its 8080).
PORT = "                      - containerPort: 8080\n"


def webhook(index: int) -> str:
    return (
        "    - type: ValidatingAdmissionWebhook\n"
        "      admissionReviewVersions: [v1]\n"
        "      containerPort: 443\n"
        "      targetPort: 9443\n"
        "      deploymentName: etcd-operator\n"
        f"      generateName: v{index}.etcdclusters.etcd.olmtool.dev\n"
        "      sideEffects: None\n"
        "      failurePolicy: Fail\n"
        "      timeoutSeconds: 10\n"
        f"      webhookPath: /validate-{index}\n"
        "      rules:\n"
        "        - operations: [CREATE, UPDATE]\n"
        "          apiGroups: [etcd.olmtool.dev]\n"
        "          apiVersions: [v1beta1]\n"
        "          resources: [etcdclusters]\n"
    )


def with_webhooks(target: Path, count: int) -> Path:
    """The etcd bundle whose CSV declares ``count`` webhooks served on port 9443."""
    shutil.copytree(ETCD, target)
    path = target / CSV
    text = path.read_text(encoding="utf-8")
    text = text.replace(PORT, PORT + "                      - containerPort: 9443\n", 1)
    hooks = "".join(webhook(i) for i in range(count))
    text = text.replace(
        "\n  version: 0.3.0\n", f"\n  version: 0.3.0\n  webhookdefinitions:\n{hooks}"
    )
    path.write_text(text, encoding="utf-8")
    return target


def in_process(bundle: Path, repeat: int) -> tuple[float, int]:
    from olmtool.bundle import load_bundle, select_suites, validate_bundle

    suites = select_suites(["all"])
    findings = len(validate_bundle(load_bundle(bundle), suites=suites).findings)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        validate_bundle(load_bundle(bundle), suites=suites)
        times.append(time.perf_counter() - start)
    return min(times), findings


def cli(bundle: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "olmtool", "bundle", "validate", str(bundle), "--select", "all"],
            check=False,
            capture_output=True,
        )
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webhooks", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cli-repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cases = {
            "etcd-operator 0.3.0": ETCD,
            f"+{args.webhooks} webhooks": with_webhooks(Path(scratch) / "hooks", args.webhooks),
        }
        print(f"{'bundle':<24} {'in-process ms':>14} {'CLI ms':>8} {'findings':>9}")
        for name, bundle in cases.items():
            seconds, findings = in_process(bundle, args.repeat)
            wall = cli(bundle, args.cli_repeat)
            print(f"{name:<24} {seconds * 1000:>14.1f} {wall * 1000:>8.0f} {findings:>9}")


if __name__ == "__main__":
    main()
