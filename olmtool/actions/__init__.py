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

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.actions.bundle_build": (
            "BundleBuildResult",
            "ReleaseBuild",
            "bundle_build",
        ),
        "olmtool.actions.bundle_image": (
            "BundleImageResult",
            "bundle_dir_image",
        ),
        "olmtool.actions.bundle_release": (
            "BundleReleaseResult",
            "bundle_release",
        ),
        "olmtool.actions.bundle_validate": (
            "bundle_checks",
            "bundle_validate",
        ),
        "olmtool.actions.catalog_add": ("catalog_add",),
        "olmtool.actions.catalog_graph": (
            "CatalogGraph",
            "GraphView",
            "catalog_graph",
        ),
        "olmtool.actions.catalog_publish": (
            "CatalogPublishResult",
            "catalog_publish",
        ),
        "olmtool.actions.catalog_render": ("catalog_render",),
        "olmtool.actions.catalog_serve": (
            "catalog_index",
            "catalog_serve",
        ),
        "olmtool.actions.catalog_validate": (
            "catalog_checks",
            "catalog_validate",
        ),
        "olmtool.actions.cluster_down": ("cluster_down",),
        "olmtool.actions.cluster_load": ("cluster_load",),
        "olmtool.actions.cluster_node": (
            "cluster_node_start",
            "cluster_node_stop",
        ),
        "olmtool.actions.cluster_status": (
            "KubectlCommand",
            "cluster_kubeconfig",
            "cluster_kubectl",
            "cluster_logs",
            "cluster_registry",
            "cluster_status",
        ),
        "olmtool.actions.cluster_up": ("cluster_up",),
        "olmtool.actions.crd_generate": (
            "CrdGenerateResult",
            "crd_generate",
        ),
        "olmtool.actions.crd_validate": ("crd_validate",),
        "olmtool.actions.image_base": (
            "BaseLockResult",
            "ClusterImagesResult",
            "cluster_images",
            "image_base_lock",
        ),
        "olmtool.actions.image_build": (
            "ImageBuildResult",
            "image_build",
        ),
        "olmtool.actions.image_lock": (
            "ImageLockResult",
            "image_lock",
        ),
        "olmtool.actions.install": (
            "InstallInterrupted",
            "InstallResult",
            "UninstallResult",
            "install",
            "uninstall",
        ),
        "olmtool.actions.project_init": (
            "ProjectInitResult",
            "project_init",
        ),
        "olmtool.actions.upgrade_testing": (
            "upgrade_test",
            "upgrade_test_dynamic",
        ),
        "olmtool.cluster.clusterstatus": ("ClusterStatus",),
        "olmtool.images": ("ImageTarget",),
    },
)
