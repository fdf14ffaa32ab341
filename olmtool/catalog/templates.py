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
    operator-registry's ``alpha/template/semver/semver.go`` (see :func:`semver_channels`).
``olm.template.substitutes``
    ``entries`` of FBC plus ``substitutions: [{name: <bundle ref>, base: <bundle name>}]``:
    the rendered bundle takes over the base bundle's edges and skips it.

Rendering a bundle reference is not done here: :func:`render_template` takes a
:data:`BundleRenderer` callback (``olmtool.catalog.render`` supplies the real one; tests pass
a fake), so template semantics stay independent of image pulling.

Errors in the template itself are :class:`~olmtool.errors.InputError` naming the template
file and the line of the offending key or entry.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import semver
import yaml

from olmtool import yamlio
from olmtool.catalog import declcfg as dc
from olmtool.catalog.load import RawBlob, decode_blob, meta_keys, parse_blobs
from olmtool.errors import InputError, display_path
from olmtool.versions import parse_version

SCHEMA_BASIC = "olm.template.basic"
SCHEMA_SEMVER = "olm.semver"
SCHEMA_SUBSTITUTES = "olm.template.substitutes"
TEMPLATE_SCHEMAS = (SCHEMA_BASIC, SCHEMA_SEMVER, SCHEMA_SUBSTITUTES)
_FBC_SCHEMAS = (dc.SCHEMA_PACKAGE, dc.SCHEMA_CHANNEL, dc.SCHEMA_BUNDLE, dc.SCHEMA_DEPRECATIONS)

#: Channel archetypes of the semver template, least stable first (upstream's priorities).
ARCHETYPES = ("candidate", "fast", "stable")
Archetype = Literal["candidate", "fast", "stable"]
StreamKind = Literal["minor", "major"]
_ARCHETYPE_RANK = {name: rank for rank, name in enumerate(ARCHETYPES)}
# upstream's streamTypePriorities: minor 2, major 1 (and "" 0, which never reaches a channel)
_KIND_RANK = {"major": 1, "minor": 2}

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


# --- template types ----------------------------------------------------------------------


@dataclass(frozen=True)
class BundleRef:
    """A bundle reference written in a template, and where (for error messages)."""

    image: str
    line: int | None = None


@dataclass
class BasicTemplate:
    """``olm.template.basic``: FBC blobs kept as they are, plus bundle references to render.

    ``config`` holds the decoded pass-through blobs (packages, channels, deprecations,
    other schemas); ``bundles`` the ``{schema: olm.bundle, image}`` entries in file order.
    """

    file: str
    config: dc.DeclarativeConfig = field(default_factory=dc.DeclarativeConfig)
    bundles: list[BundleRef] = field(default_factory=list)
    line: int | None = None


@dataclass
class SemverTemplate:
    """``olm.semver`` after upstream's defaulting: at least one channel kind is generated.

    ``default_channel_type_preference`` is always resolved: an unset preference follows the
    generated kind (minor when both are generated), as upstream's readFile does.
    """

    file: str
    generate_major_channels: bool = False
    generate_minor_channels: bool = True
    default_channel_type_preference: StreamKind = "minor"
    candidate: list[BundleRef] = field(default_factory=list)
    fast: list[BundleRef] = field(default_factory=list)
    stable: list[BundleRef] = field(default_factory=list)
    line: int | None = None

    def bundles_of(self, archetype: str) -> list[BundleRef]:
        return {"candidate": self.candidate, "fast": self.fast, "stable": self.stable}[archetype]


@dataclass(frozen=True)
class Substitution:
    """``{name, base}``: the bundle rendered from ``name`` takes over bundle ``base``'s edges."""

    name: str
    base: str
    line: int | None = None


@dataclass
class SubstitutesTemplate:
    """``olm.template.substitutes``: FBC entries (bundle references allowed, as in the basic
    template) and substitutions applied in order."""

    file: str
    config: dc.DeclarativeConfig = field(default_factory=dc.DeclarativeConfig)
    bundles: list[BundleRef] = field(default_factory=list)
    substitutions: list[Substitution] = field(default_factory=list)
    line: int | None = None


