"""Adding a release to ``olmtool.yaml`` (``bundle release``) without touching the rest.

The file is read round-trip (:func:`olmtool.yamlwrite.loads`) only to find where things are;
the edit is made on the text, line by line, so every other byte stays as written: comments,
blank lines, quoting, flow or block style, indentation.

* With ``bundle.releases`` (block style), the new entry goes after the last one, at its
  indentation.
* In the one-release form, the file is first turned into the releases form: ``version``
  and the csv's ``replaces``/``skips``/``skipRange`` lines move into a first release, and a
  ``deployment.image`` tagged with that version is rewritten to end in ``:{version}`` (the
  same image for that release, the right one for the next); ``releases:`` is added as
  the last key of ``bundle:``.

What cannot be edited that way (flow-style ``bundle``, ``csv`` or ``releases``) is an
:class:`~olmtool.errors.InputError`; the caller re-validates the text before writing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from olmtool import yamlwrite
from olmtool.errors import InputError

EDGE_KEYS = ("replaces", "skips", "skipRange")


@dataclass
class ReleaseEdit:
    """The edited text, and what changed besides the new entry."""

    text: str
    converted: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass(order=True)
class _Splice:
    """Replace lines ``[start, end)`` by ``lines`` (an insertion when start == end)."""

    start: int
    end: int
    lines: list[str] = field(compare=False)


def add_release(text: str, entry: dict[str, Any], *, path: Path) -> ReleaseEdit:
    """``text`` with ``entry`` (plain data, keys in the order to write) appended to
    ``bundle.releases``."""
    document = yamlwrite.loads(text, path=path)
    bundle = document.get("bundle") if isinstance(document, CommentedMap) else None
    if not isinstance(bundle, CommentedMap):
        raise InputError("has no bundle section", path=path)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    releases = bundle.get("releases")
    if isinstance(releases, CommentedSeq) and releases:
        edit = ReleaseEdit("")
        splices = [_append_entry(lines, releases, entry, path)]
    else:
        edit = ReleaseEdit("", converted=True)
        splices = _convert(lines, document, bundle, entry, edit, path)
    for splice in sorted(splices, key=lambda s: (s.start, s.end), reverse=True):
        lines[splice.start : splice.end] = splice.lines
    edit.text = "".join(lines)
    return edit


def _append_entry(
    lines: list[str], releases: CommentedSeq, entry: dict[str, Any], path: Path
) -> _Splice:
    if releases.fa.flow_style():
        raise InputError(
            "bundle.releases is a flow-style list: write it as a block list to add to it",
            path=path,
            line=releases.lc.line + 1,
        )
    last_line, content_col = releases.lc.item(len(releases) - 1)
    dash = lines[last_line].rindex("-", 0, content_col)
    end = _block_end(lines, last_line, dash)
    return _Splice(end + 1, end + 1, _entry_lines([entry], dash))


def _convert(
    lines: list[str],
    document: CommentedMap,
    bundle: CommentedMap,
    entry: dict[str, Any],
    edit: ReleaseEdit,
    path: Path,
) -> list[_Splice]:
    """Splices turning the one-release form into ``releases:`` with ``entry`` second."""
    if "releases" in bundle:  # an empty list: the one-release form all the same
        raise InputError("bundle.releases is empty: list the releases, or remove it", path=path)
    version = bundle.get("version")
    if version is None:
        raise InputError("bundle has neither version nor releases", path=path)
    first: dict[str, Any] = {"version": str(version)}
    splices = [_remove_key(lines, bundle, "version", path)]
    csv = bundle.get("csv")
    for key in EDGE_KEYS:
        if isinstance(csv, CommentedMap) and key in csv:
            first[key] = yamlwrite.plain(csv[key])
            splices.append(_remove_key(lines, csv, key, path))
    image = _image_splice(lines, bundle.get("deployment"), str(version))
    if image:
        splices.append(image)
        edit.notes.append(f"deployment.image now ends in :{{version}} (was :{version})")
    bundle_line, bundle_col = document.lc.key("bundle")
    key_col = _first_key_col(bundle, bundle_col + 2)
    end = _block_end(lines, bundle_line, bundle_col)
    items = _entry_lines([first, entry], key_col + 2)
    splices.append(_Splice(end + 1, end + 1, [f"{' ' * key_col}releases:\n", *items]))
    return splices


def _remove_key(lines: list[str], mapping: CommentedMap, key: str, path: Path) -> _Splice:
    line, col = mapping.lc.key(key)
    if lines[line][:col].strip():
        raise InputError(
            f"{key} shares its line with other keys (flow style): move it into a release by hand",
            path=path,
            line=line + 1,
        )
    return _Splice(line, _block_end(lines, line, col) + 1, [])


def _image_splice(lines: list[str], deployment: Any, version: str) -> _Splice | None:
    """``deployment.image: repo:<version>`` rewritten as ``"repo:{version}"``."""
    if not isinstance(deployment, CommentedMap) or deployment.fa.flow_style():
        return None
    image = deployment.get("image")
    if not isinstance(image, str) or not image.endswith(f":{version}"):
        return None
    line, col = deployment.lc.value("image")
    text = lines[line]
    end = _scalar_end(text, col)
    if end is None or yamlwrite.plain(yamlwrite.loads(f"x: {text[col:end]}\n"))["x"] != image:
        return None  # a multi-line or oddly quoted value: leave it as written
    pattern = image.removesuffix(version) + "{version}"
    return _Splice(line, line + 1, [f'{text[:col]}"{pattern}"{text[end:]}'])


def _scalar_end(text: str, col: int) -> int | None:
    """Where the scalar starting at ``col`` ends on its line (None: it does not)."""
    quote = text[col : col + 1]
    if quote in ('"', "'"):
        index = col + 1
        while index < len(text):
            if text[index] == "\\" and quote == '"':
                index += 2
                continue
            if text[index] == quote:
                if quote == "'" and text[index + 1 : index + 2] == "'":
                    index += 2
                    continue
                return index + 1
            index += 1
        return None
    comment = text.find(" #", col)
    end = comment if comment >= 0 else len(text.rstrip("\r\n"))
    return len(text[:end].rstrip())


def _first_key_col(mapping: CommentedMap, default: int) -> int:
    for key in mapping:
        return int(mapping.lc.key(key)[1])
    return default


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """The last line of the block that starts at line ``start`` (a key or a list item
    at column ``indent``): every following line indented deeper, blank lines and
    comments between them; trailing blank lines and comments belong to what follows."""
    last = start
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if not stripped:
            continue
        if len(lines[index]) - len(lines[index].lstrip(" ")) > indent:
            last = index
        elif not stripped.startswith("#"):
            break
    return last


def _entry_lines(entries: list[dict[str, Any]], dash_col: int) -> list[str]:
    """Block-list items for ``entries`` with the dash at ``dash_col`` (short lists in flow
    style, as people write ``channels: [alpha, stable]``)."""
    items = []
    for entry in entries:
        item = CommentedMap()
        for key, value in entry.items():
            if isinstance(value, list):
                value = CommentedSeq(value)
                value.fa.set_flow_style()
            item[key] = value
        items.append(item)
    text = yamlwrite.dump_document(items)
    rendered = text.splitlines(keepends=True)
    margin = min(len(line) - len(line.lstrip(" ")) for line in rendered if line.strip())
    return [" " * dash_col + line[margin:] if line.strip() else line for line in rendered]
