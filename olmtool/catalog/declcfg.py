"""The file-based catalog as plain data: packages, channels, bundles, deprecations, others.

Mirrors operator-registry's ``alpha/declcfg``: one dataclass per schema, no validation
beyond field types (that is :mod:`olmtool.catalog.model`'s job). Every blob remembers
where it came from (:class:`Origin`) so that findings can name the file and line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from olmtool import gojson

SCHEMA_PACKAGE = "olm.package"
SCHEMA_CHANNEL = "olm.channel"
SCHEMA_BUNDLE = "olm.bundle"
SCHEMA_DEPRECATIONS = "olm.deprecations"

PROP_PACKAGE = "olm.package"
PROP_GVK = "olm.gvk"
PROP_GVK_REQUIRED = "olm.gvk.required"
PROP_PACKAGE_REQUIRED = "olm.package.required"
PROP_BUNDLE_OBJECT = "olm.bundle.object"
PROP_CSV_METADATA = "olm.csv.metadata"
PROP_CONSTRAINT = "olm.constraint"
PROP_DEPRECATED = "olm.deprecated"
PROP_MAX_OPENSHIFT_VERSION = "olm.maxOpenShiftVersion"


@dataclass(frozen=True)
class Origin:
    """Where a blob was read: a path relative to the catalog root (or a label) and line."""

    file: str = ""
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class Property:
    """``{type, value}``; ``value`` is plain JSON data, decoded lazily by ``properties``.

    ``raw`` is the value's JSON text as opm holds it (a ``json.RawMessage``: HTML
    characters escaped or not, key order, number format as the source had them), where
    render knows it; :func:`blobs` with ``raw=True`` writes it instead of ``value``.
    """

    type: str
    value: Any
    raw: str | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "value": self.value}


@dataclass
class Icon:
    base64data: str = ""
    mediatype: str = ""


@dataclass
class Package:
    name: str
    default_channel: str = ""
    icon: Icon | None = None
    description: str = ""
    properties: list[Property] = field(default_factory=list)
    origin: Origin = field(default_factory=Origin)


@dataclass
class ChannelEntry:
    name: str
    replaces: str = ""
    skips: list[str] = field(default_factory=list)
    skip_range: str = ""


@dataclass
class Channel:
    name: str
    package: str
    entries: list[ChannelEntry] = field(default_factory=list)
    properties: list[Property] = field(default_factory=list)
    origin: Origin = field(default_factory=Origin)


@dataclass
class RelatedImage:
    name: str
    image: str


@dataclass
class Bundle:
    name: str
    package: str
    image: str = ""
    properties: list[Property] = field(default_factory=list)
    related_images: list[RelatedImage] = field(default_factory=list)
    origin: Origin = field(default_factory=Origin)

    def properties_of(self, type_: str) -> list[Property]:
        return [p for p in self.properties if p.type == type_]

    @property
    def version(self) -> str:
        """The olm.package property's version, or "" when there is not exactly one."""
        return self._package_field("version")

    @property
    def release(self) -> str:
        return self._package_field("release")

    def _package_field(self, key: str) -> str:
        packages = self.properties_of(PROP_PACKAGE)
        if len(packages) != 1 or not isinstance(packages[0].value, dict):
            return ""
        return str(packages[0].value.get(key) or "")


@dataclass
class DeprecationReference:
    schema: str
    name: str = ""


@dataclass
class DeprecationEntry:
    reference: DeprecationReference
    message: str


@dataclass
class Deprecation:
    package: str
    entries: list[DeprecationEntry] = field(default_factory=list)
    origin: Origin = field(default_factory=Origin)


@dataclass
class Meta:
    """A blob of any other schema, kept as read (keyed by schema, package and name)."""

    schema: str
    package: str
    name: str
    blob: dict[str, Any]
    origin: Origin = field(default_factory=Origin)
    # the blob's JSON text as opm holds it, where render knows it (catalog.opmtext)
    raw: str | None = field(default=None, compare=False, repr=False)


