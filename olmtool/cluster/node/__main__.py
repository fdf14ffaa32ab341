"""``python -m olmtool.cluster.node --kubeconfig K --state-dir D [--node-name N]
[--registry HOST:PORT] [--network-index I]``: run the node agent until SIGTERM or SIGINT,
which stop every Pod's processes (SIGTERM, then SIGKILL after the grace period) before
exiting 0. ``--network-index`` is the cluster network the cluster claimed
(:mod:`olmtool.cluster.network`): Pods get network namespaces on it and Services
answer on their ClusterIPs."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.node.agent import NodeAgent


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
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
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
