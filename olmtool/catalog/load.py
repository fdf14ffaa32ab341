"""Reading a file-based catalog: walk a tree, parse blobs, decode them into declcfg.

Like opm: every file below the root is read except ``.indexignore`` files and what their
gitignore-style patterns exclude; a file holds YAML documents separated by ``---`` or
concatenated JSON objects (told apart by the first character); the meta keys
``schema``/``package``/``name`` match case-insensitively. Unlike opm, loading does not
stop at the first defect: each becomes a :class:`Finding` naming the file and line.

Catalogs come from other people, so nothing in one can crash or hang the loader: files
are read by :mod:`olmtool.safefiles` (regular files only, symlinks resolved and kept
inside the catalog, FIFOs and devices refused, at most :data:`CATALOG_FILE_BYTES`);
YAML and JSON are bounded by :mod:`olmtool.inputlimits` (nesting, aliases); an
unreadable directory, ``.indexignore`` or pattern is a finding too.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from olmtool import inputlimits, yamlread
from olmtool.catalog import declcfg as dc
from olmtool.errors import InputError, display_path
from olmtool.findings import Finding
from olmtool.safefiles import check_regular, read_regular

INDEX_IGNORE = ".indexignore"
META_KEYS = ("schema", "package", "name")
# A whole catalog rendered into one file is the largest real case: redhat-operator-index
# is about 55 MB. Four times that still fits in memory once parsed.
CATALOG_FILE_BYTES = 256 * 1024 * 1024
INDEX_IGNORE_BYTES = 64 * 1024  # real ones hold a few patterns


@dataclass(frozen=True)
class RawBlob:
    """One parsed JSON object and where it starts."""

    data: dict[str, Any]
    origin: dc.Origin


@dataclass
class LoadResult:
    config: dc.DeclarativeConfig
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


# --- walking ---------------------------------------------------------------------------


def catalog_files(root: Path) -> list[Path]:
    """Every file of the catalog below ``root``, sorted, minus what .indexignore excludes,
    for readers that stop at the first problem (the catalog server's index, the catalog
    image): a directory or ``.indexignore`` that cannot be read, or a file that
    :func:`read_catalog_text` would refuse (no regular file inside the catalog, too big),
    is a one-line InputError."""
    files, problems = walk_catalog(root)
    for problem in problems:
        if problem.severity == "error":
            raise InputError(problem.message, path=problem.file, line=problem.line)
    inside = root if root.is_dir() else None
    for path in files:
        try:
            check_regular(path, root=inside, limit=CATALOG_FILE_BYTES)
        except InputError as exc:
            raise InputError(f"cannot read: {exc.message}", path=path) from None
    return files


def walk_catalog(
    root: Path, *, name: Callable[[Path], str] = display_path
) -> tuple[list[Path], list[Finding]]:
    """Every file of the catalog below ``root`` (or ``root`` itself when it is no
    directory), sorted, minus what .indexignore excludes; and the findings of the walk:
    directories and ``.indexignore`` files that cannot be read (errors), patterns that
    mean nothing (warnings: the line is skipped, as git skips it).

    Symlinks to directories are not followed (as opm, which then fails to read them,
    they are listed as files, and reading refuses them); every other entry is listed,
    FIFOs and devices included, so that reading them becomes a finding. ``name``: how
    findings name a file.
    """
    if not root.is_dir():
        if root.exists() or root.is_symlink():
            return [root], []
        raise InputError("no such catalog directory", path=root)
    files: list[Path] = []
    problems: list[Finding] = []
    ignores: list[tuple[Path, pathspec.PathSpec]] = []

    def unreadable(exc: OSError) -> None:
        where = name(Path(exc.filename) if exc.filename else root)
        reason = exc.strerror or str(exc)
        problems.append(_parse_finding(where, None, f"cannot read directory: {reason}"))

    for directory, dirnames, filenames in os.walk(root, onerror=unreadable):
        here = Path(directory)
        if INDEX_IGNORE in filenames:
            spec = _ignore_spec(here / INDEX_IGNORE, root, problems, name(here / INDEX_IGNORE))
            if spec is not None:
                ignores.append((here, spec))
        active = [(base, spec) for base, spec in ignores if here.is_relative_to(base)]
        linked = [d for d in dirnames if (here / d).is_symlink()]
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in linked and not _ignored(here / d, active, directory=True)
        )
        for entry in sorted(filenames + linked):
            path = here / entry
            if entry != INDEX_IGNORE and not _ignored(path, active, directory=entry in linked):
                files.append(path)
    return files, problems


def _ignore_spec(
    path: Path, root: Path, problems: list[Finding], file: str
) -> pathspec.PathSpec | None:
    """One ``.indexignore``'s patterns; a line the pattern library refuses (``!``, a
    trailing backslash) is skipped with a warning, as git skips a pattern it cannot use."""
    try:
        data = read_regular(path, root=root, limit=INDEX_IGNORE_BYTES)
    except InputError as exc:
        problems.append(_parse_finding(file, None, f"cannot read: {exc.message}"))
        return None
    usable = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except (ValueError, re.error) as exc:  # GitIgnorePatternError is a ValueError
            message = f"pattern {line!r} skipped: {exc}"
            problems.append(Finding("parse", "warning", message, file, number))
            continue
        usable.append(line)
    return pathspec.GitIgnoreSpec.from_lines(usable)


def _ignored(path: Path, ignores: list[tuple[Path, pathspec.PathSpec]], *, directory: bool) -> bool:
    """Excluded by an .indexignore, or olmtool's own staging entry (``fsutil.is_staging``:
    what a write killed in between leaves; opm would read it, olmtool never does)."""
    from olmtool.fsutil import is_staging

    if is_staging(path.name):
        return True
    for base, spec in ignores:
        relative = path.relative_to(base).as_posix() + ("/" if directory else "")
        if spec.match_file(relative):
            return True
    return False


# --- parsing ---------------------------------------------------------------------------


def parse_blobs(text: str, file: str) -> tuple[list[RawBlob], list[Finding]]:
    """The JSON objects in one file's text; a parse error ends the file (like opm)."""
    stripped = text.lstrip()
    if not stripped:
        return [], []
    if stripped.startswith("{"):
        return _parse_json_stream(text, file)
    return _parse_yaml_stream(text, file)