@dataclass
class DeclarativeConfig:
    packages: list[Package] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    deprecations: list[Deprecation] = field(default_factory=list)
    others: list[Meta] = field(default_factory=list)

    def extend(self, other: DeclarativeConfig) -> None:
        self.packages.extend(other.packages)
        self.channels.extend(other.channels)
        self.bundles.extend(other.bundles)
        self.deprecations.extend(other.deprecations)
        self.others.extend(other.others)

    def package_names(self) -> list[str]:
        """Every package named by any blob, sorted."""
        names = {p.name for p in self.packages}
        names.update(c.package for c in self.channels)
        names.update(b.package for b in self.bundles)
        names.update(d.package for d in self.deprecations)
        names.update(m.package for m in self.others)
        return sorted(names)

    def for_package(self, name: str) -> DeclarativeConfig:
        """The blobs belonging to one package (blobs with package "" go nowhere)."""
        return DeclarativeConfig(
            packages=[p for p in self.packages if p.name == name],
            channels=[c for c in self.channels if c.package == name],
            bundles=[b for b in self.bundles if b.package == name],
            deprecations=[d for d in self.deprecations if d.package == name],
            others=[m for m in self.others if m.package == name],
        )


# --- to JSON blobs, in the field order of operator-registry's Go structs -----------------


class RawJSON(str):
    """JSON text that :func:`to_json` writes as it is (re-indented), like a RawMessage."""


def _properties(properties: list[Property], raw: bool = False) -> list[dict[str, Any]]:
    if raw:
        return [
            {"type": p.type, "value": RawJSON(p.raw)} if p.raw is not None else p.as_dict()
            for p in properties
        ]
    return [p.as_dict() for p in properties]


def package_blob(package: Package) -> dict[str, Any]:
    # defaultChannel has no omitempty in opm's declcfg.Package: "" is written too
    blob: dict[str, Any] = {
        "schema": SCHEMA_PACKAGE,
        "name": package.name,
        "defaultChannel": package.default_channel,
    }
    if package.icon is not None:
        blob["icon"] = {"base64data": package.icon.base64data, "mediatype": package.icon.mediatype}
    if package.description:
        blob["description"] = package.description
    if package.properties:
        blob["properties"] = _properties(package.properties)
    return blob


def entry_blob(entry: ChannelEntry) -> dict[str, Any]:
    blob: dict[str, Any] = {"name": entry.name}
    if entry.replaces:
        blob["replaces"] = entry.replaces
    if entry.skips:
        blob["skips"] = list(entry.skips)
    if entry.skip_range:
        blob["skipRange"] = entry.skip_range
    return blob


def channel_blob(channel: Channel) -> dict[str, Any]:
    blob: dict[str, Any] = {
        "schema": SCHEMA_CHANNEL,
        "name": channel.name,
        "package": channel.package,
        "entries": [entry_blob(e) for e in channel.entries],
    }
    if channel.properties:
        blob["properties"] = _properties(channel.properties)
    return blob


def bundle_blob(bundle: Bundle, *, raw: bool = False) -> dict[str, Any]:
    blob: dict[str, Any] = {
        "schema": SCHEMA_BUNDLE,
        "name": bundle.name,
        "package": bundle.package,
        "image": bundle.image,
    }
    if bundle.properties:
        blob["properties"] = _properties(bundle.properties, raw)
    if bundle.related_images:
        blob["relatedImages"] = [
            {"name": r.name, "image": r.image} if r.name else {"name": "", "image": r.image}
            for r in bundle.related_images
        ]
    return blob


def deprecation_blob(deprecation: Deprecation) -> dict[str, Any]:
    entries = []
    for entry in deprecation.entries:
        reference: dict[str, Any] = {"schema": entry.reference.schema}
        if entry.reference.name:
            reference["name"] = entry.reference.name
        entries.append({"reference": reference, "message": entry.message})
    return {"schema": SCHEMA_DEPRECATIONS, "package": deprecation.package, "entries": entries}


def by_package(config: DeclarativeConfig) -> dict[str, DeclarativeConfig]:
    """The blobs grouped by package in one pass, sorted by package name."""
    grouped: dict[str, DeclarativeConfig] = {}

    def group(package: str) -> DeclarativeConfig:
        return grouped.setdefault(package, DeclarativeConfig())

    for package in config.packages:
        group(package.name).packages.append(package)
    for channel in config.channels:
        group(channel.package).channels.append(channel)
    for bundle in config.bundles:
        group(bundle.package).bundles.append(bundle)
    for meta in config.others:
        group(meta.package).others.append(meta)
    for deprecation in config.deprecations:
        group(deprecation.package).deprecations.append(deprecation)
    return {name: grouped[name] for name in sorted(grouped)}


