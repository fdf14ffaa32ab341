"""What olmtool does, one action per user verb, callable from Python.

Each module holds one action: a typed function taking plain arguments and returning a
typed result (what was written, findings, digests) with ``as_dict()`` for machine output,
raising only :class:`~olmtool.errors.OlmtoolError` subclasses. The ``olmtool`` CLI parses
arguments, calls one action and renders its result; anything it does, this does::

    from olmtool.actions import bundle_build, bundle_validate, catalog_publish

    crds = crd_generate(check=True)           # like `olmtool crd generate --check`
    built = bundle_build(check=True)          # like `olmtool bundle build --check`
    report = bundle_validate("quay.io/example/etcd-bundle:0.3.0", select=["all"])
    published = catalog_publish()

Long actions take ``progress``, a callable that receives a line about the current step.
"""

from olmtool.actions.bundle_build import BundleBuildResult, bundle_build
from olmtool.actions.bundle_validate import bundle_checks, bundle_validate
from olmtool.actions.catalog_add import catalog_add
from olmtool.actions.catalog_graph import CatalogGraph, GraphView, catalog_graph
from olmtool.actions.catalog_publish import CatalogPublishResult, catalog_publish
from olmtool.actions.catalog_render import catalog_render
from olmtool.actions.catalog_serve import catalog_index, catalog_serve
from olmtool.actions.catalog_validate import catalog_checks, catalog_validate
from olmtool.actions.cluster_down import cluster_down
from olmtool.actions.cluster_status import (
    cluster_kubeconfig,
    cluster_logs,
    cluster_status,
)
from olmtool.actions.cluster_up import cluster_up
from olmtool.actions.crd_generate import CrdGenerateResult, crd_generate
from olmtool.actions.crd_validate import crd_validate
from olmtool.actions.image_build import ImageBuildResult, image_build
from olmtool.actions.image_lock import ImageLockResult, image_lock
from olmtool.cluster import local as _local
from olmtool.images import ImageTarget

ClusterStatus = _local.ClusterStatus  # what cluster_status returns

__all__ = [
    "BundleBuildResult",
    "CatalogGraph",
    "CatalogPublishResult",
    "ClusterStatus",
    "CrdGenerateResult",
    "GraphView",
    "ImageBuildResult",
    "ImageLockResult",
    "ImageTarget",
    "bundle_build",
    "bundle_checks",
    "bundle_validate",
    "catalog_add",
    "catalog_checks",
    "catalog_graph",
    "catalog_index",
    "catalog_publish",
    "catalog_render",
    "catalog_serve",
    "catalog_validate",
    "cluster_down",
    "cluster_kubeconfig",
    "cluster_logs",
    "cluster_status",
    "cluster_up",
    "crd_generate",
    "crd_validate",
    "image_build",
    "image_lock",
]
