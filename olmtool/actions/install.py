"""``install`` / ``uninstall``: an operator from a catalog, through OLM's Subscription API.

>>> result = install("etcd-operator", catalog="127.0.0.1:50051", version="0.2.0")
>>> result.csv
'etcd-operator.v0.2.0'

Works against any cluster with OLM: ``kubeconfig``, else the local cluster ``name``, else
``$KUBECONFIG``, else the local cluster ``olmtool`` (:mod:`olmtool.cluster.target`, which
also makes every failure to reach or use the cluster one line). ``catalog`` is a registry
address (``host:port``), a catalog image, or a catalog directory: on a local cluster (the
one the kubeconfig, however chosen, belongs to) a directory is pushed to the cluster's
registry as a catalog image (``localhost:5000/olmtool/catalogs/<package>:<digest>``), which
the engine serves with ``olmtool catalog serve`` in a pod, as OLM runs a catalog image; the
CatalogSource is ``<package>-catalog`` in the install namespace.

``timeout`` bounds the whole install. It fails early where OLM's state cannot clear by
itself (see :func:`olmtool.olm.follow`), and rides out an apiserver outage of up to
:data:`~olmtool.kube.OUTAGE_GRACE` seconds. A failed or interrupted install
removes what it created (Subscription, the CSV it brought, OperatorGroup, CatalogSource,
the namespace), never what was there before, unless ``keep``; the error says which.

The Subscription names its channel: without ``channel``, the package's default channel
read from the registry (for an image catalog, only when given). OLM v0 offers upgrades
only to a Subscription with a channel (see :mod:`olmtool.olm.upgrade_run`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from olmtool.cluster import Cluster, local_cluster_of, resolve_target
from olmtool.errors import ArgumentError, ClusterUnreachable, InputError, OlmtoolError
from olmtool.images import Source, SourceKind, classify_source
from olmtool.jsonfields import json_fields
from olmtool.kube import OUTAGE_GRACE, Target, cluster_errors, describe
from olmtool.olm import (
    CatalogSourceUnavailable,
    InstallMode,
    Made,
    SubscriptionSpec,
    connect_olm,
    csv_names,
    default_channel,
    fetch_config,
    follow,
    remove_made,
    subscribe,
)
from olmtool.olm import uninstall as remove_operator
from olmtool.serve import start_server

if TYPE_CHECKING:
    from olmtool.kube import Kube

# the registry look-ups before subscribing take at most this share of the timeout
PROBE_SHARE = 1 / 6


class InstallInterrupted(KeyboardInterrupt):
    """The install was interrupted (SIGINT); the message says what was removed or kept."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass
class InstallResult:
    package: str
    namespace: str
    csv: str
    catalog_source: str
    operator_group: str
    install_mode: str
    targets: list[str]
    approved: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        names = {"targets": "targetNamespaces", "approved": "approvedInstallPlans"}
        return json_fields(self, rename=names, seconds=round(self.seconds, 2))


def resolve_kubeconfig(kubeconfig: Path | None, name: str | None = None) -> Path:
    """The kubeconfig a verb uses (see :func:`olmtool.cluster.target.resolve_target`)."""
    return resolve_target(kubeconfig, name).kubeconfig


def classify_catalog(catalog: str) -> Source:
    """The catalog a client verb takes, by the one rule for sources
    (:func:`olmtool.images.classify_source`): a directory, a registry address
    (``host:port``) or a catalog image naming its registry; an OCI layout is not one."""
    try:
        source = classify_source(catalog, what="catalog", addresses=True)
    except InputError as exc:
        raise ArgumentError(str(exc), argument="catalog") from None
    if source.kind is SourceKind.layout:
        raise ArgumentError(
            f'"{catalog}" is an OCI layout: push it to a registry and pass the image, or '
            "pass the catalog directory",
            argument="catalog",
        )
    return source


