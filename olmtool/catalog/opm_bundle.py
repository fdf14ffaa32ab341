"""What opm v1.26 derives from a bundle, rule for rule, so that render's bytes are opm's.

Sources (operator-registry v1.26.0): ``pkg/registry/parse.go`` (``bundleParser``: which
manifests and metadata files count, ``derivedProperties``, ``propertySet``),
``pkg/registry/parse.go``/``ObjectsAndPropertiesFromBundle`` (how properties become the
bundle's: GVK sets, the package property, dependencies, sorting), ``alpha/action/render.go``
(``getRelatedImages``, ``moveBundleObjectsToEndOfPropertySlices``, related images sorted
by image) and ``pkg/registry/csv.go`` (``GetOperatorImages``).

Every property carries ``raw``: its value's JSON text as opm holds it. Values opm builds
itself (package, GVKs, package requirements, bundle objects) are written without HTML
escaping; values read from YAML metadata went through ``json.Marshal`` (sorted keys,
``\\u003c``...); values from the CSV's ``olm.properties`` annotation are kept as written.
Properties sort by type and then by that raw text, bundle objects last.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from olmtool import gojson, yamlread
from olmtool.bundle import Bundle as BundleFiles
from olmtool.bundle import format as fmt
from olmtool.catalog import declcfg as dc
from olmtool.errors import InputError

CSV_PROPERTIES_ANNOTATION = "olm.properties"


def _first_documents(files: BundleFiles) -> list[Any]:
    """The first document of each manifests/ file, by file name (opm decodes one object
    per file; hidden files and directories are never loaded), with a kind (Unstructured
    refuses an object without one, and opm skips that file)."""
    first: dict[str, Any] = {}  # file -> its first olmtool.bundle Object
    for obj in files.manifest_objects:
        first.setdefault(obj.file, obj)
    return [
        first[name]
        for name in sorted(first)
        if isinstance(first[name].document, dict) and first[name].kind
    ]


def first_csv(files: BundleFiles) -> Any:
    """The bundle's CSV object as opm picks it (the first, by file name), or None."""
    return next((o for o in _first_documents(files) if o.kind == fmt.CSV_KIND), None)


def bundle_objects(files: BundleFiles) -> list[dict[str, Any]]:
    """The objects opm reads from manifests/, in file order, only the first CSV."""
    found: list[dict[str, Any]] = []
    csv_seen = False
    for obj in _first_documents(files):
        if obj.kind == fmt.CSV_KIND:
            if csv_seen:
                continue
            csv_seen = True
        found.append(obj.document)
    return found


def properties(
    files: BundleFiles, csv: dict[str, Any], objects: list[dict[str, Any]], package: str
) -> list[dc.Property]:
    """The bundle's properties in opm's order (bundle objects are appended by the caller
    through :func:`with_objects`)."""
    metadata = list(_metadata_documents(files))
    listed_properties = _first_list(metadata, "properties")
    dependencies = _first_list(metadata, "dependencies")
    version = str(dig(csv, "spec.version") or "")

    # bundleParser: properties.yaml, then what is derived (package, CSV annotation, GVKs)
    derived = [_built(dc.PROP_PACKAGE, {"packageName": package, "version": version})]
    derived += _annotation_properties(csv)
    declared = listed_properties
    bundle_properties = _property_set(declared + _property_set(derived))

    provided: dict[tuple[str, str, str], None] = {}
    required: dict[tuple[str, str, str], None] = {}
    package_property: dc.Property | None = None
    others: list[dc.Property] = []
    for prop in bundle_properties:
        if prop.type == dc.PROP_GVK:
            provided[_gvk_key(prop)] = None
        elif prop.type == dc.PROP_PACKAGE:
            name, pkg_version = _package_fields(prop)
            package_property = _built(
                dc.PROP_PACKAGE, {"packageName": name, "version": pkg_version}
            )
        else:
            others.append(prop)
    package_required: list[dc.Property] = []
    for dependency in dependencies:
        if dependency.type == dc.PROP_GVK:
            required[_gvk_key(dependency)] = None
        elif dependency.type == dc.PROP_PACKAGE:
            name, version_range = _package_fields(dependency)
            package_required.append(
                _built(
                    dc.PROP_PACKAGE_REQUIRED, {"packageName": name, "versionRange": version_range}
                )
            )
        else:
            others.append(dependency)
    for key in provided_apis(objects, csv):
        provided[key] = None
    for key in required_apis(csv):
        required[key] = None

    found = [package_property or derived[0]]
    found += [_gvk(dc.PROP_GVK, key) for key in provided]
    found += [_gvk(dc.PROP_GVK_REQUIRED, key) for key in required]
    return found + package_required + others


def with_objects(found: list[dc.Property], objects: list[dc.Property]) -> list[dc.Property]:
    """Sorted by (type, raw value); then bundle objects (and CSV metadata) at the end, the
    manifests' in file order: opm v1.26 sorts the other properties only."""
    ordered = sorted(found, key=lambda p: (p.type, p.raw or ""))
    last = (dc.PROP_BUNDLE_OBJECT, dc.PROP_CSV_METADATA)
    moved = [p for p in ordered if p.type in last]
    return [p for p in ordered if p.type not in last] + moved + objects


