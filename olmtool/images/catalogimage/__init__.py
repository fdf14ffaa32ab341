"""Catalog images that serve, built without a container engine.

>>> from olmtool.images.catalogimage import serving_image
>>> built = serving_image({"configs/etcd/catalog.json": data}, labels=..., entrypoint=..., cmd=...)
>>> [layer.name for layer in built.layers]
['dependencies', 'olmtool', 'configs']

:func:`serving_image` stacks, on olmtool's Python base, the third-party distributions
``olmtool catalog serve`` imports (pinned to the versions this environment runs, installed
by pip for the image's platform), olmtool's own package, ``/usr/bin/grpc_health_probe``
and the catalog; :func:`configs_on_base` puts only the catalog on another image (an opm
image, as ``catalog.Dockerfile`` does with a container engine). What the image runs and
where the catalog goes are the caller's (:mod:`olmtool.catalog.publishing`).
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.images.catalogimage.build": (
            "PROBE_PATH",
            "PROBE_SCRIPT",
            "PYTHON",
            "SERVE_REQUIREMENTS",
            "ImageLayer",
            "StackedImage",
            "configs_on_base",
            "olmtool_files",
            "runtime_pins",
            "serving_image",
            "site_packages_tar",
        ),
    },
)
