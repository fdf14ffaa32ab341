"""``python -m olmtool.cluster.node --kubeconfig K --state-dir D [--node-name N]
[--registry HOST:PORT] [--network-index I] [--tls-cert-file C --tls-private-key-file K
[--port P]]``: run the node agent until SIGTERM or SIGINT, which stop every Pod's
processes (SIGTERM, then SIGKILL after the grace period) before exiting 0.
``--network-index`` is the cluster network the cluster claimed
(:mod:`olmtool.cluster.network`): Pods get network namespaces on it and Services answer
on their ClusterIPs. With a serving certificate (signed by the cluster CA) it serves the
kubelet API for ``kubectl logs`` and ``exec``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.node.agent import NodeAgent
from olmtool.cluster.pki import KeyPair


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m olmtool.cluster.node", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--node-name", default="olmtool-node")
    parser.add_argument("--registry", default=None, help="HOST:PORT of olmtool's image registry")
    parser.add_argument("--backoff-base", type=float, default=10.0)
    parser.add_argument("--stop-grace", type=float, default=10.0)
    parser.add_argument(
        "--network-index", type=int, default=None, help="the cluster network (1-254)"
    )
    parser.add_argument("--tls-cert-file", type=Path, help="the kubelet API's serving cert")
    parser.add_argument("--tls-private-key-file", type=Path)
    parser.add_argument("--port", type=int, default=0, help="kubelet API port (0: a free one)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if (args.tls_cert_file is None) != (args.tls_private_key_file is None):
        parser.error("--tls-cert-file and --tls-private-key-file go together")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    agent = NodeAgent(
        args.kubeconfig,
        args.state_dir,
        node_name=args.node_name,
        registry=args.registry,
        backoff_base=args.backoff_base,
        stop_grace=args.stop_grace,
        network=ClusterNetwork(args.network_index) if args.network_index else None,
        serving=KeyPair(args.tls_cert_file, args.tls_private_key_file)
        if args.tls_cert_file
        else None,
        kubelet_port=args.port,
    )

    def stop(signum: int, frame: object) -> None:
        agent.stop_event.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    agent.start()
    logging.getLogger(__name__).info("node %s is Ready", args.node_name)
    agent.run_forever()
    agent.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
