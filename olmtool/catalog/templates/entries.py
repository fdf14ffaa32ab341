"""What the template schemas share: their names, bundle references and how they are
rendered, and the FBC entries (blobs or bundle references) of basic and substitutes
templates."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from olmtool.catalog import declcfg as dc
from olmtool.catalog.load import RawBlob, decode_blob, meta_keys
from olmtool.catalog.templates.documents import (
    Document,
    NodePath,
    get_list,
    get_str,
    kind_of,
    strict_fields,
)
from olmtool.errors import InputError

SCHEMA_BASIC = "olm.template.basic"
SCHEMA_SEMVER = "olm.semver"
SCHEMA_SUBSTITUTES = "olm.template.substitutes"
TEMPLATE_SCHEMAS = (SCHEMA_BASIC, SCHEMA_SEMVER, SCHEMA_SUBSTITUTES)
FBC_SCHEMAS = (dc.SCHEMA_PACKAGE, dc.SCHEMA_CHANNEL, dc.SCHEMA_BUNDLE, dc.SCHEMA_DEPRECATIONS)

BundleRenderer = Callable[[str], dc.Bundle]
"""Turns a template's bundle reference (image or path, as written) into an olm.bundle.

The bundle must carry its ``olm.package`` property (package name and version)."""


def single_bundle_renderer(render: Callable[[str], dc.DeclarativeConfig]) -> BundleRenderer:
    """Adapt a source renderer (reference -> catalog fragment, like ``opm render``) to a
    :data:`BundleRenderer`, requiring exactly one bundle as upstream does: a template line
    naming a catalog image or a directory of several bundles is an error, not a silent merge.
    """

    def renderer(reference: str) -> dc.Bundle:
        config = render(reference)
        if len(config.bundles) != 1:
            raise InputError(
                f"bundle reference {reference!r} rendered to {len(config.bundles)} bundles, "
                "expected exactly 1"
            )
        return config.bundles[0]

    return renderer


@dataclass(frozen=True)
class BundleRef:
    """A bundle reference written in a template, and where (for error messages)."""

    image: str
    line: int | None = None


def placed(bundle: dc.Bundle, file: str, line: int | None) -> dc.Bundle:
    """The rendered bundle, located at the template entry it came from (for findings)."""
    return dataclasses.replace(bundle, origin=dc.Origin(file, line))


def render_entries(
    config: dc.DeclarativeConfig, bundles: list[BundleRef], file: str, renderer: BundleRenderer
) -> dc.DeclarativeConfig:
    """A copy of the template's pass-through blobs plus its bundle references, rendered."""
    rendered = copy.deepcopy(config)
    for ref in bundles:
        rendered.bundles.append(placed(renderer(ref.image), file, ref.line))
    return rendered


def add_entries(
    doc: Document,
    fields: dict[str, tuple[str, Any]],
    config: dc.DeclarativeConfig,
    bundles: list[BundleRef],
    where: str,
    ignored: list[tuple[str, int]] | None = None,
) -> None:
    """The template's ``entries`` list (absent: none), each entry located by its index."""
    key, entries = get_list(doc, fields, "entries", (), where)
    for index, entry in enumerate(entries):
        add_entry(doc, entry, (key, index), config, bundles, f"{key}[{index}]", ignored)


def add_entry(
    doc: Document,
    entry: Any,
    path: NodePath,
    config: dc.DeclarativeConfig,
    bundles: list[BundleRef],
    where: str,
    ignored: list[tuple[str, int]] | None = None,
) -> None:
    """One FBC entry: a bundle reference to render later, or a blob decoded now."""
    line = doc.line_of(*path)
    if not isinstance(entry, dict):
        raise doc.error(f"{where} must be an object, found {kind_of(entry)}", *path)
    meta, duplicate = meta_keys(entry)
    if duplicate:
        raise doc.error(f"{where}: {duplicate}", *path)
    schema = meta.get("schema")
    if not isinstance(schema, str) or not schema:
        raise doc.error(f'{where} has no "schema" key', *path)
    if schema in TEMPLATE_SCHEMAS:
        raise doc.error(f"{where}: a template cannot contain another template ({schema})", *path)
    if schema == dc.SCHEMA_BUNDLE:
        bundles.append(bundle_ref(doc, entry, path, where, ignored))
        return
    problem = decode_blob(RawBlob(entry, dc.Origin(doc.file, line)), config)
    if problem is not None:
        raise InputError(problem.message, path=doc.file, line=line)


# What opm's basic template refuses in a bundle entry when set (``isBundleTemplate``):
# it is rendered from the image. Other keys (a ``name``) it decodes and ignores.
_RENDERED_BUNDLE_FIELDS = ("package", "properties", "relatedimages")


def bundle_ref(
    doc: Document,
    entry: dict[str, Any],
    path: NodePath,
    where: str,
    ignored: list[tuple[str, int]] | None = None,
) -> BundleRef:
    """``{schema: olm.bundle, image}``: package, properties or related images are refused
    (they are rendered from the image); other keys are ignored, as opm ignores them, when
    the caller collects them in ``ignored`` (the basic template), refused otherwise."""
    for key, value in entry.items():
        refused = key.lower() in _RENDERED_BUNDLE_FIELDS and value not in (None, "", [], {})
        if refused or (ignored is None and key.lower() not in ("schema", "image")):
            raise doc.error(
                f'{where}: a template olm.bundle entry holds only "schema" and "image" '
                f'(the rest is rendered from the image); found "{key}"',
                *path,
                key,
            )
    unknown: list[str] = []
    fields = strict_fields(doc, entry, path, ("schema", "image"), where, ignored=unknown)
    if ignored is not None:
        ignored += [(f"{where}: {key}", doc.line_of(*path, key)) for key in unknown]
    image = get_str(doc, fields, "image", path, where)
    if not image:
        raise doc.error(f'{where}: olm.bundle entry needs an "image"', *path)
    return BundleRef(image, doc.line_of(*path))