_WHITESPACE = re.compile(r"[ \t\r\n]*")


class _GoRefuses(ValueError):
    """Python's json reads it; Go's encoding/json (and so opm) refuses it. ``text``: what
    to look for to find the line (else a NaN/Infinity constant is looked for)."""

    def __init__(self, message: str, text: str | None = None) -> None:
        super().__init__(message)
        self.text = text


def _refuse_constant(name: str) -> Any:
    raise _GoRefuses(f"invalid character {name[1] if name[0] == '-' else name[0]!r}")


def _out_of_range(number: str) -> _GoRefuses:
    shown = number if len(number) <= 24 else f"{number[:20]}... ({len(number)} characters)"
    return _GoRefuses(f"number {shown} is out of range (Go reads it as a float64)", number)


def _int(number: str) -> int:
    """A JSON integer; one longer than Python converts (4,300 digits) is out of float64's
    range too, where Go's decoder refuses it."""
    try:
        return int(number)
    except ValueError:
        raise _out_of_range(number) from None


def _float(number: str) -> float:
    """A JSON number with a fraction or exponent; beyond float64 (``1e400``) Go refuses
    it, and Python's infinity could not be written back as JSON."""
    value = float(number)
    if math.isinf(value):
        raise _out_of_range(number)
    return value


# Go's decoder is stricter than Python's: NaN, Infinity and -Infinity are no JSON values,
# numbers beyond float64 are errors (iter_json_spans' decoder has these hooks). Numbers
# are rare in catalogs: the hooks cost little.
_CONSTANT = re.compile(r"(?<=[:\[,])[ \t\r\n]*-?(?:NaN|Infinity)\b")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def iter_json_stream(text: str, file: str) -> Iterator[tuple[dict[str, Any], int]]:
    """Each object of concatenated JSON with its first line, one at a time (so a big
    file is never held twice); a defect raises InputError naming the file and line.

    What Go's encoding/json refuses is refused too (``NaN``, invalid escapes such as
    ``\\<``, numbers beyond float64); a lone UTF-16 surrogate becomes U+FFFD, as Go
    decodes it. An object nested deeper than :data:`inputlimits.MAX_DEPTH` is an error.
    """
    for data, line, _, _, _ in iter_json_spans(text, file):
        yield data, line


