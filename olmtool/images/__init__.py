"""OCI images without a container engine: build, read, push and pull bundle images.

>>> from olmtool.images import build_image, push
>>> image = build_image({"manifests/csv.yaml": csv}, {"operators.operatorframework.io.bundle.package.v1": "etcd"})
>>> push(image, "127.0.0.1:5000/etcd/bundle:0.1.0")
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.images.build": (
            "ImageSettings",
            "LayerInfo",
            "OperatorImage",
            "PipError",
            "WheelSource",
            "build_operator_image",
            "bundle_tags",
            "lock_requirements",
            "provenance",
        ),
        "olmtool.images.build.compose": ("gzip_layer",),
        "olmtool.images.catalogimage": (
            "configs_on_base",
            "serving_image",
        ),
        "olmtool.images.credentials": (
            "CredentialSource",
            "Credentials",
            "add_credential_source",
            "docker_credentials",
        ),
        "olmtool.images.distribution": (
            "Challenge",
            "RegistryClient",
            "RegistryError",
            "parse_challenges",
            "pull",
            "pull_all",
            "push",
        ),
        "olmtool.images.image": (
            "EPOCH",
            "Blob",
            "Image",
            "assemble_image",
            "build_image",
            "digest_of",
            "layer_tar",
            "read_oci_layout",
            "stack_image",
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
            "is_common_reference",
            "is_loopback",
            "parse_reference",
        ),
        "olmtool.images.save": (
            "ImageTarget",
            "SavedImage",
            "save_image",
        ),
        "olmtool.images.sources": (
            "LAYOUT_PREFIX",
            "PATH_PREFIXES",
            "Source",
            "SourceKind",
            "classify_source",
            "existing_directory",
            "is_registry_address",
            "looks_like_path",
            "missing_directory",
            "names_registry",
        ),
    },
)
