"""Comments of a hand-edited base CSV that stay with the entries they describe.

ruamel.yaml keeps a full-line comment with whatever *precedes* it: the end-of-line slot
of the previous key or list item (of its deepest last descendant, for a nested value),
or the "before the first child" slot of the enclosing key. That is right while nothing
moves, but the CSV merge inserts keys at the end of maps and reorders keyed lists, so a
comment about one entry came out above another (or inside a neighbour). Before merging,
:func:`anchor_comments` moves every full-line comment into the "before" slot of the key
or list item that follows it (a list item that is a map carries it itself, so it moves
with the item); :func:`restore_trailing` puts the comments that ended the document back
at its end. End-of-line comments stay where they are.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from ruamel.yaml.tokens import CommentToken

Tokens = list[CommentToken]
Node = CommentedMap | CommentedSeq

# ca.items slots: a map's [key post, key pre, value post, value pre (first child)];
# a list's [item post, item pre, ...]
_MAP_VALUE_POST, _MAP_VALUE_PRE, _KEY_PRE = 2, 3, 1
_SEQ_POST, _SEQ_PRE = 0, 1


def anchor_comments(document: CommentedMap) -> Tokens:
    """Move full-line comments before the keys and items they precede; returns the
    comments after the document's last value (see :func:`restore_trailing`)."""
    return _anchor(document, [])


def restore_trailing(document: Any, tokens: Tokens) -> None:
    """Append ``tokens`` after the last value of ``document`` (wherever the merge left it)."""
    if not tokens:
        return
    node, child = _last_leaf(document)
    if node is None:
        return
    slot_index = _SEQ_POST if isinstance(node, CommentedSeq) else _MAP_VALUE_POST
    slot = node.ca.items.setdefault(child, [None, None, None, None])
    current = slot[slot_index]
    head = current.value if current is not None else "\n"
    text = head + "".join(" " * t.start_mark.column + t.value for t in tokens)
    slot[slot_index] = CommentToken(text, CommentMark(0))


# -- moving --------------------------------------------------------------------------------


def _anchor(node: Node, leading: Tokens) -> Tokens:
    pending = leading
    for child in list(node.keys()) if isinstance(node, CommentedMap) else range(len(node)):
        value = node[child]
        before = pending
        if _is_block(value):
            first = _take_first_child_comments(node, child, value)
            pending = _anchor(value, first)
        else:
            pending = _split_post(node, child, value)
        _set_before(node, child, value, before)
    return pending


def _is_block(value: Any) -> bool:
    if not isinstance(value, CommentedMap | CommentedSeq) or not value:
        return False
    return not value.fa.flow_style()


def _take_first_child_comments(node: Node, child: Any, value: Node) -> Tokens:
    """Comments between ``child:`` and its value's first entry (both of ruamel's copies),
    plus what follows an end-of-line comment after the key."""
    found: Tokens = []
    slot = node.ca.items.get(child)
    if isinstance(node, CommentedMap) and slot:
        post = slot[_MAP_VALUE_POST]
        if post is not None:
            found += _cut_after_first_line(post, lambda: _clear(slot, _MAP_VALUE_POST))
        found += slot[_MAP_VALUE_PRE] or []
        slot[_MAP_VALUE_PRE] = None
    comment = value.ca.comment
    if comment and len(comment) > 1 and comment[1]:
        found += [token for token in comment[1] if all(token is not t for t in found)]
        comment[1] = []
    return found


def _split_post(node: Node, child: Any, value: Any) -> Tokens:
    """The comment lines after a scalar (or flow) value, cut from its end-of-line slot."""
    slot = node.ca.items.get(child)
    index = _SEQ_POST if isinstance(node, CommentedSeq) else _MAP_VALUE_POST
    if not slot or slot[index] is None:
        return []
    token = slot[index]

    def drop() -> None:
        _clear(slot, index)
        comment = value.ca.comment if isinstance(value, CommentedMap | CommentedSeq) else None
        if comment and comment[0] is token:  # a flow value holds the same token
            comment[0] = None

    if isinstance(value, LiteralScalarString | FoldedScalarString):
        drop()  # after a block scalar there is no end-of-line part: all lines follow it
        return _tokens(token.value, token.start_mark.column)
    return _cut_after_first_line(token, drop)


def _cut_after_first_line(token: CommentToken, drop: Any) -> Tokens:
    text: str = token.value
    head, newline, rest = text.partition("\n")
    if not newline:
        return []
    if head.strip():
        token.value = head + "\n"
    else:
        drop()
    return _tokens(rest, None)


def _tokens(text: str, first_column: int | None) -> Tokens:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    tokens: Tokens = []
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            tokens.append(CommentToken("\n", CommentMark(0)))
            continue
        column = len(line) - len(line.lstrip())
        if number == 0 and first_column is not None and column == 0:
            column = first_column
        tokens.append(CommentToken(stripped + "\n", CommentMark(column)))
    return tokens


def _set_before(node: Node, child: Any, value: Any, tokens: Tokens) -> None:
    if isinstance(node, CommentedSeq) and isinstance(value, CommentedMap):
        # carried by the item itself, so it moves with the item when lists are merged
        slot = node.ca.items.get(child)
        if slot and slot[_SEQ_PRE]:  # the loader's own "before" (after a flow value)
            tokens = tokens + slot[_SEQ_PRE]
            slot[_SEQ_PRE] = None
        if tokens:
            comment = value.ca.comment
            value.ca.comment = [comment[0] if comment else None, tokens + _pre(comment)]
        return
    if not tokens:
        return
    slot = node.ca.items.setdefault(child, [None, None, None, None])
    index = _SEQ_PRE if isinstance(node, CommentedSeq) else _KEY_PRE
    slot[index] = tokens + (slot[index] or [])


def _pre(comment: list[Any] | None) -> Tokens:
    return list(comment[1] or []) if comment and len(comment) > 1 else []


def _clear(slot: list[Any], index: int) -> None:
    slot[index] = None


def _last_leaf(node: Any) -> tuple[Node | None, Any]:
    """The collection holding the document's last scalar (or flow) value, and its key
    (plain containers the merge inserted are turned into commented ones on the way)."""
    if not isinstance(node, CommentedMap | CommentedSeq) or not node:
        return None, None
    last = list(node.keys())[-1] if isinstance(node, CommentedMap) else len(node) - 1
    value = node[last]
    if isinstance(value, dict | list) and not isinstance(value, CommentedMap | CommentedSeq):
        value = node[last] = _commented(value)
    return _last_leaf(value) if _is_block(value) else (node, last)


def _commented(value: Any) -> Any:
    if isinstance(value, dict):
        return CommentedMap((key, _commented(item)) for key, item in value.items())
    if isinstance(value, list):
        return CommentedSeq(_commented(item) for item in value)
    return value