def iter_json_spans(text: str, file: str) -> Iterator[tuple[dict[str, Any], int, int, int, bool]]:
    """:func:`iter_json_stream`, each object also with where its text starts and ends and
    whether it holds a number with a fraction or exponent (a float, whose text Python's
    value may not give back: ``1.50``, ``1E5``)."""
    inputlimits.ensure_recursion_room()
    position, line, length = 0, 1, len(text)
    # str's substring search is far faster than the expression's scan of a big file
    surrogates = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    floats = 0

    def counted_float(number: str) -> float:
        nonlocal floats
        floats += 1
        return _float(number)

    decoder = json.JSONDecoder(
        parse_constant=_refuse_constant, parse_int=_int, parse_float=counted_float
    )
    while True:
        start = _WHITESPACE.match(text, position).end()  # type: ignore[union-attr]
        line += text.count("\n", position, start)
        if start >= length:
            return
        seen = floats
        try:
            data, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"invalid JSON: {exc.msg} (column {exc.colno})", path=file, line=exc.lineno
            ) from None
        except _GoRefuses as exc:
            if exc.text is not None:
                at = text.find(exc.text, start)
                where = line + text.count("\n", start, at) if at >= 0 else line
                raise InputError(f"invalid JSON: {exc}", path=file, line=where) from None
            found = _CONSTANT.search(text, start)
            where = line + text.count("\n", start, found.start()) if found else line
            raise InputError(
                f"invalid JSON: {exc} looking for beginning of value", path=file, line=where
            ) from None
        except RecursionError:  # deeper than even the raised recursion limit
            data, end = None, None
        deep = inputlimits.json_too_deep(text, start, end)
        if deep is not None or end is None:
            where = line + text.count("\n", start, deep) if deep is not None else line
            raise InputError(inputlimits.too_deep_message("JSON"), path=file, line=where)
        if not isinstance(data, dict):
            raise InputError(f"expected a JSON object, found {_kind(data)}", path=file, line=line)
        yield (_replace_surrogates(data) if surrogates else data), line, start, end, floats > seen
        line += text.count("\n", start, end)
        position = end


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    return value


def _parse_json_stream(text: str, file: str) -> tuple[list[RawBlob], list[Finding]]:
    blobs: list[RawBlob] = []
    try:
        for data, line in iter_json_stream(text, file):
            blobs.append(RawBlob(data, dc.Origin(file, line)))
    except InputError as exc:
        return blobs, [_parse_finding(file, exc.line, exc.message)]
    return blobs, []


def _parse_yaml_stream(text: str, file: str) -> tuple[list[RawBlob], list[Finding]]:
    """YAML documents as opm reads them (sigs.k8s.io/yaml: duplicate keys, last wins)."""
    blobs: list[RawBlob] = []
    try:
        for line, data in yamlread.iter_documents(text, path=file):
            if data is None:
                continue
            if not isinstance(data, dict):
                message = f"expected a mapping, found {_kind(data)}"
                return blobs, [_parse_finding(file, line, message)]
            blobs.append(RawBlob(data, dc.Origin(file, line)))
    except InputError as exc:
        return blobs, [_parse_finding(file, exc.line, exc.message)]
    return blobs, []


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
    }.get(type(value), type(value).__name__)


def _parse_finding(file: str, line: int | None, message: str) -> Finding:
    return Finding("parse", "error", message, file, line)


# --- decoding blobs into declcfg --------------------------------------------------------


class _DecodeError(Exception):
    pass


def _fields(blob: dict[str, Any]) -> dict[str, Any]:
    """Keys folded to lower case: Go's encoding/json matches struct fields that way."""
    return {key.lower(): value for key, value in blob.items()}


