"""YAML read as Kubernetes and opm read it: sigs.k8s.io/yaml (Go yaml.v2, then JSON).

Every loader that reads a file for its data goes through here; ruamel.yaml's round trip
(:mod:`olmtool.yamlwrite`) stays for files rewritten with their comments and for output.

Parsing runs on libyaml (PyYAML's C parser) into plain dicts, lists and JSON scalars:

- scalars resolve as yaml.v2 resolves them: ``y``/``yes``/``on`` are true, ``0755`` and
  ``0o755`` are 493, ``1_000`` is 1000, ``1e5`` is a float; sexagesimal ``1:30`` and every
  timestamp or date stay the strings written (yaml.v2 hands timestamps to JSON as text),
  and so does a number beyond int64, uint64 and float64 (``1e400``, 5,000 digits);
- keys become strings (``1`` -> ``"1"``, ``true`` -> ``"true"``);
- ``!!binary`` is its decoded text, ``!!set`` a mapping to nulls, ``!!omap``/``!!pairs``
  lists of one-key mappings, unknown tags the plain data under them;
- duplicate mapping keys are accepted, the last value winning (yaml.v2 is not strict);
  :attr:`YamlFile.duplicates` lists them, so a caller can warn when the values differ;
- nesting, aliases and size are bounded by :mod:`olmtool.inputlimits` (an InputError
  naming the file and line), files read by :mod:`olmtool.safefiles`.

Line numbers cost nothing until asked for: :meth:`YamlFile.line_at` composes the file
once more (libyaml again, nodes only) the first time a finding needs a line, and walks
the nodes by field path (``spec.install.spec.deployments[0].name``).
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from olmtool import inputlimits
from olmtool.errors import InputError
from olmtool.safefiles import read_regular_text
from olmtool.yamlscalars import (
    _MAP,
    _MERGE,
    _PLAIN,
    _SEQ,
    _STR,
    go_string,
    json_key,
    plain_scalar,
    reads_as_string,
    tagged_scalar,
)

__all__ = [
    "DuplicateKey",
    "YamlFile",
    "go_string",
    "iter_documents",
    "json_key",
    "key_text",
    "line_at",
    "load",
    "load_all",
    "parse",
    "read",
    "read_text",
    "reads_as_string",
]


@dataclass(frozen=True)
class DuplicateKey:
    """A key given twice in one mapping; the last value won, as in Go's yaml.v2."""

    key: str
    line: int  # 1-based line of the repeated key
    first_line: int  # 1-based line of the key it overrides
    same: bool  # both values equal: nothing was lost
    document: int = 0  # index among the file's non-empty documents


# libyaml's C parser (PyYAML built without it still works, only slower)
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """libyaml's parser and composer; plain scalars are resolved later, by :class:`_Builder`.

    libyaml calls ``resolve`` for every untagged node: answering with constants keeps
    that cheap, and ``_PLAIN`` remembers which scalars were unquoted.
    """

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _MAP if kind is MappingNode else _SEQ


class _CountingLoader(_Loader):
    """Counts the (untagged: libyaml resolves only those) collections it composes."""

    collections = 0

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        self.collections += 1
        return _MAP if kind is MappingNode else _SEQ


