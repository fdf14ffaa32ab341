"""Bounds for YAML and JSON that other people wrote: nesting depth, aliases, size.

Catalogs and bundles come from anywhere, so every loader (catalog, bundle, templates,
``olmtool.yaml``) applies the same bounds, and exceeding one is a one-line
:class:`~olmtool.errors.InputError` naming the file and line (a finding), never a crash:

- **Nesting**: at most :data:`MAX_DEPTH` (512) mappings and sequences inside each other.
  The deepest real files nest a few dozen levels (CRD schemas embedding a PodSpec); Go's
  decoders accept 10,000 (yaml.v2's scanner, encoding/json), so olmtool refuses nothing
  that opm reads. YAML is checked *before* libyaml composes it, because its composer
  recurses in C and 100,000 levels overflow the stack (a segfault, not an exception):
  :func:`yaml_too_deep` bounds the depth from the text at string speed and, only when
  that bound is above the limit, walks libyaml's events (no recursion) to know for sure.
- **Aliases**: yaml.v2's own rule (``decode.go``, ``allowedAliasRatio``, the fix of
  CVE-2019-11253): once more than 100 of at least 1,000 decoded nodes come from aliases,
  their share may be 99% up to 400,000 nodes, falling to 10% at 4,000,000. A "billion
  laughs" document stops after a few thousand nodes; an anchor whose value contains
  itself is refused as yaml.v2 refuses it.
- **Size**: a text of at most :data:`MAX_TEXT_CHARS` characters (files are bounded when
  read, by :mod:`olmtool.safefiles`).

Big numbers are data, as in Go: see :mod:`olmtool.yamlread` (YAML) and
:mod:`olmtool.catalog.load` (JSON).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache

import yaml

MAX_DEPTH = 512
MAX_TEXT_CHARS = 256 * 1024 * 1024

# yaml.v2 decode.go: alias_ratio_range_low / _high
_ALIAS_LOW = 400_000
_ALIAS_HIGH = 4_000_000

# Python frames per nesting level of the deepest recursive reader (yamlread's builder with
# alias accounting), plus the caller's stack. Python >= 3.11 runs Python-to-Python calls
# without using the C stack, so a higher limit costs nothing there.
RECURSION_ROOM = 4 * MAX_DEPTH + 1000


def ensure_recursion_room() -> None:
    """Raise the interpreter's recursion limit to :data:`RECURSION_ROOM` if it is lower
    (never lowers it, so threads cannot undo each other), so that data nested up to
    :data:`MAX_DEPTH` is read without a RecursionError however deep the caller is."""
    if sys.getrecursionlimit() < RECURSION_ROOM:
        sys.setrecursionlimit(RECURSION_ROOM)


ensure_recursion_room()  # once here, so a test harness that restores the limit keeps it


def excessive_aliasing(aliased: int, decoded: int) -> bool:
    """yaml.v2's rule: too many of ``decoded`` nodes came from expanding aliases."""
    if aliased <= 100 or decoded <= 1000:
        return False
    if decoded <= _ALIAS_LOW:
        allowed = 0.99
    elif decoded >= _ALIAS_HIGH:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)
    return aliased / decoded > allowed


def too_deep_message(kind: str = "YAML") -> str:
    return f"invalid {kind}: nested deeper than {MAX_DEPTH} levels"


# --- YAML nesting, before composing -----------------------------------------------------------


@dataclass(frozen=True)
class TooDeep:
    """Where a YAML text first nests deeper than :data:`MAX_DEPTH`."""

    document: int  # index in the stream (empty documents count)
    line: int  # 1-based


# Lines breaks other than "\n" that libyaml honours (YAML 1.1: CR, NEL, LS, PS).
_ODD_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


