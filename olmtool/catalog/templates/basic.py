"""``olm.template.basic``: FBC blobs kept as they are, plus bundle references to render."""

from __future__ import annotations

from dataclasses import dataclass, field

from olmtool.catalog import declcfg as dc
from olmtool.catalog.templates.documents import Document, strict_fields
from olmtool.catalog.templates.entries import (
    SCHEMA_BASIC,
    BundleRef,
    BundleRenderer,
    add_entries,
    add_entry,
    render_entries,
)


@dataclass
class BasicTemplate:
    """``olm.template.basic``: FBC blobs kept as they are, plus bundle references to render.

    ``config`` holds the decoded pass-through blobs (packages, channels, deprecations,
    other schemas); ``bundles`` the ``{schema: olm.bundle, image}`` entries in file order;
    ``ignored`` the keys opm ignores (as ``where: key``, with their line) for warnings.
    """

    file: str
    config: dc.DeclarativeConfig = field(default_factory=dc.DeclarativeConfig)
    bundles: list[BundleRef] = field(default_factory=list)
    line: int | None = None
    ignored: list[tuple[str, int]] = field(default_factory=list)


def parse_basic(doc: Document) -> BasicTemplate:
    """The wrapped form: ``{schema: olm.template.basic, entries: [...]}``.

    opm reads it with a plain ``json.Unmarshal`` (alpha/template/basic ``parseSpec``), so
    other top-level keys, such as a ``name``, are ignored rather than refused."""
    unknown: list[str] = []
    fields = strict_fields(doc, doc.data, (), ("schema", "entries"), SCHEMA_BASIC, ignored=unknown)
    if "entries" not in fields:
        raise doc.error(f'{SCHEMA_BASIC} template needs "entries" (a list of FBC blobs)')
    template = BasicTemplate(file=doc.file, line=doc.line)
    template.ignored += [(f"{SCHEMA_BASIC}: {key}", doc.line_of(key)) for key in unknown]
    add_entries(doc, fields, template.config, template.bundles, SCHEMA_BASIC, template.ignored)
    return template


def parse_stream(documents: list[Document]) -> BasicTemplate:
    """The older form: a plain stream of FBC blobs, one per document."""
    first = documents[0]
    template = BasicTemplate(file=first.file, line=first.line)
    for document in documents:
        add_entry(
            document, document.data, (), template.config, template.bundles, "blob", template.ignored
        )
    return template


def render_basic(template: BasicTemplate, renderer: BundleRenderer) -> dc.DeclarativeConfig:
    return render_entries(template.config, template.bundles, template.file, renderer)
