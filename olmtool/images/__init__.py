"""OCI images without a container engine: build, read, push and pull bundle images.

>>> from olmtool.images import build_image, push
>>> image = build_image({"manifests/csv.yaml": csv}, {"operators.operatorframework.io.bundle.package.v1": "etcd"})
>>> push(image, "127.0.0.1:5000/etcd/bundle:0.1.0")
"""

from olmtool.images.build import (
    ImageSettings,
    OperatorImage,
    PipError,
    WheelSource,
    build_operator_image,
    bundle_tags,
    lock_requirements,
    provenance,
)
from olmtool.images.distribution import (
    Challenge,
    Credentials,
    RegistryClient,
    RegistryError,
    docker_credentials,
    parse_challenges,
    pull,
    push,
)
from olmtool.images.image import (
    Blob,
    Image,
    assemble_image,
    build_image,
    digest_of,
    layer_tar,
    read_oci_layout,
    write_oci_layout,
)
from olmtool.images.localregistry import (
    LocalRegistry,
    LocalRegistryError,
    find_registry_binary,
    start_registry,
)
from olmtool.images.reference import Reference, is_loopback, parse_reference
from olmtool.images.save import ImageTarget, SavedImage, save_image

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
