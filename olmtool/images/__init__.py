"""OCI images without a container engine: build, read, push and pull bundle images.

>>> from olmtool.images import build_image, push
>>> image = build_image({"manifests/csv.yaml": csv}, {"operators.operatorframework.io.bundle.package.v1": "etcd"})
>>> push(image, "127.0.0.1:5000/etcd/bundle:0.1.0")
"""

from olmtool._lazy import lazy_package

lazy_package(
    __name__,
    {
        "olmtool.images.build": (
            "ImageSettings",
            "OperatorImage",
            "PipError",
            "WheelSource",
            "build_operator_image",
            "bundle_tags",
            "lock_requirements",
            "provenance",
        ),
        "olmtool.images.distribution": (
            "Challenge",
            "Credentials",
            "RegistryClient",
            "RegistryError",
            "docker_credentials",
            "parse_challenges",
            "pull",
            "push",
        ),
        "olmtool.images.image": (
            "Blob",
            "Image",
            "assemble_image",
            "build_image",
            "digest_of",
            "layer_tar",
            "read_oci_layout",
            "write_oci_layout",
        ),
        "olmtool.images.localregistry": (
            "LocalRegistry",
            "LocalRegistryError",
            "find_registry_binary",
            "start_registry",
        ),
        "olmtool.images.reference": (
            "Reference",
            "expand_image",
            "is_loopback",
            "parse_reference",
        ),
        "olmtool.images.save": (
            "ImageTarget",
            "SavedImage",
            "save_image",
        ),
    },
)

__all__ = [
    "Blob",
    "Challenge",
    "Credentials",
    "Image",
    "ImageSettings",
    "ImageTarget",
    "LocalRegistry",
    "LocalRegistryError",
    "OperatorImage",
    "PipError",
    "Reference",
    "RegistryClient",
    "RegistryError",
    "SavedImage",
    "WheelSource",
    "assemble_image",
    "build_image",
    "build_operator_image",
    "bundle_tags",
    "digest_of",
    "docker_credentials",
    "expand_image",
    "find_registry_binary",
    "is_loopback",
    "layer_tar",
    "lock_requirements",
    "parse_challenges",
    "parse_reference",
    "provenance",
    "pull",
    "push",
    "read_oci_layout",
    "save_image",
    "start_registry",
    "write_oci_layout",
]