Template = BasicTemplate | SemverTemplate | SubstitutesTemplate


# --- reading template files with line numbers ---------------------------------------------

_Path = tuple[str | int, ...]


@dataclass(frozen=True)
class _Document:
    """One parsed document plus the line of every key and list item (best effort)."""

    data: dict[str, Any]
    file: str
    line: int
    lines: Mapping[_Path, int]

    def line_of(self, *path: str | int) -> int:
        """Line of the deepest known node along ``path`` (the document start at worst)."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(path[:end])
            if found:
                return found
        return self.line

    def error(self, message: str, *path: str | int) -> InputError:
        return InputError(message, path=self.file, line=self.line_of(*path))


def _read_documents(path: str | Path) -> list[_Document]:
    """The file's blobs, parsed like catalog files (so JSON and YAML behave identically)."""
    file = display_path(path)
    text = yamlio.read_text(path)
    blobs, problems = parse_blobs(text, file)
    if problems:
        raise InputError(problems[0].message, path=file, line=problems[0].line)
    maps = _line_maps(text, len(blobs))
    return [
        _Document(blob.data, file, blob.origin.line or 1, maps[index] if maps else {})
        for index, blob in enumerate(blobs)
    ]


def _line_maps(text: str, count: int) -> list[dict[_Path, int]] | None:
    """Per document, the line of every mapping key and sequence item.

    Composed separately from the data (nodes keep positions, data does not). Concatenated
    JSON objects are not YAML; then only document start lines are known (None here).
    """
    try:
        nodes = [
            node
            for node in yaml.compose_all(text, Loader=_COMPOSER)
            if not (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null")
        ]
    except yaml.YAMLError:
        return None
    if len(nodes) != count or not all(isinstance(n, yaml.MappingNode) for n in nodes):
        return None
    maps = []
    for node in nodes:
        lines: dict[_Path, int] = {}
        _collect_lines(node, (), lines, set())
        maps.append(lines)
    return maps


_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _collect_lines(node: yaml.Node, path: _Path, out: dict[_Path, int], seen: set[int]) -> None:
    if id(node) in seen:  # an alias back into its own anchor
        return
    seen = seen | {id(node)}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = (*path, key.value)
                out[child] = key.start_mark.line + 1
                _collect_lines(value, child, out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            out[child] = item.start_mark.line + 1
            _collect_lines(item, child, out, seen)


# --- strict decoding helpers (sigs.k8s.io/yaml UnmarshalStrict: unknown keys are errors) ---


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "null")


def _fields(
    doc: _Document, mapping: Any, path: _Path, allowed: Sequence[str], where: str
) -> dict[str, tuple[str, Any]]:
    """Folded key -> (key as written, value); unknown or case-duplicated keys are errors.

    Keys match case-insensitively because Go's encoding/json matches struct fields so.
    """
    if not isinstance(mapping, dict):
        raise doc.error(f"{where} must be an object, found {_kind_of(mapping)}", *path)
    folded: dict[str, tuple[str, Any]] = {}
    wanted = {name.lower(): name for name in allowed}
    for key, value in mapping.items():
        canonical = wanted.get(key.lower())
        if canonical is None:
            expected = ", ".join(allowed)
            raise doc.error(f'{where}: unknown key "{key}" (expected {expected})', *path, key)
        if key.lower() in folded:
            first = folded[key.lower()][0]
            raise doc.error(f'{where}: duplicate key "{key}" (also as "{first}")', *path, key)
        folded[key.lower()] = (key, value)
    return folded


def _bool(doc: _Document, fields: dict[str, tuple[str, Any]], name: str, path: _Path) -> bool:
    key, value = fields.get(name.lower(), (name, None))
    if value is None:
        return False
    if not isinstance(value, bool):
        raise doc.error(f"{key} must be true or false, found {_kind_of(value)}", *path, key)
    return value


def _str(
    doc: _Document, fields: dict[str, tuple[str, Any]], name: str, path: _Path, where: str
) -> str:
    key, value = fields.get(name.lower(), (name, None))
    if value is None:
        return ""
    if not isinstance(value, str):
        raise doc.error(f"{where}.{key} must be a string, found {_kind_of(value)}", *path, key)
    return value


def _list(
    doc: _Document, fields: dict[str, tuple[str, Any]], name: str, path: _Path, where: str
) -> tuple[str, list[Any]]:
    key, value = fields.get(name.lower(), (name, None))
    if value is None:
        return key, []
    if not isinstance(value, list):
        raise doc.error(f"{where}.{key} must be a list, found {_kind_of(value)}", *path, key)
    return key, value


# --- load_template --------------------------------------------------------------------------


def load_template(path: str | Path) -> Template:
    """Read a template file and tell which template it is by its ``schema``.

    A file whose first blob is an FBC schema (or that holds several blobs) is the basic
    template's stream form. Problems are InputErrors with the file and line.
    """
    documents = _read_documents(path)
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
            return _parse_basic(first)
        if schema == SCHEMA_SEMVER:
            return _parse_semver(first)
        return _parse_substitutes(first)
    if not isinstance(schema, str) or not schema:
        raise first.error('the template has no "schema" key')
    if schema in _FBC_SCHEMAS or len(documents) > 1:
        template = BasicTemplate(file=first.file, line=first.line)
        for document in documents:
            _add_entry(document, document.data, (), template.config, template.bundles, "blob")
        return template
    expected = ", ".join(TEMPLATE_SCHEMAS)
    raise first.error(f'unknown template schema "{schema}" (expected one of {expected})')


def _add_entry(
    doc: _Document,
    entry: Any,
    path: _Path,
    config: dc.DeclarativeConfig,
    bundles: list[BundleRef],
    where: str,
) -> None:
    """One FBC entry: a bundle reference to render later, or a blob decoded now."""
    line = doc.line_of(*path)
    if not isinstance(entry, dict):
        raise doc.error(f"{where} must be an object, found {_kind_of(entry)}", *path)
    meta, duplicate = meta_keys(entry)
    if duplicate:
        raise doc.error(f"{where}: {duplicate}", *path)
    schema = meta.get("schema")
    if not isinstance(schema, str) or not schema:
        raise doc.error(f'{where} has no "schema" key', *path)
    if schema in TEMPLATE_SCHEMAS:
        raise doc.error(f"{where}: a template cannot contain another template ({schema})", *path)
    if schema == dc.SCHEMA_BUNDLE:
        bundles.append(_bundle_ref(doc, entry, path, where))
        return
    problem = decode_blob(RawBlob(entry, dc.Origin(doc.file, line)), config)
    if problem is not None:
        raise InputError(problem.message, path=doc.file, line=line)


def _bundle_ref(doc: _Document, entry: dict[str, Any], path: _Path, where: str) -> BundleRef:
    """``{schema: olm.bundle, image}`` and nothing else: anything more is rendered, not typed."""
    for key in entry:
        if key.lower() not in ("schema", "image"):
            raise doc.error(
                f'{where}: a template olm.bundle entry holds only "schema" and "image" '
                f'(the rest is rendered from the image); found "{key}"',
                *path,
                key,
            )
    fields = _fields(doc, entry, path, ("schema", "image"), where)
    image = _str(doc, fields, "image", path, where)
    if not image:
        raise doc.error(f'{where}: olm.bundle entry needs an "image"', *path)
    return BundleRef(image, doc.line_of(*path))


def _parse_basic(doc: _Document) -> BasicTemplate:
    fields = _fields(doc, doc.data, (), ("schema", "entries"), SCHEMA_BASIC)
    if "entries" not in fields:
        raise doc.error(f'{SCHEMA_BASIC} template needs "entries" (a list of FBC blobs)')
    key, entries = _list(doc, fields, "entries", (), SCHEMA_BASIC)
    template = BasicTemplate(file=doc.file, line=doc.line)
    for index, entry in enumerate(entries):
        where = f"{key}[{index}]"
        _add_entry(doc, entry, (key, index), template.config, template.bundles, where)
    return template


def _parse_semver(doc: _Document) -> SemverTemplate:
    allowed = (
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "defaultChannelTypePreference",
        *ARCHETYPES,
    )
    fields = _fields(doc, doc.data, (), allowed, SCHEMA_SEMVER)
    major = _bool(doc, fields, "generateMajorChannels", ())
    minor = _bool(doc, fields, "generateMinorChannels", ())
    if not major and not minor:  # upstream: no generate option selected -> minor channels
        minor = True
    pref_key = fields.get("defaultchanneltypepreference", ("defaultChannelTypePreference", None))[0]
    written = _str(doc, fields, "defaultChannelTypePreference", (), SCHEMA_SEMVER)
    preference: StreamKind
    if written == "":  # unset: follow the generated kind, minor first (upstream readFile)
        preference = "minor" if minor else "major"
    elif written == "minor" or written == "major":
        preference = written
        if not (minor if written == "minor" else major):
            setting = "generateMinorChannels" if written == "minor" else "generateMajorChannels"
            raise doc.error(
                f'defaultChannelTypePreference "{written}" needs {written}-version channels '
                f"({setting}: true)",
                pref_key,
            )
    else:
        raise doc.error(
            f'unknown defaultChannelTypePreference "{written}" (valid: "minor", "major")',
            pref_key,
        )
    template = SemverTemplate(
        file=doc.file,
        generate_major_channels=major,
        generate_minor_channels=minor,
        default_channel_type_preference=preference,
        line=doc.line,
    )
    for archetype in ARCHETYPES:
        template.bundles_of(archetype).extend(_semver_bundles(doc, fields, archetype))
    if not any(template.bundles_of(a) for a in ARCHETYPES):
        raise doc.error(
            f"{SCHEMA_SEMVER} template lists no bundles (under candidate, fast or stable)"
        )
    return template


def _semver_bundles(
    doc: _Document, fields: dict[str, tuple[str, Any]], archetype: str
) -> Iterator[BundleRef]:
    key, value = fields.get(archetype, (archetype, None))
    if value is None:
        return
    channel = _fields(doc, value, (key,), ("bundles",), key)
    bundles_key, bundles = _list(doc, channel, "bundles", (key,), key)
    for index, item in enumerate(bundles):
        path = (key, bundles_key, index)
        where = f"{key}.{bundles_key}[{index}]"
        entry = _fields(doc, item, path, ("image",), where)
        image = _str(doc, entry, "image", path, where)
        if not image:
            raise doc.error(f'{where} needs an "image"', *path)
        yield BundleRef(image, doc.line_of(*path))


def _parse_substitutes(doc: _Document) -> SubstitutesTemplate:
    allowed = ("schema", "entries", "substitutions")
    fields = _fields(doc, doc.data, (), allowed, SCHEMA_SUBSTITUTES)
    template = SubstitutesTemplate(file=doc.file, line=doc.line)
    key, entries = _list(doc, fields, "entries", (), SCHEMA_SUBSTITUTES)
    for index, entry in enumerate(entries):
        where = f"{key}[{index}]"
        _add_entry(doc, entry, (key, index), template.config, template.bundles, where)
    key, substitutions = _list(doc, fields, "substitutions", (), SCHEMA_SUBSTITUTES)
    for index, item in enumerate(substitutions):
        path = (key, index)
        where = f"{key}[{index}]"
        sub = _fields(doc, item, path, ("name", "base"), where)
        name = _str(doc, sub, "name", path, where)
        base = _str(doc, sub, "base", path, where)
        if not name or not base:
            raise doc.error(f'{where} needs both "name" (a bundle reference) and "base"', *path)
        if name == base:
            raise doc.error(f"{where}: name and base are the same ({name!r})", *path)
        template.substitutions.append(Substitution(name, base, doc.line_of(*path)))
    return template


# --- render_template ------------------------------------------------------------------------


def render_template(template: Template, renderer: BundleRenderer) -> dc.DeclarativeConfig:
    """Expand a template into a catalog fragment, rendering each bundle reference once.

    The template is not modified; rendering it twice gives equal results.
    """
    if isinstance(template, BasicTemplate):
        return _render_basic(template, renderer)
    if isinstance(template, SemverTemplate):
        return _render_semver(template, renderer)
    return _render_substitutes(template, renderer)


def _placed(bundle: dc.Bundle, file: str, line: int | None) -> dc.Bundle:
    """The rendered bundle, located at the template entry it came from (for findings)."""
    return dataclasses.replace(bundle, origin=dc.Origin(file, line))


def _render_basic(template: BasicTemplate, renderer: BundleRenderer) -> dc.DeclarativeConfig:
    config = copy.deepcopy(template.config)
    for ref in template.bundles:
        config.bundles.append(_placed(renderer(ref.image), template.file, ref.line))
    return config


# --- semver template --------------------------------------------------------------------


def _version_key(version: semver.Version) -> tuple[Any, ...]:
    """Precedence as blang/semver compares (build metadata ignored; numeric identifiers
    below alphanumeric ones; a shorter prerelease below a longer one it prefixes)."""
    if not version.prerelease:
        return (version.major, version.minor, version.patch, (1,))
    identifiers = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in version.prerelease.split(".")
    )
    return (version.major, version.minor, version.patch, (0, identifiers))