class _Builder:
    """Composed nodes -> plain data, depth first (so duplicate values compare complete)."""

    def __init__(self) -> None:
        self.document = 0
        self.duplicates: dict[tuple[int, int, str], DuplicateKey] = {}

    def begin(self, composed: int = 0) -> None:
        """A new document starts, ``composed`` mappings and sequences (when counted)."""

    def build(self, node: Node) -> Any:
        tag = node.tag
        if tag == _PLAIN:
            return plain_scalar(node.value)
        cls = type(node)
        if cls is ScalarNode:
            return node.value if tag == _STR else tagged_scalar(tag, node.value)
        if cls is MappingNode:
            return self.mapping(node)  # !!set, !!map and unknown tags alike
        return self.sequence(node)

    def sequence(self, node: SequenceNode) -> list[Any]:
        return [self.build(item) for item in node.value]  # !!omap, !!pairs: one-key maps

    def key(self, node: Node) -> str:
        if node.tag == _STR and type(node) is ScalarNode:
            return str(node.value)
        key = self.build(node)
        if isinstance(key, str):
            return key
        if key is None or isinstance(key, dict | list):
            raise InputError(
                f"invalid YAML: unsupported map key {json.dumps(key)}",
                line=node.start_mark.line + 1,
            )
        return json_key(key)

    def mapping(self, node: MappingNode) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE or (key_node.tag == _PLAIN and key_node.value == "<<"):
                self.merge(result, value_node)
                continue
            key = self.key(key_node)
            value = self.build(value_node)
            if key in result:
                self.duplicate(node, key_node, key, result[key], value)
            result[key] = value
        return result

    def merge(self, result: dict[str, Any], node: Node) -> None:
        """``<<: *base``: keys set in place, in order, as yaml.v2 does (so a merge after a
        key overrides it); of a list of mappings, the first mapping wins."""
        items = node.value if isinstance(node, SequenceNode) else [node]
        for item in reversed(items):
            if not isinstance(item, MappingNode):
                raise InputError(
                    "invalid YAML: map merge requires map or sequence of maps as the value",
                    line=item.start_mark.line + 1,
                )
            result.update(self.build(item))

    def duplicate(self, node: MappingNode, key_node: Node, key: str, old: Any, new: Any) -> None:
        """Record a repeated key (the rare path: the earlier key node is searched for)."""
        earlier = None
        for other, _ in node.value:
            if other is key_node:
                break
            if other.tag != _MERGE and other.value != "<<" and self.key(other) == key:
                earlier = other
        if earlier is None:
            return  # the key came from a merge: overriding it is what merges are for
        line = key_node.start_mark.line + 1
        found = DuplicateKey(key, line, earlier.start_mark.line + 1, old == new, self.document)
        self.duplicates.setdefault((self.document, line, key), found)