def provided_apis(objects: list[dict[str, Any]], csv: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(group, kind, version) of every CRD version (v1beta1's ``spec.version`` too) and
    every owned API service: ``Bundle.ProvidedAPIs``."""
    found: list[tuple[str, str, str]] = []
    for document in objects:
        if document.get("kind") != fmt.CRD_KIND:
            continue
        api_version = str(document.get("apiVersion") or "")
        crd_version = api_version.rpartition("/")[2]
        if crd_version not in ("v1", "v1beta1"):
            continue
        group = str(dig(document, "spec.group") or "")
        kind = str(dig(document, "spec.names.kind") or "")
        for served in dig(document, "spec.versions") or []:
            if isinstance(served, dict):
                found.append((group, kind, str(served.get("name") or "")))
        single = dig(document, "spec.version")
        if crd_version == "v1beta1" and single:
            found.append((group, kind, str(single)))
    for owned in dig(csv, "spec.apiservicedefinitions.owned") or []:
        if isinstance(owned, dict):
            found.append(_api_key(owned))
    return found


def required_apis(csv: dict[str, Any]) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for required in dig(csv, "spec.customresourcedefinitions.required") or []:
        if not isinstance(required, dict):
            continue
        plural, dot, group = str(required.get("name") or "").partition(".")
        if not dot:
            raise InputError(f"couldn't parse plural.group from crd name: {plural}")
        found.append((group, str(required.get("kind") or ""), str(required.get("version") or "")))
    for required in dig(csv, "spec.apiservicedefinitions.required") or []:
        if isinstance(required, dict):
            found.append(_api_key(required))
    return found


def related_images(csv: dict[str, Any], image: str) -> list[dc.RelatedImage]:
    """``getRelatedImages``: every CSV relatedImages entry as written (duplicates too),
    the bundle image, then operator container images not already listed; by image."""
    found = [
        dc.RelatedImage(str(r.get("name") or ""), str(r.get("image") or ""))
        for r in (dig(csv, "spec.relatedImages") or [])
        if isinstance(r, dict)
    ]
    listed = {r.image for r in found}
    if image and image not in listed:
        found.append(dc.RelatedImage("", image))
    for operator_image in sorted(operator_images(csv)):
        if operator_image not in listed:
            found.append(dc.RelatedImage("", operator_image))
            listed.add(operator_image)
    # Go's sort.Slice; stable here (it is for the short lists bundles have)
    return sorted(found, key=lambda r: r.image)


def operator_images(csv: dict[str, Any]) -> set[str]:
    """Images of the deployments' containers and init containers (``GetOperatorImages``),
    for the ``deployment`` install strategy only."""
    install = dig(csv, "spec.install") or {}
    if not isinstance(install, dict) or install.get("strategy") != "deployment":
        return set()
    images: set[str] = set()
    for deployment in dig(install, "spec.deployments") or []:
        pod = dig(deployment, "spec.template.spec") if isinstance(deployment, dict) else None
        if not isinstance(pod, dict):
            continue
        for key in ("containers", "initContainers"):
            for container in pod.get(key) or []:
                if isinstance(container, dict):
                    images.add(str(container.get("image") or ""))
    return images


# --- properties as opm holds them -------------------------------------------------------


def _built(type_: str, value: dict[str, Any]) -> dc.Property:
    """A property opm builds itself (``property.MustBuild*``: no HTML escaping)."""
    return dc.Property(type_, value, raw=gojson.marshal(value, escape_html=False))


def _from_yaml(item: dict[str, Any]) -> dc.Property:
    """A property or dependency from a YAML metadata file: sigs.k8s.io/yaml turned it into
    JSON with ``json.Marshal`` before opm kept the value as a RawMessage."""
    value = _field(item, "value")
    return dc.Property(
        str(_field(item, "type") or ""), value, raw=gojson.marshal(value, unstructured=False)
    )


def _field(mapping: dict[str, Any], name: str) -> Any:
    """A Go struct field decoded from JSON: keys match case-insensitively, last one wins."""
    found = None
    for key, value in mapping.items():
        if key.lower() == name.lower():
            found = value
    return found


def _annotation_properties(csv: dict[str, Any]) -> list[dc.Property]:
    """The CSV's olm.properties annotation; opm only warns when it is not valid JSON."""
    text = (dig(csv, "metadata.annotations") or {}).get(CSV_PROPERTIES_ANNOTATION)
    if not isinstance(text, str) or not text:
        return []
    try:
        return list(_raw_property_list(text))
    except ValueError:
        return []


def _raw_property_list(text: str) -> Iterator[dc.Property]:
    """``[{"type": ..., "value": ...}, ...]`` with each value's text kept as written."""
    decoder = json.JSONDecoder()
    json.loads(text)  # invalid JSON is refused whole, as Go checks before decoding
    position = _skip(text, 0)
    if text[position] != "[":
        return
    position = _skip(text, position + 1)
    while text[position] != "]":
        start = position
        item, position = decoder.raw_decode(text, position)
        if isinstance(item, dict):
            yield _raw_item(text[start:position], item)
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)


def _raw_item(text: str, item: dict[str, Any]) -> dc.Property:
    """One element: Go matches field names case-insensitively, the last duplicate wins."""
    decoder = json.JSONDecoder()
    type_, value, raw = "", None, "null"
    position = _skip(text, 1)
    while text[position] != "}":
        key, position = decoder.raw_decode(text, position)
        position = _skip(text, _skip(text, position) + 1)  # past ':'
        start = position
        value_here, position = decoder.raw_decode(text, position)
        if key.lower() == "type" and isinstance(value_here, str):
            type_ = value_here
        elif key.lower() == "value":
            value, raw = value_here, text[start:position]
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
    return dc.Property(type_, value, raw=raw)


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _property_set(found: list[dc.Property]) -> list[dc.Property]:
    """``propertySet``: the first of each (type, raw value)."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for prop in found:
        key = (prop.type, prop.raw or "")
        if key not in seen:
            seen.add(key)
            unique.append(prop)
    return unique


def _struct_field(value: Any, name: str, what: str) -> str:
    """A string field of a JSON object decoded into a Go struct (case-insensitive keys)."""
    if not isinstance(value, dict):
        raise InputError(f"parse {what} property: expected an object, got {value!r}")
    found: Any = None
    for key, item in value.items():
        if key == name or key.lower() == name.lower():
            found = item
    if found is not None and not isinstance(found, str):
        raise InputError(f"parse {what} property: {name} must be a string, got {found!r}")
    return found or ""


def _gvk_key(prop: dc.Property) -> tuple[str, str, str]:
    return tuple(_struct_field(prop.value, f, prop.type) for f in ("group", "kind", "version"))  # type: ignore[return-value]


def _package_fields(prop: dc.Property) -> tuple[str, str]:
    return (
        _struct_field(prop.value, "packageName", prop.type),
        _struct_field(prop.value, "version", prop.type),
    )


def _gvk(type_: str, key: tuple[str, str, str]) -> dc.Property:
    group, kind, version = key
    return _built(type_, {"group": group, "kind": kind, "version": version})


def _api_key(mapping: dict[str, Any]) -> tuple[str, str, str]:
    return tuple(str(mapping.get(k) or "") for k in ("group", "kind", "version"))  # type: ignore[return-value]


# --- metadata/ as opm reads it ------------------------------------------------------------


def _metadata_documents(files: BundleFiles) -> Iterator[tuple[Any, str | None]]:
    """The first document of each file directly in metadata/, by name, and its text when
    it is JSON (starts with ``{``: Kubernetes' YAMLOrJSONDecoder then decodes JSON and a
    RawMessage keeps its text). Files that do not parse are skipped, as opm skips them."""
    prefix = f"{fmt.METADATA_DIR}/"
    for relative in sorted(files.files):
        if not relative.startswith(prefix) or "/" in relative[len(prefix) :]:
            continue
        try:
            text = files.files[relative].decode("utf-8")
            documents = yamlread.load_all(text)
        except (InputError, UnicodeDecodeError):
            continue
        if documents:
            is_json = text.lstrip().startswith("{")
            yield documents[0], text if is_json else None


def _first_list(metadata: list[tuple[Any, str | None]], key: str) -> list[dc.Property]:
    """The items of the first metadata file whose ``key`` decodes to a non-empty list of
    typed items (``DependenciesFile``/``PropertiesFile``), as properties."""
    for document, json_text in metadata:
        if not isinstance(document, dict):
            continue
        items = _field(document, key)
        if not isinstance(items, list) or not items:
            continue
        if not all(isinstance(i, dict) and isinstance(_field(i, "type") or "", str) for i in items):
            continue  # Go's decoding fails on the file: it is not this kind of file
        if json_text is not None:
            with contextlib.suppress(ValueError, IndexError):
                raw = _raw_member(json_text, key)
                if raw is not None:
                    return list(_raw_property_list(raw))
        return [_from_yaml(item) for item in items]
    return []


def _raw_member(text: str, key: str) -> str | None:
    """The text of member ``key`` (case-insensitive, the last wins) of the JSON object
    that ``text`` starts with."""
    decoder = json.JSONDecoder()
    position = _skip(text, 0) + 1  # past '{'
    found = None
    position = _skip(text, position)
    while text[position] != "}":
        name, position = decoder.raw_decode(text, position)
        position = _skip(text, _skip(text, position) + 1)  # past ':'
        start = position
        _, position = decoder.raw_decode(text, position)
        if isinstance(name, str) and name.lower() == key.lower():
            found = text[start:position]
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
    return found


def dig(document: Any, dotted: str) -> Any:
    """The value at a dotted path of mappings, or None where one is missing or not a mapping."""
    node: Any = document
    for key in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node
