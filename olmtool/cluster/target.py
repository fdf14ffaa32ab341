"""Which kubeconfig olmtool's client verbs (``install``, ``uninstall``, ``test upgrade``)
use: the one given, else the local cluster named, else ``$KUBECONFIG`` (its first file
that exists), else the local cluster ``olmtool``. A kubeconfig and a local cluster's name
are not given together. The client and its errors are :mod:`olmtool.kube`'s.
"""

from __future__ import annotations

from pathlib import Path

from olmtool.cluster import lifecycle
from olmtool.errors import ArgumentError, KubeconfigError
from olmtool.kube import Target, from_environment


def resolve_target(kubeconfig: Path | None = None, name: str | None = None) -> Target:
    """``kubeconfig``, else the local cluster ``name``, else ``$KUBECONFIG`` (its first
    file that exists, else its first), else the local cluster ``olmtool``."""
    if kubeconfig is not None and name:
        raise ArgumentError(
            f"cannot be combined with a kubeconfig ({kubeconfig}): give one of them",
            argument="name",
        )
    if kubeconfig is not None:
        return Target(Path(kubeconfig))
    if name:
        cluster = lifecycle.read_cluster(name)
        if cluster is None:
            raise lifecycle.ClusterError(
                f"no local cluster named {name!r} (start one: olmtool cluster up --name {name})"
            )
        return Target(Path(cluster.kubeconfig), f"local cluster {name}")
    if (from_env := from_environment()) is not None:
        return from_env
    cluster = lifecycle.read_cluster(lifecycle.DEFAULT_NAME)
    if cluster is None:
        raise KubeconfigError(
            f"no kubeconfig given, $KUBECONFIG is not set and there is no local cluster "
            f"{lifecycle.DEFAULT_NAME!r} (start one: olmtool cluster up)"
        )
    return Target(Path(cluster.kubeconfig), f"local cluster {lifecycle.DEFAULT_NAME}")


def resolve_kubeconfig(kubeconfig: Path | None = None, name: str | None = None) -> Path:
    return resolve_target(kubeconfig, name).kubeconfig


def local_cluster_of(target: Target) -> lifecycle.Cluster | None:
    """The local cluster whose kubeconfig ``target`` is (by resolved path), if any."""
    try:
        wanted = target.kubeconfig.resolve()
    except (OSError, RuntimeError):
        return None
    root = lifecycle.clusters_root()
    names = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    for name in names:
        try:
            cluster = lifecycle.read_cluster(name)
        except (OSError, ValueError, TypeError, ArgumentError):  # not a cluster's state
            continue
        if cluster is not None and Path(cluster.kubeconfig).resolve() == wanted:
            return cluster
    return None


__all__ = ["local_cluster_of", "resolve_kubeconfig", "resolve_target"]
