"""Checks of one bundle blob: its properties, images, GVKs, version and name.

They need the whole blob (properties, ``olm.bundle.object`` payloads), so they run while
the model is built (:data:`olmtool.catalog.model.BundleInspector`), before only the lean
record is kept: :func:`inspect_bundle` is what validation and the catalog server pass.
"""

from __future__ import annotations

import functools
import re

from olmtool.catalog import declcfg as dc
from olmtool.catalog import properties as props
from olmtool.catalog.checks import bundle_scope, finding
from olmtool.catalog.crd_upgrade import crd_info
from olmtool.catalog.model import Bundle
from olmtool.errors import InputError
from olmtool.findings import Finding
from olmtool.images import is_common_reference, parse_reference
from olmtool.k8snames import DNS_SUBDOMAIN, dns1035_label_problem

_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")


class _BundleFindings:
    """Findings about one bundle: they all share its origin, package and scope."""

    def __init__(self, bundle: dc.Bundle) -> None:
        self.bundle = bundle
        self.scope = bundle_scope(bundle.name)
        self.found: list[Finding] = []

    def add(self, check: str, message: str) -> None:
        bundle = self.bundle
        self.found.append(finding(check, message, bundle.origin, bundle.package, self.scope))


def inspect_bundle(
    bundle: dc.Bundle, record: Bundle, *, decode_objects: bool = True, extra: bool = True
) -> tuple[list[Finding], str | None]:
    """Every finding about ``bundle`` alone, and its CSV's spec.replaces (None: no CSV).

    The objects are decoded once, here: CSVs are large, and the CSV's replaces is all
    later checks need of them. ``decode_objects=False`` leaves them alone (no
    olm.bundle.object finding, no CSV): the catalog server decodes them per request.
    ``extra=False`` leaves out the GVK checks opm does not make.
    """
    out = _BundleFindings(bundle)
    csv_replaces = _check_properties(bundle, record, out, decode_objects=decode_objects)
    _check_package_property(bundle, record, out)
    _check_images(bundle, out)
    if extra:
        _check_gvks(bundle, out)
    if len(bundle.properties_of(dc.PROP_CSV_METADATA)) > 1:
        out.add("csv-metadata-multiple", "more than one olm.csv.metadata property")
    return out.found, csv_replaces


def _check_properties(
    bundle: dc.Bundle, record: Bundle, out: _BundleFindings, *, decode_objects: bool
) -> str | None:
    csv_replaces = None
    crds = []
    for prop in bundle.properties:
        if prop.type == dc.PROP_BUNDLE_OBJECT:
            if not decode_objects:
                continue
            manifest, why = props.decode_bundle_object(prop.value)
            found = f"{prop.type}: {why}" if why else None
            kind = manifest.get("kind") if manifest is not None else None
            if kind == "ClusterServiceVersion":
                csv_replaces = str((manifest.get("spec") or {}).get("replaces") or "")
            elif kind == "CustomResourceDefinition" and (info := crd_info(manifest)):
                crds.append(info)
        else:
            found = props.problem(prop)
        if found:
            out.add("property-decode", f"parse property: {found}")
    record.crds = tuple(crds)
    return csv_replaces


def _check_package_property(bundle: dc.Bundle, record: Bundle, out: _BundleFindings) -> None:
    packages = bundle.properties_of(dc.PROP_PACKAGE)
    if len(packages) != 1:
        out.add(
            "package-property",
            f"must be exactly one property of type {dc.PROP_PACKAGE!r}, found {len(packages)}",
        )
        return
    value = packages[0].value
    if not isinstance(value, dict) or props.problem(packages[0]):
        return  # property-decode reported it
    if value.get("packageName") != bundle.package:
        out.add(
            "package-property",
            f"package {value.get('packageName')!r} does not match olm.package property's packageName",
        )
    if record.parsed_version is None:
        out.add("version", f"invalid version {bundle.version!r}: not a semantic version")
    release = bundle.release
    if release:
        expected = f"{bundle.package}-v{bundle.version}-{release}"
        if bundle.name != expected:
            out.add("release-name", f"a bundle with release {release!r} must be named {expected!r}")


def _check_images(bundle: dc.Bundle, out: _BundleFindings) -> None:
    for where, image in [
        ("image", bundle.image),
        *(("relatedImages", r.image) for r in bundle.related_images),
    ]:
        if image and not is_common_reference(image) and (problem := _reference_problem(image)):
            out.add("image-reference", f"{where} {image!r}: {problem}")
    for related in bundle.related_images:
        if not related.image:
            out.add("related-image-empty", f"related image {related.name!r} has no image")
    if not bundle.image and not bundle.properties_of(dc.PROP_BUNDLE_OBJECT):
        out.add("image-missing", "bundle image must be set (or olm.bundle.object properties given)")


def _check_gvks(bundle: dc.Bundle, out: _BundleFindings) -> None:
    for type_ in (dc.PROP_GVK, dc.PROP_GVK_REQUIRED):
        for group, version, kind in props.gvks(bundle, type_):
            why = _gvk_problem(group, version, kind)
            if why:
                out.add("gvk", f"{type_} {group}/{version}/{kind}: {why}")


@functools.lru_cache(maxsize=1 << 16)  # catalogs repeat the same images across bundles
def _reference_problem(image: str) -> str | None:
    try:
        parse_reference(image)
    except InputError as exc:
        return exc.message
    return None


def _gvk_problem(group: str, version: str, kind: str) -> str | None:
    if group and not DNS_SUBDOMAIN.match(group):
        return f"group {group!r} is not a DNS subdomain"
    # Kubernetes takes any DNS-1035 label as an API version (a CRD's versions[].name,
    # an APIService's spec.version): v1alpha, v2beta0 and v1-preview are valid, only the
    # conventional forms sort by stability. opm accepts any string; what no apiserver can
    # serve (V1, 1, v1.2) stays a finding.
    if dns1035_label_problem(version):
        return f"version {version!r} is not a Kubernetes API version (a DNS-1035 label like v1, v1alpha, v2beta3)"
    if not _KIND.match(kind):
        return f"kind {kind!r} is not UpperCamelCase"
    return None