def meta_keys(blob: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """schema/package/name (case-insensitive) and a duplicate-key problem, if any."""
    found: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in blob.items():
        folded = key.lower()
        if folded not in META_KEYS:
            continue
        if folded in seen:
            return found, f'duplicate key "{folded}" (as "{seen[folded]}" and "{key}")'
        seen[folded] = key
        found[folded] = value if isinstance(value, str) else ("" if value is None else value)
    return found, None


def _string(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _DecodeError(f"{where}: expected a string, found {_kind(value)}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _DecodeError(f"{where}: expected a list, found {_kind(value)}")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _DecodeError(f"{where}: expected an object, found {_kind(value)}")
    return _fields(value)


def _properties(value: Any) -> list[dc.Property]:
    properties = []
    for index, item in enumerate(_list(value, "properties")):
        fields = _object(item, f"properties[{index}]")
        type_ = _string(fields.get("type"), f"properties[{index}].type")
        properties.append(dc.Property(type_, fields.get("value")))
    return properties


def _decode_package(f: dict[str, Any], origin: dc.Origin) -> dc.Package:
    icon = None
    if f.get("icon") is not None:
        fields = _object(f["icon"], "icon")
        icon = dc.Icon(
            _string(fields.get("base64data"), "icon.base64data"),
            _string(fields.get("mediatype"), "icon.mediatype"),
        )
    return dc.Package(
        name=_string(f.get("name"), "name"),
        default_channel=_string(f.get("defaultchannel"), "defaultChannel"),
        icon=icon,
        description=_string(f.get("description"), "description"),
        properties=_properties(f.get("properties")),
        origin=origin,
    )


def _decode_entry(item: Any, index: int) -> dc.ChannelEntry:
    where = f"entries[{index}]"
    fields = _object(item, where)
    skips = [
        _string(s, f"{where}.skips[{i}]")
        for i, s in enumerate(_list(fields.get("skips"), f"{where}.skips"))
    ]
    return dc.ChannelEntry(
        name=_string(fields.get("name"), f"{where}.name"),
        replaces=_string(fields.get("replaces"), f"{where}.replaces"),
        skips=skips,
        skip_range=_string(fields.get("skiprange"), f"{where}.skipRange"),
    )


def _decode_channel(f: dict[str, Any], origin: dc.Origin) -> dc.Channel:
    return dc.Channel(
        name=_string(f.get("name"), "name"),
        package=_string(f.get("package"), "package"),
        entries=[_decode_entry(e, i) for i, e in enumerate(_list(f.get("entries"), "entries"))],
        properties=_properties(f.get("properties")),
        origin=origin,
    )


def _decode_bundle(f: dict[str, Any], origin: dc.Origin) -> dc.Bundle:
    related = []
    for index, item in enumerate(_list(f.get("relatedimages"), "relatedImages")):
        fields = _object(item, f"relatedImages[{index}]")
        related.append(
            dc.RelatedImage(
                _string(fields.get("name"), f"relatedImages[{index}].name"),
                _string(fields.get("image"), f"relatedImages[{index}].image"),
            )
        )
    return dc.Bundle(
        name=_string(f.get("name"), "name"),
        package=_string(f.get("package"), "package"),
        image=_string(f.get("image"), "image"),
        properties=_properties(f.get("properties")),
        related_images=related,
        origin=origin,
    )


def _decode_deprecation(f: dict[str, Any], origin: dc.Origin) -> dc.Deprecation:
    entries = []
    for index, item in enumerate(_list(f.get("entries"), "entries")):
        fields = _object(item, f"entries[{index}]")
        reference = _object(fields.get("reference") or {}, f"entries[{index}].reference")
        entries.append(
            dc.DeprecationEntry(
                dc.DeprecationReference(
                    _string(reference.get("schema"), f"entries[{index}].reference.schema"),
                    _string(reference.get("name"), f"entries[{index}].reference.name"),
                ),
                _string(fields.get("message"), f"entries[{index}].message"),
            )
        )
    return dc.Deprecation(
        package=_string(f.get("package"), "package"), entries=entries, origin=origin
    )


_DECODERS = {
    dc.SCHEMA_PACKAGE: ("packages", _decode_package),
    dc.SCHEMA_CHANNEL: ("channels", _decode_channel),
    dc.SCHEMA_BUNDLE: ("bundles", _decode_bundle),
    dc.SCHEMA_DEPRECATIONS: ("deprecations", _decode_deprecation),
}


def decode_blob(blob: RawBlob, config: dc.DeclarativeConfig) -> Finding | None:
    """Add one blob to ``config``; a problem comes back as a finding instead."""
    origin = blob.origin
    meta, duplicate = meta_keys(blob.data)
    if duplicate:
        return Finding("duplicate-key", "error", duplicate, origin.file, origin.line)
    schema = meta.get("schema")
    if not isinstance(schema, str) or not schema:
        return Finding(
            "schema-missing", "error", 'blob has no "schema" key', origin.file, origin.line
        )
    decoder = _DECODERS.get(schema)
    if decoder is None:
        config.others.append(
            dc.Meta(
                schema,
                str(meta.get("package") or ""),
                str(meta.get("name") or ""),
                blob.data,
                origin,
            )
        )
        return None
    attribute, decode = decoder
    try:
        getattr(config, attribute).append(decode(_fields(blob.data), origin))
    except _DecodeError as exc:
        name = meta.get("name") or meta.get("package") or ""
        subject = f'{schema} "{name}"' if name else schema
        return Finding("decode", "error", f"{subject}: {exc}", origin.file, origin.line)
    return None


# --- entry points ------------------------------------------------------------------------


def read_catalog_text(path: Path, root: Path | None) -> str:
    """One catalog file's text: a regular UTF-8 file (symlinks resolved, and inside
    ``root`` when given) of at most :data:`CATALOG_FILE_BYTES`; else an InputError
    "cannot read: ..." naming it."""
    try:
        return read_regular(path, root=root, limit=CATALOG_FILE_BYTES).decode("utf-8")
    except InputError as exc:
        raise InputError(f"cannot read: {exc.message}", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read: not UTF-8 text (byte {exc.start})", path=path) from None


def iter_raw_blobs(root: Path) -> Iterator[tuple[list[RawBlob], list[Finding]]]:
    """Per file, in walk order: its blobs and its parse problems (the walk's first)."""
    files, problems = walk_catalog(root)
    if problems:
        yield [], problems
    inside = root if root.is_dir() else None
    for path in files:
        yield _file_blobs(path, inside)


def _file_blobs(path: Path, inside: Path | None) -> tuple[list[RawBlob], list[Finding]]:
    """One file's blobs and parse problems (a file that cannot be read: one finding)."""
    file = display_path(path)
    try:
        text = read_catalog_text(path, inside)
    except InputError as exc:
        return [], [_parse_finding(file, None, exc.message)]
    return parse_blobs(text, file)


def load_catalog(root: str | Path) -> LoadResult:
    """Read every blob below ``root`` (a directory or one file); defects become findings."""
    return _decode_files(iter_raw_blobs(Path(root)))


def load_texts(texts: dict[str, str]) -> LoadResult:
    """Like :func:`load_catalog` for in-memory files (name -> text), e.g. from an image."""
    return _decode_files(parse_blobs(texts[file], file) for file in sorted(texts))


def load_file(path: Path, inside: Path | None) -> LoadResult:
    """One file of a catalog (``inside``: the catalog's directory, None for a lone file)
    loaded as :func:`load_catalog` loads each: its blobs decoded, its defects findings."""
    blobs, problems = _file_blobs(path, inside)
    result = LoadResult(dc.DeclarativeConfig(), problems)
    _decode_into(blobs, result)
    return result


def _decode_files(files: Iterable[tuple[list[RawBlob], list[Finding]]]) -> LoadResult:
    result = LoadResult(dc.DeclarativeConfig())
    for blobs, problems in files:
        result.findings.extend(problems)
        _decode_into(blobs, result)
    return result


def _decode_into(blobs: list[RawBlob], result: LoadResult) -> None:
    for blob in blobs:
        problem = decode_blob(blob, result.config)
        if problem is not None:
            result.findings.append(problem)


def load_catalog_strict(root: str | Path) -> dc.DeclarativeConfig:
    """The catalog below ``root``, or an InputError for its first load problem."""
    result = load_catalog(root)
    if result.errors:
        first = result.errors[0]
        raise InputError(first.message, path=first.file, line=first.line)
    return result.config
