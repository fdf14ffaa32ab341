"""``python -m olmtool.engine --kubeconfig K [--namespace olm] [--registry HOST:PORT]
[--interval S]``: run olmtool's OLM v0 engine against the cluster until SIGTERM or
SIGINT. ``--namespace`` is the global catalog namespace (OLM's ``-namespace``): its
CatalogSources are visible to Subscriptions in every namespace. ``--registry`` is the
local cluster's registry, which ``localhost:5000/...`` bundle images alias."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m olmtool.engine", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", default="olm", help="the global catalog namespace")
    parser.add_argument("--registry", default="", help="HOST:PORT of the cluster's registry")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between rounds")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    from olmtool.kube import configure_logging

    configure_logging(verbose=args.verbose)

    from olmtool.cluster import registry_credentials
    from olmtool.engine.loop import Engine
    from olmtool.images import add_credential_source
    from olmtool.kube import Kube

    # bundle and catalog images from the local cluster's registry: its login
    add_credential_source(registry_credentials)

    engine = Engine(
        Kube(args.kubeconfig),
        global_namespace=args.namespace,
        registry=args.registry,
        interval=args.interval,
    )

    def stop(signum: int, frame: object) -> None:
        engine.stop.set()
        engine.wake.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    engine.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