def blobs(config: DeclarativeConfig, *, raw: bool = False) -> list[dict[str, Any]]:
    """Every blob in opm's order: package by package (sorted), and within one its package
    blob, channels, bundles, other schemas, deprecations, each sorted by name. With
    ``raw``, bundle property values and other blobs that carry their JSON text are
    written as that text."""
    out: list[dict[str, Any]] = []
    for part in by_package(config).values():
        out += [package_blob(p) for p in sorted(part.packages, key=lambda p: p.name)]
        out += [channel_blob(c) for c in sorted(part.channels, key=lambda c: c.name)]
        out += [bundle_blob(b, raw=raw) for b in sorted(part.bundles, key=lambda b: b.name)]
        others = sorted(part.others, key=lambda m: (m.schema, m.name))
        out += [RawJSON(m.raw) if raw and m.raw is not None else m.blob for m in others]
        out += [deprecation_blob(d) for d in part.deprecations]
    return out


def to_json(blob: Any, *, indent: int | None = 4) -> str:
    """JSON as Go's encoder writes it with SetEscapeHTML(false) (and U+2028/9 escaped);
    :class:`RawJSON` values are written as their text, compacted and re-indented."""
    if isinstance(blob, RawJSON):  # a whole blob kept as text: compacted, re-indented
        text = gojson.compact(blob)
        return gojson.indent(text, "", " " * indent) if indent else text
    return _dumps(blob, indent)


def to_compact_json_without_floats(blob: dict[str, Any]) -> bytes:
    """``to_json(blob, indent=None)`` as UTF-8, for a blob read from JSON text that held
    no float (its reader knows): orjson writes the same bytes several times faster, but
    not Python's float texts (``2.5e-05``). What orjson refuses (integers beyond 64 bits,
    lone surrogates, :class:`RawJSON` values) goes the standard way."""
    if any(isinstance(p.get("value"), RawJSON) for p in _property_dicts(blob)):
        return to_json(blob, indent=None).encode()  # orjson would write it as a string
    try:
        text = orjson.dumps(blob)
    except TypeError:
        return to_json(blob, indent=None).encode()
    if b"\xe2\x80\xa8" in text or b"\xe2\x80\xa9" in text:  # U+2028/9, escaped by Go
        return text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return text


def _property_dicts(blob: Any) -> list[dict[str, Any]]:
    properties = blob.get("properties") if isinstance(blob, dict) else None
    return [p for p in properties if isinstance(p, dict)] if isinstance(properties, list) else []


def _dumps(blob: Any, indent: int | None) -> str:
    separators = (",", ": ") if indent else (",", ":")
    raws: list[str] = []
    if any(isinstance(p.get("value"), RawJSON) for p in _property_dicts(blob)):
        blob = _with_placeholders(blob, raws)
    text = json.dumps(blob, indent=indent, ensure_ascii=False, separators=separators)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if raws:
        text = _fill_placeholders(text, raws, indent)
    return text


_RAW_PLACEHOLDER = re.compile(r'"\\u0000raw(\d+)\\u0000"')


def _with_placeholders(blob: dict[str, Any], raws: list[str]) -> dict[str, Any]:
    properties = []
    for prop in blob["properties"]:
        value = prop["value"]
        if isinstance(value, RawJSON):
            raws.append(gojson.compact(value))
            value = f"\x00raw{len(raws) - 1}\x00"
        properties.append({**prop, "value": value})
    return {**blob, "properties": properties}


def _fill_placeholders(text: str, raws: list[str], indent: int | None) -> str:
    def fill(match: re.Match[str]) -> str:
        raw = raws[int(match[1])]
        if not indent:
            return raw
        line_start = text.rfind("\n", 0, match.start()) + 1
        end = line_start
        while text[end] == " ":
            end += 1
        prefix = text[line_start:end]
        return gojson.indent(raw, prefix, " " * indent)

    return _RAW_PLACEHOLDER.sub(fill, text)