def _package_version(bundle: dc.Bundle, ref: BundleRef, file: str) -> tuple[str, semver.Version]:
    """The bundle's olm.package property: package name and semantic version."""
    properties = bundle.properties_of(dc.PROP_PACKAGE)
    where = f'bundle "{bundle.name}" (from {ref.image})'
    if len(properties) != 1 or not isinstance(properties[0].value, dict):
        raise InputError(
            f"{where} has {len(properties)} olm.package properties, expected exactly 1",
            path=file,
            line=ref.line,
        )
    value = properties[0].value
    package, version = value.get("packageName"), value.get("version")
    if not isinstance(package, str) or not package:
        raise InputError(f"{where} has no package name", path=file, line=ref.line)
    try:
        return package, parse_version(version if isinstance(version, str) else "")
    except ValueError:
        raise InputError(
            f"{where} has version {version!r}, which is not a semantic version; "
            "the semver template orders bundles by version",
            path=file,
            line=ref.line,
        ) from None


def _render_semver(template: SemverTemplate, renderer: BundleRenderer) -> dc.DeclarativeConfig:
    file = template.file
    # render every distinct reference once, in template order (candidate, fast, stable)
    rendered: dict[str, dc.Bundle] = {}
    source_of: dict[str, BundleRef] = {}  # bundle name -> the reference that produced it
    for archetype in ARCHETYPES:
        for ref in template.bundles_of(archetype):
            if ref.image in rendered:
                continue
            bundle = _placed(renderer(ref.image), file, ref.line)
            other = source_of.get(bundle.name)
            if other is not None:
                raise InputError(
                    f'{ref.image} and {other.image} both render to bundle "{bundle.name}"',
                    path=file,
                    line=ref.line,
                )
            rendered[ref.image] = bundle
            source_of[bundle.name] = ref

    package = ""
    versions: dict[str, dict[str, semver.Version]] = {}
    for archetype in ARCHETYPES:
        names: dict[str, semver.Version] = {}
        stripped: dict[str, str] = {}  # version without build metadata -> bundle name
        for ref in template.bundles_of(archetype):
            bundle = rendered[ref.image]
            bundle_package, version = _package_version(bundle, ref, file)
            if not package:
                package = bundle_package  # upstream: the first bundle names the package
            elif bundle_package != package:
                raise InputError(
                    f'bundle "{bundle.name}" (from {ref.image}) belongs to package '
                    f'"{bundle_package}", but the template\'s first bundle belongs to "{package}"',
                    path=file,
                    line=ref.line,
                )
            if bundle.name in names:
                raise InputError(
                    f'bundle "{bundle.name}" ({ref.image}) is listed twice under {archetype}',
                    path=file,
                    line=ref.line,
                )
            plain = str(version.replace(build=None))
            clash = stripped.get(plain)
            if clash is not None:
                if version.build or names[clash].build:
                    problem = "differ only in build metadata, which cannot be ordered"
                else:
                    problem = "have the same version"
                raise InputError(
                    f'bundles "{clash}" ({names[clash]}) and "{bundle.name}" ({version}) under '
                    f"{archetype} {problem}",
                    path=file,
                    line=ref.line,
                )
            stripped[plain] = bundle.name
            names[bundle.name] = version
        versions[archetype] = names

    channels, default_channel = semver_channels(
        package,
        versions,
        major=template.generate_major_channels,
        minor=template.generate_minor_channels,
        preference=template.default_channel_type_preference,
        origin=dc.Origin(file, template.line),
    )
    return dc.DeclarativeConfig(
        packages=[
            dc.Package(
                name=package,
                default_channel=default_channel,
                origin=dc.Origin(file, template.line),
            )
        ],
        channels=channels,
        bundles=list(rendered.values()),
    )


