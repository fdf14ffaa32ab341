"""The operator's image, built without a container engine (as ``ko`` and ``jib`` do).

>>> from olmtool.images.build import build_operator_image, provenance
>>> built = build_operator_image(settings, root, labels={}, created=provenance(root).created)
>>> [layer.name for layer in built.layers]
['dependencies', 'application']
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.images.build.compose": (
            "LayerInfo",
            "OperatorImage",
            "Provenance",
            "build_operator_image",
            "merge_env",
            "provenance",
        ),
        "olmtool.images.build.settings": ("ImageSettings",),
        "olmtool.images.build.tags": ("bundle_tags",),
        "olmtool.images.build.wheels": (
            "PipError",
            "WheelSource",
            "cache_dir",
            "lock_requirements",
        ),
    },
)