@lru_cache(maxsize=64)
def _indent_run(width: int, odd_breaks: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The first line, and any other, whose leading run of spaces, tabs and block
    indicators is ``width`` long (a literal newline first lets the regex engine skip ahead)."""
    breaks = "[\n\r\x85\u2028\u2029]" if odd_breaks else "\n"
    run = rf"[ \t?:-]{{{width}}}"
    return re.compile(rf"\ufeff?{run}"), re.compile(breaks + run)


def _shallow(text: str) -> bool:
    """True when ``text`` cannot nest deeper than MAX_DEPTH, judged from characters only.

    A flow collection needs a ``[`` or ``{``, so there are at most as many flow levels as
    those characters. A block collection starts where a line's leading run of spaces and
    indicators (``-``, ``?``, ``:``) ends (its first entry or key, anchors and tags
    included), and each level is indented further than its parent but for a sequence
    under a mapping key, which may share the key's column: so block levels are at most
    two per column of the longest run. Brackets and runs inside strings and comments
    only make the bound looser, never wrong.
    """
    flow = text.count("[") + text.count("{")
    width = (MAX_DEPTH - flow) // 2  # no run this long: 2 * width + flow <= MAX_DEPTH
    if width < 1:
        return False
    width = width if width < 16 else width - width % 16  # a few compiled patterns only
    first, other = _indent_run(width, any(mark in text for mark in _ODD_BREAKS))
    return first.match(text) is None and other.search(text) is None


def yaml_too_deep(text: str) -> TooDeep | None:
    """Where ``text`` nests deeper than :data:`MAX_DEPTH`, or None.

    Cheap for real files (two string scans, see :func:`_shallow`); otherwise libyaml's
    parser (which keeps its own stack, no recursion) is run over the events, stopping at
    the first level too deep. A syntax error ends the walk: composing stops there too.
    """
    if _shallow(text):
        return None
    loader = _EVENTS(text)
    depth = document = 0
    try:
        while True:
            event = loader.get_event()
            if event is None:
                return None
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                depth += 1
                if depth > MAX_DEPTH:
                    return TooDeep(document, event.start_mark.line + 1)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
            elif kind is yaml.DocumentEndEvent:
                document += 1
    except yaml.YAMLError as exc:
        # libyaml >= 0.2.5 (PyYAML 6.0.4's wheels) stops at 1000 levels itself, scanning
        # ahead of the events: the same verdict, in our words
        if "maximum nesting depth" in str(exc):
            mark = getattr(exc, "problem_mark", None)
            return TooDeep(document, mark.line + 1 if mark is not None else 1)
        return None
    finally:
        loader.dispose()


_EVENTS = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# --- YAML aliases --------------------------------------------------------------------------

# An anchor: "&" and a name. libyaml starts a token with it after white space (or a byte
# order mark), or right after a flow indicator ("[", "{", ","; ":" and "?" in flow
# context), never inside a plain scalar or a tag.
_ANCHOR = re.compile(r"&[^\s\[\]{},]")
_BEFORE_ANCHOR = "[{,:?\ufeff"


def has_anchor(text: str) -> bool:
    """Whether ``text`` may define an anchor, so hold aliases (URLs' "a=1&b=2" and prose
    do not look like one): only then are aliases counted."""
    if "&" in text:
        for match in _ANCHOR.finditer(text):
            start = match.start()
            if start == 0 or text[start - 1].isspace() or text[start - 1] in _BEFORE_ANCHOR:
                return True
    return False


def in_a_cycle(node: yaml.Node) -> bool:
    """Whether the composed nodes below ``node`` lead back to one of them: an anchor
    inside its own value (walked without recursion, each node once)."""
    on_path: dict[int, bool] = {}
    stack: list[tuple[yaml.Node, int]] = [(node, 0)]
    while stack:
        current, index = stack.pop()
        children = _children(current)
        if index == 0:
            on_path[id(current)] = True
        if index < len(children):
            stack.append((current, index + 1))
            child = children[index]
            if on_path.get(id(child)):
                return True
            if id(child) not in on_path:
                stack.append((child, 0))
        else:
            on_path[id(current)] = False
    return False


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


# --- JSON nesting, after decoding ------------------------------------------------------------

_JSON_TOKEN = re.compile(r'[\[\]{}]|"(?:[^"\\]|\\.)*"', re.S)


def json_too_deep(text: str, start: int, end: int | None = None) -> int | None:
    """Offset in ``text`` where the JSON value at ``start`` first nests deeper than
    :data:`MAX_DEPTH`, or None. Values with no more brackets than the limit are
    answered by counting; others by walking their brackets, skipping strings."""
    stop = len(text) if end is None else end
    if text.count("[", start, stop) + text.count("{", start, stop) <= MAX_DEPTH:
        return None
    depth = 0
    for match in _JSON_TOKEN.finditer(text, start, stop):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif token == "]" or token == "}":
            depth -= 1
            if depth == 0 and end is None:
                return None
    return None
