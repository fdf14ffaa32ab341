"""YAML read as Kubernetes and opm read it: sigs.k8s.io/yaml (Go yaml.v2, then JSON).

Every loader that reads a file for its data goes through here; ruamel.yaml's round trip
(:mod:`olmtool.yamlio`) stays for files rewritten with their comments and for output.

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

import base64
import binascii
import gc
import json
import math
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from olmtool import inputlimits
from olmtool.errors import InputError
from olmtool.safefiles import read_regular_text

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

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_BINARY = "tag:yaml.org,2002:binary"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_PLAIN = "!olmtool/plain"  # an unquoted, untagged scalar, resolved by _plain_scalar

# yaml.v2's resolve table: these exact plain scalars (resolve.go's resolveMapList).
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"], (_BOOL, True)),
    **dict.fromkeys(["on", "On", "ON"], (_BOOL, True)),
    **dict.fromkeys(["n", "N", "no", "No", "NO", "false", "False", "FALSE"], (_BOOL, False)),
    **dict.fromkeys(["off", "Off", "OFF"], (_BOOL, False)),
    **dict.fromkeys(["", "~", "null", "Null", "NULL"], (_NULL, None)),
    **dict.fromkeys([".nan", ".NaN", ".NAN"], (_FLOAT, float("nan"))),
    **dict.fromkeys([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], (_FLOAT, float("inf"))),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], (_FLOAT, float("-inf"))),
    "<<": (_MERGE, "<<"),
}
# strconv.ParseInt(s, 0, 64) after yaml.v2 removed every underscore.
_GO_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)\Z")
# yaml.v2's yamlStyleFloat (an exponent needs no dot, unlike YAML 1.1's pattern).
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?\Z")  # ParseFloat of ".5", ".5e3"
_OCTAL = re.compile(r"[0-7]+\Z")
_INT64 = (-(2**63), 2**64 - 1)  # int64, or uint64 for big positive numbers
_BASES = {"0x": 16, "0o": 8, "0b": 2}
# Significant digits of the largest uint64 per base: longer numbers are out of range
# before Python converts them (its int() refuses more than 4,300 decimal digits).
_UINT64_DIGITS = {16: 16, 8: 22, 2: 64, 10: 20}


def _go_int(plain: str, value: str) -> int | float | str:
    """strconv.ParseInt(plain, 0, 64), then ParseUint, then ParseFloat, as yaml.v2 tries
    them on ``value`` without its underscores; a number out of every range stays the text
    written (a 5,000-digit integer is a string, as in Go)."""
    sign, digits = (plain[0], plain[1:]) if plain[:1] in "+-" else ("", plain)
    prefix = digits[:2].lower()
    if prefix in _BASES:
        base, body = _BASES[prefix], digits[2:]
    elif len(digits) > 1 and digits[0] == "0":
        if not _OCTAL.match(digits):  # "08": not octal, but yamlStyleFloat takes it
            return _parse_float(plain, value) if _GO_FLOAT.match(plain) else value
        base, body = 8, digits  # Go's base 0 reads a leading zero as octal
    elif digits.isdigit():
        base, body = 10, digits
    else:
        return value
    if len(body) <= _UINT64_DIGITS[base] or len(body.lstrip("0")) <= _UINT64_DIGITS[base]:
        number = int(body, base)
        number = -number if sign == "-" else number
        if _INT64[0] <= number <= _INT64[1]:
            return number
    return _parse_float(plain, value) if _GO_FLOAT.match(plain) else value


def _parse_float(plain: str, value: str) -> float | str:
    """strconv.ParseFloat(plain, 64) as yaml.v2 uses it: out of float64's range is an
    error there (ErrRange), and the scalar stays the string written (``1e400``)."""
    number = float(plain)
    return value if math.isinf(number) else number


def json_key(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float(key, single=True)
    return str(key)


def go_string(value: Any) -> str:
    """A scalar as sigs.k8s.io/yaml hands it to a Go string field (map[string]string
    annotations): ``true`` -> "true", ``1.0`` -> "1", null -> ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value, single=False)
    return str(value)


def _float32(value: float) -> float:
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _go_float(value: float, *, single: bool) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32 or 64): keys are formatted as float32."""
    if single:
        value = _float32(value)
    if math.isnan(value):
        return ".nan" if single else "NaN"
    if math.isinf(value):
        if single:
            return ".inf" if value > 0 else "-.inf"
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    magnitude = abs(value)
    for precision in range(17):  # the shortest digits that read back as the same value
        text = f"{magnitude:.{precision}e}"
        if (_float32(float(text)) if single else float(text)) == magnitude:
            break
    mantissa, exponent = text.split("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    power = int(exponent)
    point = power + 1  # digits before the decimal point
    sign = "-" if value < 0 else ""
    if not -4 <= power < 6:  # Go's %e rule for the shortest form
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


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


def _plain_scalar(value: str) -> Any:
    """An unquoted scalar's JSON value, as yaml.v2 resolves it (resolve.go)."""
    word = _WORDS.get(value)
    if word is not None:
        return word[1]
    first = value[0]
    if first in "0123456789+-":
        # A timestamp (2023-05-02T10:00:00Z, a date) would be tried first; into JSON it
        # is the text written, so it simply falls through to a string here.
        plain = value.replace("_", "") if "_" in value else value
        if _GO_INT.match(plain):
            return _go_int(plain, value)
        if _GO_FLOAT.match(plain):
            return _parse_float(plain, value)
    elif first == "." and _DOT_FLOAT.match(value):
        return _parse_float(value, value)
    return value


def reads_as_string(text: str) -> bool:
    """Whether ``text`` unquoted reads back as this string (writers quote it otherwise)."""
    return isinstance(_plain_scalar(text), str) if text else False


def _tagged_scalar(tag: str, value: str) -> Any:
    """A scalar with an explicit tag (``!!int "12"``, ``!!binary ...``, ``!foo bar``)."""
    if tag in (_INT, _FLOAT, _BOOL, _NULL):
        resolved = _plain_scalar(value) if value else None
        if tag == _INT and isinstance(resolved, float) and resolved.is_integer():
            return int(resolved)
        return resolved
    if tag == _BINARY:
        try:
            data = base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError):
            return value
        return data.decode("utf-8", errors="replace")  # as Go's JSON encoder does
    return value  # !!str, !!timestamp (the text as written), unknown tags


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
            return _plain_scalar(node.value)
        cls = type(node)
        if cls is ScalarNode:
            return node.value if tag == _STR else _tagged_scalar(tag, node.value)
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
    """A one-line error naming the file and the line, like yamlio's for ruamel."""
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
