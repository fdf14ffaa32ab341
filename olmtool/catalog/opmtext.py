"""Property values and other blobs as the JSON text opm v1.26 holds after loading a catalog.

opm keeps a bundle property's ``value`` and a blob of another schema as
``json.RawMessage`` and writes them back as they were, which is what ``opm render`` of a
catalog prints and ``opm serve`` returns. What that text is depends on the file
(operator-registry v1.26 ``alpha/declcfg``: ``WalkMetasReader`` and ``Meta``):

- a JSON file: the value's text as written (key order, number text such as ``1.50`` or
  ``1E5``, escapes, a literal U+2028), except that ``declcfg.Meta`` first replaces the
  text ``\\u003c``, ``\\u003e`` and ``\\u0026`` by ``<``, ``>`` and ``&`` in every blob;
  compacted when written;
- a YAML file: ``json.Marshal`` of the YAML (sigs.k8s.io/yaml: keys sorted, Go's numbers,
  U+2028 escaped), those HTML escapes again replaced.

Python's parsed values give most of this back (:func:`olmtool.catalog.declcfg.to_json`);
:func:`may_differ` tells cheaply when a JSON blob needs its raw text instead, and
:func:`load_catalog_as_opm` loads a catalog with these texts attached
(``Property.raw``, ``Meta.raw``) for ``catalog render``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from olmtool import gojson, yamlread
from olmtool.catalog import declcfg as dc
from olmtool.catalog import load
from olmtool.errors import InputError, display_path
from olmtool.safefiles import read_regular

# unicode.IsSpace: what bytes.TrimLeftFunc skips before looking for "{"
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)
# declcfg.Meta.UnmarshalJSON's bytereplacer, applied to every blob's text
_UNESCAPE = (("\\u003c", "<"), ("\\u003e", ">"), ("\\u0026", "&"))
# What Python's parse loses and dc.to_json cannot give back: escapes other than \" \\ \n
# \r \t, and a literal line or paragraph separator (only in strings); and number text,
# which the loader tells (iter_json_spans: the blob holds a float).
_LOSSY = re.compile(r"\\[u/bf]")
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def object_text(data: bytes) -> str:
    """An olm.bundle.object's data as opm holds it (k8s.io/apimachinery ``yaml.ToJSON``):
    data that starts with ``{`` (after Unicode white space) is kept as it is (spaces, key
    order, escapes, a trailing newline); anything else is YAML converted by
    ``json.Marshal`` (sorted keys, HTML characters escaped, Go's numbers). ValueError (or
    an InputError) when such YAML does not parse."""
    text = data.decode("utf-8", errors="replace")
    if text.lstrip(_GO_SPACE).startswith("{"):
        return text
    return gojson.marshal(yamlread.load(text), unstructured=False)


def may_differ(text: str, has_float: bool, start: int = 0, end: int | None = None) -> bool:
    """Whether some value's raw JSON text in the blob ``text[start:end]`` may differ from
    ``dc.to_json`` of its parsed value (cheap: most blobs have neither floats nor such
    escapes; the blob is searched in place, not copied)."""
    end = len(text) if end is None else end
    if has_float or text.find("\u2028", start, end) >= 0 or text.find("\u2029", start, end) >= 0:
        return True
    # most blobs hold no backslash at all: str.find scans at memchr speed, a regex does not
    return text.find("\\", start, end) >= 0 and _LOSSY.search(text, start, end) is not None


def opm_raw(text: str) -> str:
    """A JSON value's text from a JSON file as opm holds it: HTML escapes replaced, compact."""
    for escaped, char in _UNESCAPE:
        text = text.replace(escaped, char)
    return gojson.compact(text)


def yaml_value_text(value: Any) -> str:
    """A value read from YAML as opm holds it: json.Marshal, HTML escapes replaced."""
    return gojson.marshal(value, escape_html=False, unstructured=False)


def raw_property_texts(raw_blob: str) -> list[str]:
    """Each property value's text in a JSON blob as opm v1.26 holds it: the text of the
    last ``value`` member (keys match case-insensitively, as Go's decoder matches struct
    fields) of each element of the last ``properties`` member, through :func:`opm_raw`."""
    members, _ = _object_members(raw_blob, _WS.match(raw_blob).end())  # type: ignore[union-attr]
    found = [m for m in members if m[0].lower() == "properties"]
    if not found or raw_blob[found[-1][1]] != "[":
        return []
    texts = []
    for start in _array_items(raw_blob, found[-1][1]):
        if raw_blob[start] != "{":
            texts.append("")
            continue
        values = [m for m in _object_members(raw_blob, start)[0] if m[0].lower() == "value"]
        texts.append(opm_raw(raw_blob[values[-1][1] : values[-1][2]]) if values else "")
    return texts


def _object_members(text: str, start: int) -> tuple[list[tuple[str, int, int]], int]:
    """(key, value start, value end) of the valid JSON object at ``start``, and its end."""
    members: list[tuple[str, int, int]] = []
    position = _WS.match(text, start + 1).end()  # type: ignore[union-attr]
    if text[position] == "}":
        return members, position + 1
    while True:
        key, position = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]
        position = _WS.match(text, position).end() + 1  # type: ignore[union-attr]  # ":"
        value = _WS.match(text, position).end()  # type: ignore[union-attr]
        _, end = _DECODER.raw_decode(text, value)
        members.append((key, value, end))
        position = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text[position] == "}":
            return members, position + 1
        position = _WS.match(text, position + 1).end()  # type: ignore[union-attr]


