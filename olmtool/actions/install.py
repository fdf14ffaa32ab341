"""``install`` / ``uninstall``: an operator from a catalog, through OLM's Subscription API.

>>> result = install("etcd-operator", catalog="127.0.0.1:50051", version="0.2.0")
>>> result.csv
'etcd-operator.v0.2.0'

Works against any cluster with OLM (``kubeconfig``, else ``$KUBECONFIG``, else the local
cluster ``olmtool``). ``catalog`` is a registry address (``host:port``), a catalog
image, or a catalog directory: on the local cluster a directory is pushed to the cluster's
registry as a catalog image (``localhost:5000/olmtool/catalogs/<package>:<digest>``), which
the engine serves with ``olmtool catalog serve`` in a pod, as OLM runs a catalog image; the
CatalogSource is ``<package>-catalog`` in the install namespace.

The Subscription names its channel: without ``channel``, the package's default channel
read from the registry (for an image catalog, only when given). OLM v0 offers upgrades
only to a Subscription with a channel (see :mod:`olmtool.olm.upgrade_run`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes.client.exceptions import ApiException

from olmtool.cluster import local
from olmtool.cluster.node import Kube  # the JSON API client the node agent uses
from olmtool.errors import ArgumentError, OlmtoolError
from olmtool.images import parse_reference
from olmtool.olm import (
    CatalogSourceUnavailable,
    InstallMode,
    SubscriptionSpec,
    default_channel,
    fetch_config,
    follow,
    is_registry_address,
    subscribe,
)
from olmtool.olm import uninstall as remove_operator
from olmtool.serve import start_server


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
        return {
            "package": self.package,
            "namespace": self.namespace,
            "csv": self.csv,
            "catalogSource": self.catalog_source,
            "operatorGroup": self.operator_group,
            "installMode": self.install_mode,
            "targetNamespaces": self.targets,
            "approvedInstallPlans": self.approved,
            "seconds": round(self.seconds, 2),
        }


def resolve_kubeconfig(kubeconfig: Path | None) -> Path:
    if kubeconfig is not None:
        return kubeconfig
    if os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    return Path(local.require_cluster(local.DEFAULT_NAME).kubeconfig)


def _catalog_kind(catalog: str) -> tuple[str, str]:
    """("address", host:port) or ("image", reference)."""
    if is_registry_address(catalog):
        return "address", catalog
    try:
        parse_reference(catalog)
    except OlmtoolError:
        raise ArgumentError(
            f'"{catalog}" is neither a registry address (host:port) nor an image reference',
            argument="catalog",
        ) from None
    return "image", catalog


def _local_cluster(kubeconfig: Path | None) -> local.Cluster | None:
    """The local cluster ``kubeconfig`` belongs to (None: the default one), if any."""
    if kubeconfig is None:
        return local.read_cluster(local.DEFAULT_NAME)
    wanted = Path(kubeconfig).resolve()
    root = local.clusters_root()
    for name in sorted(p.name for p in root.iterdir()) if root.is_dir() else []:
        cluster = local.read_cluster(name)
        if cluster is not None and Path(cluster.kubeconfig).resolve() == wanted:
            return cluster
    return None


def _push_catalog_dir(root: Path, package: str, kubeconfig: Path | None) -> str:
    """The directory as a catalog image in the local cluster's registry; its reference
    under the registry's ``localhost:5000`` alias (what the node agent pulls)."""
    from olmtool.catalog.publish import catalog_image
    from olmtool.images import push

    cluster = _local_cluster(kubeconfig)
    if cluster is None or not cluster.registry:
        raise ArgumentError(
            f"a catalog directory ({root}) installs only on the local cluster with its "
            "registry; for another cluster publish it as an image "
            "(olmtool catalog publish --image REF --push) and pass that image",
            argument="catalog",
        )
    image = catalog_image(root)
    tag = image.digest.removeprefix("sha256:")[:12]
    repository = f"olmtool/catalogs/{package}:{tag}"
    push(image, f"{cluster.registry}/{repository}")
    return f"localhost:5000/{repository}"


def _channel(address: str | None, package: str, channel: str) -> str:
    """``channel``, else the package's default channel when the registry answers."""
    if channel or address is None:
        return channel
    try:
        return default_channel(address, package, timeout=10)
    except CatalogSourceUnavailable:
        return ""


def _starting_csv(address: str | None, package: str, channel: str, version: str) -> str:
    """The CSV name of ``version`` in the channel, read from the registry when reachable;
    otherwise OLM's naming convention ``<package>.v<version>``."""
    if not version:
        return ""
    if address is None:
        return f"{package}.v{version}"
    try:
        config = fetch_config(address, timeout=10)
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
    timeout: float = 300.0,
    progress: Callable[[str], None] | None = None,
) -> InstallResult:
    """Subscribe to ``package`` and wait until its CSV is Succeeded (InstallFailed
    with OLM's reason otherwise). With Manual approval only the InstallPlan that installs
    the requested version is approved, so no further upgrade happens by itself."""
    if approval not in ("Automatic", "Manual"):
        raise ArgumentError(f'"{approval}" is not Automatic or Manual', argument="approval")
    namespace = namespace or package
    mode = InstallMode.parse(install_mode, namespace)
    if Path(catalog).is_dir():
        kind, source = "image", _push_catalog_dir(Path(catalog), package, kubeconfig)
        with start_server(catalog, grpc_port=0, http_port=None, host="127.0.0.1") as server:
            channel = _channel(server.grpc_address, package, channel)
            starting = _starting_csv(server.grpc_address, package, channel, version)
    else:
        kind, source = _catalog_kind(catalog)
        channel = _channel(source if kind == "address" else None, package, channel)
        starting = _starting_csv(source if kind == "address" else None, package, channel, version)
    started = time.monotonic()
    kube = Kube(resolve_kubeconfig(kubeconfig))
    name = f"{package}-catalog"
    try:
        spec = SubscriptionSpec(package, name, namespace, channel, starting, approval)
        group = subscribe(kube, namespace, spec, mode, **{kind: source})
        followed = follow(
            kube, namespace, package, target_csv=starting, timeout=timeout, on_change=progress
        )
    except ApiException as exc:
        raise OlmtoolError(f"the cluster refused a request: {exc.status} {exc.reason}") from None
    finally:
        kube.close()
    return InstallResult(
        package=package,
        namespace=namespace,
        csv=followed.csv["metadata"]["name"],
        catalog_source=name,
        operator_group=group["metadata"]["name"],
        install_mode=mode.name,
        targets=list(mode.targets),
        approved=followed.approved,
        seconds=time.monotonic() - started,
    )


def uninstall(
    package: str, *, namespace: str = "", delete_crds: bool = False, kubeconfig: Path | None = None
) -> list[str]:
    """Remove the Subscription and CSV (CRDs only with ``delete_crds``)."""
    kube = Kube(resolve_kubeconfig(kubeconfig))
    try:
        return remove_operator(kube, namespace or package, package, delete_crds=delete_crds)
    finally:
        kube.close()


__all__ = ["InstallResult", "install", "uninstall"]
