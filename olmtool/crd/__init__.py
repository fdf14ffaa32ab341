"""CustomResourceDefinitions from typed Python schemas (what controller-gen does for Go).

Declare the API once with pydantic models and markers::

    from typing import Annotated
    from pydantic import Field
    from olmtool import crd

    class Spec(crd.Schema):
        replicas: Annotated[int, Field(ge=1, le=7)] = 3
        storage_size: crd.Quantity = "1Gi"

    etcd_cluster = crd.CustomResource(
        group="etcd.olmtool.dev", kind="EtcdCluster",
        versions=(crd.Version(name="v1beta1", spec=Spec, storage=True),),
    )

then ``olmtool crd generate`` (or :func:`generate_crds`) writes the CRD, and
:func:`check_crd` / :func:`validate_object` check CRDs and objects like the apiserver.
"""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.crd.apitypes": ("decode_crd",),
        "olmtool.crd.generate": (
            "GeneratedFile",
            "LoadedResource",
            "generate_crds",
            "load_resources",
            "render_crd",
            "sync_files",
        ),
        "olmtool.crd.lint": (
            "LintResult",
            "check_crd_files",
        ),
        "olmtool.crd.markers": (
            "EmbeddedResource",
            "Format",
            "ListType",
            "MapType",
            "Marker",
            "PreserveUnknownFields",
            "Rule",
            "object_markers",
        ),
        "olmtool.crd.openapi": ("model_to_openapi",),
        "olmtool.crd.upgrade": (
            "RULE_CHECKS",
            "STORED_VERSIONS",
            "CrdChange",
            "compare_crds",
            "crd_name",
            "olm_v0_message",
            "storage_versions",
            "version_names",
        ),
        "olmtool.crd.resource": (
            "CustomResource",
            "PrinterColumn",
            "Scale",
            "Version",
            "pluralize",
            "version_sort_key",
        ),
        "olmtool.crd.structural": (
            "Problem",
            "check_crd",
            "check_schema",
        ),
        "olmtool.crd.types": (
            "Condition",
            "EmbeddedObject",
            "IntOrString",
            "Quantity",
            "RawObject",
            "Schema",
        ),
        "olmtool.crd.validation": (
            "ObjectReport",
            "SchemaViolation",
            "openapi_to_jsonschema",
            "validate_against",
            "validate_object",
        ),
    },
)