def _array_items(text: str, start: int) -> list[int]:
    """Where each element of the valid JSON array at ``start`` begins."""
    items: list[int] = []
    position = _WS.match(text, start + 1).end()  # type: ignore[union-attr]
    if text[position] == "]":
        return items
    while True:
        items.append(position)
        _, end = _DECODER.raw_decode(text, position)
        position = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text[position] == "]":
            return items
        position = _WS.match(text, position + 1).end()  # type: ignore[union-attr]


# --- a catalog loaded with opm's texts -------------------------------------------------------


ReadRef = Callable[[str, str], bytes]  # (blob's file, ref) -> the referenced file's bytes


def load_catalog_as_opm(root: str | Path) -> dc.DeclarativeConfig:
    """:func:`olmtool.catalog.load.load_catalog_strict` as ``opm render`` prints it:
    ``Property.raw`` and ``Meta.raw`` set where opm v1.26's text differs from what the
    parsed value gives, every olm.bundle.object's data as opm holds it (a ``ref`` read,
    YAML converted to JSON: :func:`object_text`) and moved after the other properties,
    related images sorted by image."""
    root = Path(root)
    files, problems = load.walk_catalog(root)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise InputError(errors[0].message, path=errors[0].file, line=errors[0].line)
    config = dc.DeclarativeConfig()
    base = root if root.is_dir() else root.parent
    by_name = {display_path(path): path for path in files}

    def read_ref(file: str, ref: str) -> bytes:
        target = by_name[file].parent / ref
        if Path(ref).is_absolute() or not target.resolve().is_relative_to(base.resolve()):
            raise InputError(f"object ref {ref!r} leaves the catalog", path=file)
        return read_regular(target, root=base)

    for name, path in by_name.items():
        text = load.read_catalog_text(path, base if root.is_dir() else None)
        _add_file(text, name, config, read_ref)
    return config


def load_texts_as_opm(
    texts: dict[str, str], read_ref: ReadRef | None = None
) -> dc.DeclarativeConfig:
    """:func:`load_catalog_as_opm` for in-memory files (name -> text), e.g. from an image;
    without ``read_ref``, a ``ref`` object is left as it is."""
    config = dc.DeclarativeConfig()
    for file in sorted(texts):
        _add_file(texts[file], file, config, read_ref)
    return config


def _add_file(text: str, file: str, config: dc.DeclarativeConfig, read_ref: ReadRef | None) -> None:
    """One file's blobs into ``config`` (an InputError for its first problem)."""
    if text.lstrip().startswith("{"):
        for data, line, start, end, floats in load.iter_json_spans(text, file):
            blob = load.RawBlob(data, dc.Origin(file, line))
            _decode(blob, config, text[start:end], floats, read_ref)
        return
    blobs, found = load.parse_blobs(text, file)
    errors = [f for f in found if f.severity == "error"]
    if errors:
        raise InputError(errors[0].message, path=errors[0].file, line=errors[0].line)
    for blob in blobs:
        _decode(blob, config, None, False, read_ref)


def _decode(
    blob: load.RawBlob,
    config: dc.DeclarativeConfig,
    raw: str | None,
    has_float: bool,
    read_ref: ReadRef | None,
) -> None:
    bundles, others = len(config.bundles), len(config.others)
    problem = load.decode_blob(blob, config)
    if problem is not None:
        raise InputError(problem.message, path=problem.file, line=problem.line)
    if len(config.bundles) > bundles:
        bundle = config.bundles[-1]
        _bundle_texts(bundle, raw, has_float)
        _bundle_objects(bundle, blob.origin.file, read_ref)
        # as opm's render leaves every bundle: objects last, related images by image
        bundle.properties.sort(key=lambda p: p.type == dc.PROP_BUNDLE_OBJECT)
        bundle.related_images.sort(key=lambda r: r.image)
    elif len(config.others) > others:
        meta = config.others[-1]
        if raw is None:
            meta.raw = yaml_value_text(meta.blob)
        elif may_differ(raw, has_float):
            meta.raw = opm_raw(raw)


def _bundle_texts(bundle: dc.Bundle, raw: str | None, has_float: bool) -> None:
    if raw is None:
        for prop in bundle.properties:
            prop.raw = yaml_value_text(prop.value)
        return
    if not may_differ(raw, has_float):
        return
    for prop, text in zip(bundle.properties, raw_property_texts(raw), strict=False):
        prop.raw = text


def _bundle_objects(bundle: dc.Bundle, file: str, read_ref: ReadRef | None) -> None:
    """Each olm.bundle.object as ``{"data": base64}`` of its :func:`object_text`, which
    is how ``opm render`` writes them back (a ``ref`` is gone, YAML became JSON)."""
    for number, prop in enumerate(bundle.properties_of(dc.PROP_BUNDLE_OBJECT)):
        value = prop.value if isinstance(prop.value, dict) else {}
        where = f'bundle "{bundle.name}": olm.bundle.object[{number}]'
        try:
            if value.get("ref"):
                if read_ref is None:
                    continue
                data = read_ref(file, str(value["ref"]))
            else:
                # Go decodes []byte with base64.StdEncoding, which skips line breaks
                text = str(value.get("data") or "").replace("\n", "").replace("\r", "")
                data = base64.b64decode(text, validate=True)
            encoded = base64.b64encode(object_text(data).encode("utf-8")).decode("ascii")
        except (OSError, ValueError, binascii.Error, InputError) as exc:
            message = exc.message if isinstance(exc, InputError) else str(exc)
            raise InputError(f"{where}: {message}", path=file) from None
        prop.value = {"data": encoded}
        prop.raw = gojson.marshal(prop.value, escape_html=False)