def _registry_cluster(root: Path, target: Target) -> Cluster:
    """The local cluster of ``target`` (with a registry) a catalog directory goes to."""
    cluster = local_cluster_of(target)
    if cluster is None or not cluster.registry:
        which = (
            f"local cluster {cluster.name} has no registry"
            if cluster is not None
            else f"kubeconfig {target.shown} is not a local cluster's"
        )
        raise ArgumentError(
            f"a catalog directory ({root}) installs only on a local cluster with its "
            f"registry ({which}); for another cluster publish it as an image "
            "(olmtool catalog publish --image REF --push) and pass that image",
            argument="catalog",
        )
    return cluster


def _push_catalog_dir(root: Path, package: str, cluster: Cluster) -> str:
    """The directory as a catalog image that serves (what ``catalog publish --image``
    builds: real OLM and the engine run it by its entrypoint) in the local cluster's
    registry; its reference under the registry's ``localhost:5000`` alias."""
    from olmtool.catalog import catalog_image
    from olmtool.images import push

    image = catalog_image(root, None)
    tag = image.digest.removeprefix("sha256:")[:12]
    repository = f"olmtool/catalogs/{package}:{tag}"
    push(image, f"{cluster.registry}/{repository}")
    return f"localhost:5000/{repository}"


def _channel(address: str | None, package: str, channel: str, timeout: float = 10.0) -> str:
    """``channel``, else the package's default channel when the registry answers."""
    if channel or address is None:
        return channel
    try:
        return default_channel(address, package, timeout=timeout)
    except CatalogSourceUnavailable:
        return ""


def _starting_csv(
    address: str | None, package: str, channel: str, version: str, timeout: float = 10.0
) -> str:
    """The CSV name of ``version`` in the channel, read from the registry when reachable;
    otherwise OLM's naming convention ``<package>.v<version>``."""
    if not version:
        return ""
    if address is None:
        return f"{package}.v{version}"
    try:
        config = fetch_config(address, timeout=timeout)
    except CatalogSourceUnavailable:
        return f"{package}.v{version}"
    default = next((p.default_channel for p in config.packages if p.name == package), "")
    wanted = channel or default
    entries = {
        e.name
        for c in config.channels
        if c.package == package and c.name == wanted
        for e in c.entries
    }
    for bundle in config.bundles:
        if bundle.package == package and bundle.name in entries and bundle.version == version:
            return bundle.name
    raise ArgumentError(
        f"{version} is not in channel {wanted or '(default)'} of {package}", argument="version"
    )