@dataclass
class _Slot:
    """One channel entry with what the edge walk sorts and compares (upstream entryTuple)."""

    archetype: str
    kind: str
    version: semver.Version
    entry: dc.ChannelEntry

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (_ARCHETYPE_RANK[self.archetype], _KIND_RANK[self.kind], _version_key(self.version))


def semver_channels(
    package: str,
    versions: Mapping[str, Mapping[str, semver.Version]],
    *,
    major: bool,
    minor: bool,
    preference: str,
    origin: dc.Origin | None = None,
) -> tuple[list[dc.Channel], str]:
    """The semver template's channels (sorted by name) and the package's default channel.

    ``versions`` maps an archetype (candidate, fast, stable) to bundle name -> version.
    This is upstream's generateChannels + linkChannels:

    * Each bundle joins ``<arch>-v<X>`` (``major``) and/or ``<arch>-v<X>.<Y>`` (``minor``);
      entries are appended in ascending version order.
    * Edges: every entry becomes an (archetype, kind, version) tuple; the tuples are sorted
      (candidate < fast < stable, major < minor, then version) and walked in consecutive
      pairs. When archetype, kind, X or Y changes, the previous tuple (the max-Z of its
      Y-stream) gets ``replaces`` = the max-Z of the Y-stream before it, and ``skips`` =
      every version accumulated so far in the same archetype/kind/X except that replaces
      target (sorted). The accumulator resets when archetype, kind or X changes, not when
      Y does, so no edge ever crosses a major version; non-max-Z entries get no edges.
      In minor channels those edges point at bundles of the previous minor channel, as
      upstream's do.
    * Default channel ("high-water" channel), deterministically: among all generated
      channels, the greatest by (archetype rank, version of the channel's first — lowest —
      bundle, kind == ``preference``, minor over major). This is upstream's rule, which
      compares channels when they are created, i.e. at their lowest version; so with both
      kinds generated, ``stable-v3.2`` (first bundle 3.2.0) beats ``stable-v3`` (first
      bundle 3.1.0) even when ``preference`` is major. Unlike upstream (which starts from
      a phantom candidate channel at 0.0.0 and so can end with no default at all when every
      bundle is a 0.0.0 prerelease), some generated channel is always chosen.
    """
    unknown = set(versions) - set(ARCHETYPES)
    if unknown:
        raise ValueError(f"unknown channel archetypes: {', '.join(sorted(unknown))}")
    channels: dict[str, dc.Channel] = {}
    slots: list[_Slot] = []
    best: tuple[tuple[Any, ...], str] | None = None
    for archetype in ARCHETYPES:
        bundles = versions.get(archetype) or {}
        for name in sorted(bundles, key=lambda n: (_version_key(bundles[n]), n)):
            version = bundles[name]
            kinds: list[tuple[str, str]] = []
            if major:
                kinds.append(("major", f"{archetype}-v{version.major}"))
            if minor:
                kinds.append(("minor", f"{archetype}-v{version.major}.{version.minor}"))
            for kind, channel_name in kinds:
                channel = channels.get(channel_name)
                if channel is None:
                    channel = dc.Channel(channel_name, package, origin=origin or dc.Origin())
                    channels[channel_name] = channel
                    rank = (
                        _ARCHETYPE_RANK[archetype],
                        _version_key(version),
                        kind == preference,
                        _KIND_RANK[kind],
                    )
                    if best is None or rank > best[0]:
                        best = (rank, channel_name)
                entry = dc.ChannelEntry(name)
                channel.entries.append(entry)
                slots.append(_Slot(archetype, kind, version, entry))
    _link(slots)
    return [channels[name] for name in sorted(channels)], best[1] if best else ""