class _AliasBuilder(_Builder):
    """The builder for a text with anchors, bounding what aliases expand to.

    libyaml composes a document whole before it is built, and an alias as the anchored
    node itself: so the mappings and sequences built beyond those composed come from
    aliases. yaml.v2's rule (:func:`inputlimits.excessive_aliasing`) is applied to them,
    with scalars left out (an alias to one adds one value); tagged collections, which the
    composer does not count, are allowed for by every "!" of the text, so the count of
    aliased ones is never too high. An anchor inside its own value never ends expanding:
    it is refused, by name, as soon as the rule or the depth stops it.
    """

    def __init__(self, tags: int) -> None:
        super().__init__()
        self.tags = tags
        self.begin(0)

    def begin(self, composed: int = 0) -> None:
        self.composed = composed + self.tags  # at least the distinct collections
        self.built = self.depth = 0
        self.next_check = self.composed + 100

    def mapping(self, node: MappingNode) -> dict[str, Any]:
        self.enter(node)
        try:
            return super().mapping(node)
        finally:
            self.depth -= 1

    def sequence(self, node: SequenceNode) -> list[Any]:
        self.enter(node)
        try:
            return super().sequence(node)
        finally:
            self.depth -= 1

    def enter(self, node: Node) -> None:
        self.built += 1
        if self.built > self.next_check:
            aliased = self.built - self.composed
            if inputlimits.excessive_aliasing(aliased, self.built):
                raise InputError(_alias_reason(node), line=node.start_mark.line + 1)
            self.next_check = self.built + max(100, self.built // 64)
        self.depth += 1
        if self.depth > inputlimits.MAX_DEPTH:
            self.depth -= 1
            raise InputError(_alias_reason(node, deep=True), line=node.start_mark.line + 1)


def _alias_reason(node: Node, *, deep: bool = False) -> str:
    if inputlimits.in_a_cycle(node):
        return "invalid YAML: an anchor's value contains itself"
    if deep:
        return inputlimits.too_deep_message()
    return "invalid YAML: document contains excessive aliasing"  # yaml.v2's words


def _builder(text: str) -> _Builder:
    """The plain builder, or the one that bounds aliases when ``text`` may define an
    anchor (URLs' "a=1&b=2" and prose do not look like one)."""
    return _AliasBuilder(text.count("!")) if inputlimits.has_anchor(text) else _Builder()


# --- errors and files ---------------------------------------------------------------------


def _input_error(exc: yaml.YAMLError, path: str | Path | None, first_line: int = 1) -> InputError:
    """A one-line error naming the file and the line, like yamlwrite's for ruamel."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        return InputError(f"invalid YAML: {problem}", path=path, line=line)
    return InputError(f"invalid YAML: {exc}", path=path)


class _NoGC:
    """Parsing allocates millions of objects that all live on: the cyclic GC would walk
    them again and again (two thirds of the time on a big CRD) and find nothing."""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *_: object) -> None:
        if self.enabled:
            gc.enable()


def _nodes(text: str, path: str | Path | None, builder: _Builder | None = None) -> Iterator[Node]:
    """Each document's composed node (an empty document is an empty plain scalar), the
    ``builder`` told when each begins.

    The text's size and nesting are checked first (:mod:`olmtool.inputlimits`): libyaml
    composes recursively in C, and a document nested too deep would crash the process.
    """
    if len(text) > inputlimits.MAX_TEXT_CHARS:
        raise InputError(
            f"{len(text)} characters, more than the {inputlimits.MAX_TEXT_CHARS} allowed",
            path=path,
        )
    try:
        too_deep = inputlimits.yaml_too_deep(text)
        loader = (_CountingLoader if isinstance(builder, _AliasBuilder) else _Loader)(text)
    except UnicodeEncodeError as exc:  # a lone surrogate: no file decodes to one
        message = f"invalid YAML: not Unicode text (character {exc.start})"
        raise InputError(message, path=path) from None
    try:
        index = 0
        while loader.check_node():
            if too_deep is not None and index == too_deep.document:
                message = inputlimits.too_deep_message()
                raise InputError(message, path=path, line=too_deep.line)
            node = loader.get_node()
            if builder is not None:
                builder.begin(loader.collections if isinstance(loader, _CountingLoader) else 0)
                loader.collections = 0
            yield node
            index += 1
    except yaml.YAMLError as exc:
        raise _input_error(exc, path) from None
    finally:
        loader.dispose()


def iter_documents(text: str, *, path: str | Path | None = None) -> Iterator[tuple[int, Any]]:
    """(line where its content starts, data) per document, empty ones as None; a defect
    raises InputError naming ``path`` and the line, after the documents before it."""
    inputlimits.ensure_recursion_room()
    builder = _builder(text)
    nodes = _nodes(text, path, builder)
    while True:
        with _NoGC():
            node = next(nodes, None)
            if node is None:
                return
            data = _build(builder, node, path)
        yield node.start_mark.line + 1, data


def _build(builder: _Builder, node: Node, path: str | Path | None) -> Any:
    try:
        return builder.build(node)
    except InputError as exc:
        raise InputError(exc.message, path=path, line=exc.line) from None
    except RecursionError:  # not expected: depth and aliases are bounded before
        raise InputError(
            inputlimits.too_deep_message(), path=path, line=node.start_mark.line + 1
        ) from None


@dataclass
class YamlFile:
    """One file's documents (empty ones skipped), its duplicate keys and lazy lines."""

    text: str
    documents: list[Any]
    duplicates: list[DuplicateKey] = field(default_factory=list)
    # position of each kept document in the stream, for finding its node again
    positions: list[int] = field(default_factory=list)
    _nodes: list[Node] | None = field(default=None, repr=False, compare=False)

    def node(self, index: int = 0) -> Node | None:
        """The composed node of document ``index`` (the whole file composed once, on the
        first call: a finding's line costs a second parse, a clean file none)."""
        if self._nodes is None:
            try:
                with _NoGC():
                    self._nodes = list(_nodes(self.text, None))
            except InputError:
                self._nodes = []
        position = self.positions[index] if index < len(self.positions) else index
        return self._nodes[position] if position < len(self._nodes) else None

    def start_line(self, index: int = 0) -> int | None:
        """1-based line where document ``index`` begins (its first key or item)."""
        node = self.node(index)
        return node.start_mark.line + 1 if node is not None else None

    def line_at(self, index: int, dotted_path: str) -> int | None:
        """Line of the deepest node of ``a.b[0].c[key]`` found in document ``index``."""
        return line_at(self.node(index), dotted_path)

    def text_line(self, index: int, dotted_path: str, line: int) -> int | None:
        """The file line of line ``line`` (0-based) of the string at ``dotted_path``: exact
        for a literal block scalar (``|``, lines kept as written) and a scalar written on
        one line; None otherwise (folding moves lines) or when the path is not there."""
        node: Node | None = self.node(index)
        for match in _PATH_TOKEN.finditer(dotted_path):
            found = _child(node, match.group(1) if match.group(1) is not None else match.group(2))
            if found is None:
                return None
            node = found[1]
        if not isinstance(node, ScalarNode):
            return None
        if node.style == "|":
            return node.start_mark.line + 2 + line  # the text starts below the indicator
        if node.start_mark.line == node.end_mark.line:
            return node.start_mark.line + 1
        return None


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def line_at(node: Node | None, dotted_path: str) -> int | None:
    """Line of the deepest node of ``a.b[0].c[key]`` (apiserver field-path notation)
    below a composed ``node``, or None when not even the first step is there."""
    line = None
    for match in _PATH_TOKEN.finditer(dotted_path):
        token = match.group(1) if match.group(1) is not None else match.group(2)
        found = _child(node, token)
        if found is None:
            break
        line, node = found
    return line


def _child(node: Node | None, token: str) -> tuple[int, Node] | None:
    if isinstance(node, MappingNode):
        hit = None
        for key_node, value_node in node.value:  # the last of duplicates wins
            if isinstance(key_node, ScalarNode) and key_text(key_node) == token:
                hit = (key_node.start_mark.line + 1, value_node)
        return hit
    if isinstance(node, SequenceNode) and token.isdigit() and int(token) < len(node.value):
        item = node.value[int(token)]
        return item.start_mark.line + 1, item
    return None


def key_text(node: ScalarNode) -> str:
    """A composed key as the data has it (``1``, ``true``, ``yes`` -> ``"true"``)."""
    try:
        return _Builder().key(node)
    except InputError:
        return str(node.value)


def parse(text: str, *, path: str | Path | None = None, single: bool = False) -> YamlFile:
    """Every document of ``text``; bad YAML raises InputError naming ``path`` and the line.

    ``single``: more than one document is an error too (a config file, annotations.yaml).
    """
    inputlimits.ensure_recursion_room()
    builder = _builder(text)
    documents: list[Any] = []
    positions: list[int] = []
    with _NoGC():
        for position, node in enumerate(_nodes(text, path, builder)):
            builder.document = len(documents)
            data = _build(builder, node, path)
            if data is not None:
                documents.append(data)
                positions.append(position)
    parsed = YamlFile(text, documents, list(builder.duplicates.values()), positions)
    if single and (len(positions) > 1 or (positions and positions[0] > 0)):
        raise InputError(
            "invalid YAML: expected a single document in the stream",
            path=path,
            line=parsed.start_line(1 if positions[0] == 0 else 0),
        )
    return parsed


def load_all(text: str, *, path: str | Path | None = None) -> list[Any]:
    """The non-empty documents of ``text`` as plain data."""
    return parse(text, path=path).documents


def load(text: str, *, path: str | Path | None = None) -> Any:
    """The single document of ``text`` (None when empty); more than one is an error."""
    documents = parse(text, path=path, single=True).documents
    return documents[0] if documents else None


def read_text(path: str | Path) -> str:
    """A UTF-8 file's text, or a one-line InputError naming it: a regular file of a
    bounded size (:func:`olmtool.safefiles.read_regular`; FIFOs, devices, dangling or
    looping symlinks are refused)."""
    return read_regular_text(Path(path))


def read(path: str | Path, *, single: bool = False) -> YamlFile:
    """A UTF-8 YAML file parsed, or a one-line InputError naming it."""
    return parse(read_text(path), path=path, single=single)