def install(
    package: str,
    *,
    catalog: str,
    channel: str = "",
    version: str = "",
    namespace: str = "",
    install_mode: str = "OwnNamespace",
    approval: str = "Automatic",
    kubeconfig: Path | None = None,
    name: str | None = None,
    timeout: float = 300.0,
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> InstallResult:
    """Subscribe to ``package`` and wait until its CSV is Succeeded (InstallFailed
    with OLM's reason otherwise). With Manual approval only the InstallPlan that installs
    the requested version is approved, so no further upgrade happens by itself.

    ``name`` is the local cluster to install on (not with ``kubeconfig``). A failure
    after the first object was created removes what this install created unless
    ``keep`` (the error says what went or stayed); an interrupt does the same and raises
    :class:`InstallInterrupted`."""
    if approval not in ("Automatic", "Manual"):
        raise ArgumentError(f'"{approval}" is not Automatic or Manual', argument="approval")
    namespace = namespace or package
    mode = InstallMode.parse(install_mode, namespace)
    started = time.monotonic()
    deadline = started + timeout
    probe_timeout = max(1.0, min(10.0, timeout * PROBE_SHARE))
    classified = classify_catalog(catalog)  # a mistyped catalog before any cluster
    target = resolve_target(kubeconfig, name)
    directory = classified.path if classified.kind is SourceKind.directory else None
    if directory is not None:
        cluster = _registry_cluster(directory, target)
    else:
        kind, source = classified.kind.value, catalog
    kube = connect_olm(target, outage_grace=OUTAGE_GRACE, progress=progress)
    try:
        if directory is not None:
            kind, source = "image", _push_catalog_dir(directory, package, cluster)
            with start_server(catalog, grpc_port=0, http_port=None, host="127.0.0.1") as server:
                address = server.grpc_address
                channel = _channel(address, package, channel, probe_timeout)
                starting = _starting_csv(address, package, channel, version, probe_timeout)
        else:
            address = source if kind == "address" else None
            channel = _channel(address, package, channel, probe_timeout)
            starting = _starting_csv(address, package, channel, version, probe_timeout)
        made: list[Made] = []
        before: set[str] | None = None
        catalog_source = f"{package}-catalog"
        spec = SubscriptionSpec(package, catalog_source, namespace, channel, starting, approval)
        try:
            with cluster_errors(kube, target):
                before = csv_names(kube, namespace)
                group = subscribe(kube, namespace, spec, mode, made=made, **{kind: source})
                followed = follow(
                    kube,
                    namespace,
                    package,
                    target_csv=starting,
                    timeout=timeout,
                    deadline=deadline,
                    on_change=progress,
                )
        except KeyboardInterrupt:
            note = _undo(kube, target, namespace, package, made, before, keep, None)
            raise InstallInterrupted("interrupted" + (f"; {note}" if note else "")) from None
        except OlmtoolError as exc:
            note = _undo(kube, target, namespace, package, made, before, keep, exc)
            if note:
                exc.message = f"{exc.message}; {note}"
                exc.args = (exc.message,)
            raise
    finally:
        kube.close()
    return InstallResult(
        package=package,
        namespace=namespace,
        csv=followed.csv["metadata"]["name"],
        catalog_source=catalog_source,
        operator_group=group["metadata"]["name"],
        install_mode=mode.name,
        targets=list(mode.targets),
        approved=followed.approved,
        seconds=time.monotonic() - started,
    )


def _undo(
    kube: Kube,
    target: Target,
    namespace: str,
    package: str,
    made: list[Made],
    before: set[str] | None,
    keep: bool,
    error: OlmtoolError | None,
) -> str:
    """Remove what a failed install made (unless ``keep``); what went or stayed."""
    if not made:
        return ""
    if keep:
        return f"kept what this install created: {', '.join(map(str, made))}"
    # an apiserver already gone is asked once; a short outage is still ridden out
    kube.outage_grace = (
        0.0 if isinstance(error, ClusterUnreachable) else min(kube.outage_grace, 15.0)
    )
    with cluster_errors(kube, target):
        removed, failed = remove_made(
            kube, namespace, package, made, before or set(), describe=describe
        )
    note = f"removed what this install created: {', '.join(removed)}" if removed else ""
    if failed:
        note += ("; " if note else "") + f"could not remove {', '.join(failed)}"
    return note


@dataclass
class UninstallResult:
    """What ``uninstall`` deleted (``deleted``: ``Kind namespace/name`` lines, in order)."""

    package: str
    namespace: str
    deleted: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"package": self.package, "namespace": self.namespace, "deleted": self.deleted}


def uninstall(
    package: str,
    *,
    namespace: str = "",
    delete_crds: bool = False,
    kubeconfig: Path | None = None,
    name: str | None = None,
) -> UninstallResult:
    """Remove the Subscription and CSV (CRDs only with ``delete_crds``) from the cluster
    of ``kubeconfig`` or the local cluster ``name`` (see :func:`install`)."""
    target = resolve_target(kubeconfig, name)
    kube = connect_olm(target)
    namespace = namespace or package
    try:
        with cluster_errors(kube, target):
            deleted = remove_operator(kube, namespace, package, delete_crds=delete_crds)
    finally:
        kube.close()
    return UninstallResult(package, namespace, deleted)


__all__ = [
    "InstallInterrupted",
    "InstallResult",
    "UninstallResult",
    "install",
    "resolve_kubeconfig",
    "uninstall",
]
