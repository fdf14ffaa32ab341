"""Reading template files: each document with the line of every key and list item, and
strict field accessors (sigs.k8s.io/yaml UnmarshalStrict: unknown keys are errors).

Templates are parsed like catalog files (:func:`olmtool.catalog.load.parse_blobs`, on
:mod:`olmtool.yamlread`), and the line map is composed by the same libyaml so that both agree
on what the file holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from olmtool import yamlread
from olmtool.catalog.load import parse_blobs
from olmtool.errors import InputError, display_path

NodePath = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """One parsed document plus the line of every key and list item (best effort)."""

    data: dict[str, Any]
    file: str
    line: int
    lines: Mapping[NodePath, int]

    def line_of(self, *path: str | int) -> int:
        """Line of the deepest known node along ``path`` (the document start at worst)."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(path[:end])
            if found:
                return found
        return self.line

    def error(self, message: str, *path: str | int) -> InputError:
        return InputError(message, path=self.file, line=self.line_of(*path))


def read_documents(path: str | Path) -> list[Document]:
    """The file's blobs, parsed like catalog files (so JSON and YAML behave identically)."""
    file = display_path(path)
    text = yamlread.read_text(path)
    blobs, problems = parse_blobs(text, file)
    if problems:
        raise InputError(problems[0].message, path=file, line=problems[0].line)
    maps = _line_maps(text, len(blobs))
    return [
        Document(blob.data, file, blob.origin.line or 1, maps[index] if maps else {})
        for index, blob in enumerate(blobs)
    ]


def _line_maps(text: str, count: int) -> list[dict[NodePath, int]] | None:
    """Per document, the line of every mapping key and sequence item.

    Composed separately from the data (nodes keep positions, data does not). Concatenated
    JSON objects are not YAML; then only document start lines are known (None here).
    """
    try:
        parsed = yamlread.parse(text)
    except InputError:
        return None
    nodes = [parsed.node(index) for index in range(len(parsed.documents))]
    if len(nodes) != count or not all(isinstance(n, yaml.MappingNode) for n in nodes):
        return None
    maps = []
    for node in nodes:
        lines: dict[NodePath, int] = {}
        _collect_lines(node, lines)
        maps.append(lines)
    return maps


def _collect_lines(root: yaml.Node, out: dict[NodePath, int]) -> None:
    """The line of every key and item below ``root``, each node visited once: what an
    alias repeats keeps the lines of its anchor only (a "billion laughs" stays small),
    and no recursion (nesting is bounded, but a walk need not rely on it)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, NodePath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                if isinstance(key, yaml.ScalarNode):
                    child = (*path, yamlread.key_text(key))
                    out.setdefault(child, key.start_mark.line + 1)
                    stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            for index in range(len(node.value) - 1, -1, -1):
                item = node.value[index]
                child = (*path, index)
                out.setdefault(child, item.start_mark.line + 1)
                stack.append((item, child))


# --- strict decoding helpers (sigs.k8s.io/yaml UnmarshalStrict: unknown keys are errors) ---


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "null")


def strict_fields(
    doc: Document,
    mapping: Any,
    path: NodePath,
    allowed: Sequence[str],
    where: str,
    *,
    ignored: list[str] | None = None,
) -> dict[str, tuple[str, Any]]:
    """Folded key -> (key as written, value); unknown or case-duplicated keys are errors.

    Keys match case-insensitively because Go's encoding/json matches struct fields so.
    Given an ``ignored`` list, unknown keys are collected there instead (what a plain
    ``json.Unmarshal``, not ``UnmarshalStrict``, does with them).
    """
    if not isinstance(mapping, dict):
        raise doc.error(f"{where} must be an object, found {kind_of(mapping)}", *path)
    folded: dict[str, tuple[str, Any]] = {}
    wanted = {name.lower(): name for name in allowed}
    for key, value in mapping.items():
        canonical = wanted.get(key.lower())
        if canonical is None and ignored is not None:
            ignored.append(key)
            continue
        if canonical is None:
            expected = ", ".join(allowed)
            raise doc.error(f'{where}: unknown key "{key}" (expected {expected})', *path, key)
        if key.lower() in folded:
            first = folded[key.lower()][0]
            raise doc.error(f'{where}: duplicate key "{key}" (also as "{first}")', *path, key)
        folded[key.lower()] = (key, value)
    return folded


def get_bool(doc: Document, fields: dict[str, tuple[str, Any]], name: str, path: NodePath) -> bool:
    key, value = fields.get(name.lower(), (name, None))
    if value is None:
        return False
    if not isinstance(value, bool):
        raise doc.error(f"{key} must be true or false, found {kind_of(value)}", *path, key)
    return value


def get_str(
    doc: Document, fields: dict[str, tuple[str, Any]], name: str, path: NodePath, where: str
) -> str:
    key, value = fields.get(name.lower(), (name, None))
    if value is None:
        return ""
    if not isinstance(value, str):
        raise doc.error(f"{where}.{key} must be a string, found {kind_of(value)}", *path, key)
    return value


def get_list(
    doc: Document, fields: dict[str, tuple[str, Any]], name: str, path: NodePath, where: str
) -> tuple[str, list[Any]]:
    key, value = fields.get(name.lower(), (name, None))
    if value is None:
        return key, []
    if not isinstance(value, list):
        raise doc.error(f"{where}.{key} must be a list, found {kind_of(value)}", *path, key)
    return key, value
