"""``python -m etcd_operator``: run the operator (the command the CSV names).

Scope comes from ``WATCH_NAMESPACE`` as OLM sets it from the OperatorGroup's
``olm.targetNamespaces``: a comma-separated list of namespaces, or empty for all
namespaces (the only case in which the operator watches cluster-wide). Peering is off
(``--standalone``) unless ``--peering NAME`` or ``ETCD_OPERATOR_PEERING`` names a
KopfPeering object: OLM runs one replica, and the peering CRDs are not in the bundle.
"""

from __future__ import annotations

import argparse
import os
import sys

import kopf


def scope(watch_namespace: str | None) -> tuple[bool, list[str]]:
    """(clusterwide, namespaces) from ``WATCH_NAMESPACE``."""
    namespaces = sorted({n.strip() for n in (watch_namespace or "").split(",") if n.strip()})
    return (not namespaces, namespaces)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="etcd_operator", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--liveness",
        default="http://0.0.0.0:8080/healthz",
        help="liveness endpoint URL (kopf's probes)",
    )
    parser.add_argument(
        "--peering",
        default=os.environ.get("ETCD_OPERATOR_PEERING") or None,
        help="KopfPeering name (default: standalone)",
    )
    parser.add_argument(
        "--log-format",
        choices=["json", "full", "plain"],
        default=os.environ.get("ETCD_OPERATOR_LOG_FORMAT", "json"),
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    from etcd_operator import handlers  # noqa: F401 - registers the handlers

    kopf.configure(
        verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()], log_refkey="k8s"
    )
    clusterwide, namespaces = scope(os.environ.get("WATCH_NAMESPACE"))
    kopf.run(
        standalone=args.peering is None,
        peering_name=args.peering,
        clusterwide=clusterwide,
        namespaces=namespaces,
        liveness_endpoint=args.liveness,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