def _link(slots: list[_Slot]) -> None:
    """Upstream's linkChannels: set replaces/skips on each Y-stream's max-Z entry."""
    slots.sort(key=lambda s: s.sort_key)
    replaces = ""
    skips: set[str] = set()

    def new_stream(prev: _Slot, cur: _Slot) -> bool:
        return (
            prev.archetype != cur.archetype
            or prev.kind != cur.kind
            or prev.version.major != cur.version.major
        )

    def finish(slot: _Slot) -> None:
        slot.entry.replaces = replaces
        rest = sorted(skips - {replaces})
        if rest:
            slot.entry.skips = rest

    for prev, cur in pairwise(slots):
        y_change = (prev.version.major, prev.version.minor) != (
            cur.version.major,
            cur.version.minor,
        )
        if new_stream(prev, cur) or y_change:
            finish(prev)
        if new_stream(prev, cur):
            replaces, skips = "", set()
        else:
            if y_change:
                replaces = prev.entry.name
            skips.add(prev.entry.name)
    if len(slots) > 1 and not new_stream(slots[-2], slots[-1]):
        finish(slots[-1])


# --- substitutes template ---------------------------------------------------------------


def _render_substitutes(
    template: SubstitutesTemplate, renderer: BundleRenderer
) -> dc.DeclarativeConfig:
    config = copy.deepcopy(template.config)
    for ref in template.bundles:
        config.bundles.append(_placed(renderer(ref.image), template.file, ref.line))
    for substitution in template.substitutions:
        bundle = _placed(renderer(substitution.name), template.file, substitution.line)
        _substitute(config, substitution, bundle, template.file)
    return config


