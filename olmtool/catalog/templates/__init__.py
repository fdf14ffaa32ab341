"""Catalog templates: short files that expand into a file-based catalog (opm's alpha/template).

Three template schemas, as operator-registry defines them:

``olm.template.basic``
    ``entries`` hold ordinary FBC blobs, except that an ``olm.bundle`` entry carries only
    ``schema`` and ``image``; each such entry is replaced by the rendered bundle. The same
    entries may also be written as a plain stream of blobs (YAML documents or concatenated
    JSON objects), the form the basic template had before it grew a wrapper.
``olm.semver``
    bundles listed under ``candidate`` / ``fast`` / ``stable``; channels named
    ``<archetype>-v<X>.<Y>`` (minor) and/or ``<archetype>-v<X>`` (major) and their
    replaces/skips edges are generated from the bundle versions, byte for byte like
    operator-registry's ``alpha/template/semver/semver.go`` (see :func:`semver_channels`),
    or with ``opm_compat`` 1.26 like opm v1.26.0's semver veneer (:mod:`.semver_opm126`).
``olm.template.substitutes``
    ``entries`` of FBC plus ``substitutions: [{name: <bundle ref>, base: <bundle name>}]``:
    the rendered bundle takes over the base bundle's edges and skips it.

Rendering a bundle reference is not done here: :func:`render_template` takes a
:data:`BundleRenderer` callback (``olmtool.catalog.rendering`` supplies the real one; tests pass
a fake), so template semantics stay independent of image pulling.

Modules: :mod:`.documents` reads template files with the line of every key,
:mod:`.entries` holds what the schemas share (bundle references, FBC entries), and
:mod:`.basic`, :mod:`.semver` and :mod:`.substitutes` parse and render one schema each.

Errors in the template itself are :class:`~olmtool.errors.InputError` naming the template
file and the line of the offending key or entry.
"""

from __future__ import annotations

from pathlib import Path

from olmtool.catalog import declcfg as dc
from olmtool.catalog.choices import OpmCompat
from olmtool.catalog.load import meta_keys
from olmtool.catalog.templates.basic import (
    BasicTemplate,
    parse_basic,
    parse_stream,
    render_basic,
)
from olmtool.catalog.templates.documents import read_documents
from olmtool.catalog.templates.entries import (
    FBC_SCHEMAS,
    SCHEMA_BASIC,
    SCHEMA_SEMVER,
    SCHEMA_SUBSTITUTES,
    TEMPLATE_SCHEMAS,
    BundleRef,
    BundleRenderer,
    single_bundle_renderer,
)
from olmtool.catalog.templates.semver import (
    ARCHETYPES,
    Archetype,
    SemverTemplate,
    StreamKind,
    parse_semver,
    render_semver,
    semver_channels,
)
from olmtool.catalog.templates.substitutes import (
    SubstitutesTemplate,
    Substitution,
    parse_substitutes,
    render_substitutes,
)
from olmtool.errors import InputError, display_path

Template = BasicTemplate | SemverTemplate | SubstitutesTemplate


def load_template(path: str | Path, opm_compat: OpmCompat = OpmCompat.latest) -> Template:
    """Read a template file and tell which template it is by its ``schema``.

    A file whose first blob is an FBC schema (or that holds several blobs) is the basic
    template's stream form. Problems are InputErrors with the file and line. ``opm_compat``
    1.26 reads (and later renders) a semver template as opm v1.26.0 does.
    """
    documents = read_documents(path)
    if not documents:
        raise InputError("the template is empty", path=display_path(path))
    first = documents[0]
    meta, duplicate = meta_keys(first.data)
    if duplicate:
        raise first.error(duplicate)
    schema = meta.get("schema")
    if schema in TEMPLATE_SCHEMAS:
        if len(documents) > 1:
            extra = documents[1]
            raise extra.error(f"a {schema} template is a single document; found another one")
        if schema == SCHEMA_BASIC:
            return parse_basic(first)
        if schema == SCHEMA_SEMVER:
            return parse_semver(first, OpmCompat(opm_compat))
        return parse_substitutes(first)
    if not isinstance(schema, str) or not schema:
        raise first.error('the template has no "schema" key')
    if schema in FBC_SCHEMAS or len(documents) > 1:
        return parse_stream(documents)
    expected = ", ".join(TEMPLATE_SCHEMAS)
    raise first.error(f'unknown template schema "{schema}" (expected one of {expected})')


def render_template(template: Template, renderer: BundleRenderer) -> dc.DeclarativeConfig:
    """Expand a template into a catalog fragment, rendering each bundle reference once.

    The template is not modified; rendering it twice gives equal results.
    """
    if isinstance(template, BasicTemplate):
        return render_basic(template, renderer)
    if isinstance(template, SemverTemplate):
        return render_semver(template, renderer)
    return render_substitutes(template, renderer)


__all__ = [
    "ARCHETYPES",
    "SCHEMA_BASIC",
    "SCHEMA_SEMVER",
    "SCHEMA_SUBSTITUTES",
    "TEMPLATE_SCHEMAS",
    "Archetype",
    "BasicTemplate",
    "BundleRef",
    "BundleRenderer",
    "SemverTemplate",
    "StreamKind",
    "SubstitutesTemplate",
    "Substitution",
    "Template",
    "load_template",
    "render_template",
    "semver_channels",
    "single_bundle_renderer",
]