def _substitute(
    config: dc.DeclarativeConfig, substitution: Substitution, bundle: dc.Bundle, file: str
) -> None:
    """Upstream's processSubstitution, with its model validation reduced to the checks that
    concern the substitution itself (the result is still an ordinary catalog to validate)."""
    base = substitution.base
    where = f"substitution {base} -> {substitution.name}"
    holders = [c for c in config.channels if any(e.name == base for e in c.entries)]
    if not holders:
        raise InputError(
            f'{where}: base bundle "{base}" is not an entry of any channel',
            path=file,
            line=substitution.line,
        )
    if any(b.name == bundle.name for b in config.bundles):
        raise InputError(
            f'{where}: the substitute renders to bundle "{bundle.name}", which already exists',
            path=file,
            line=substitution.line,
        )
    for channel in holders:
        if channel.package != bundle.package:
            raise InputError(
                f'{where}: the substitute belongs to package "{bundle.package}", but channel '
                f'"{channel.name}" to "{channel.package}"',
                path=file,
                line=substitution.line,
            )
    for channel in holders:
        originals = len(channel.entries)
        added: list[dc.ChannelEntry] = []
        for entry in channel.entries:
            if entry.name != base:
                continue
            added.append(
                dc.ChannelEntry(bundle.name, entry.replaces, [*entry.skips, base], entry.skip_range)
            )
            entry.replaces, entry.skips, entry.skip_range = "", [], ""
        # upstream appends the new entries in reverse order of the base's occurrences
        channel.entries.extend(reversed(added))
        for entry in channel.entries[:originals]:
            if entry.replaces == base:
                entry.replaces = bundle.name
                entry.skips = [*entry.skips, base]
            elif base in entry.skips:
                entry.skips = [s for s in [*entry.skips, bundle.name] if s != base]
    config.bundles.append(bundle)


__all__ = [
    "ARCHETYPES",
    "SCHEMA_BASIC",
    "SCHEMA_SEMVER",
    "SCHEMA_SUBSTITUTES",
    "BasicTemplate",
    "BundleRef",
    "BundleRenderer",
    "SemverTemplate",
    "SubstitutesTemplate",
    "Substitution",
    "Template",
    "load_template",
    "render_template",
    "semver_channels",
    "single_bundle_renderer",
]
