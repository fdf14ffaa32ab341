"""Deterministic YAML: sorted keys, block style, literal blocks for multi-line text.

Every generated file goes through :func:`dump` so that regenerating an unchanged input
gives a byte-identical file and diffs stay small. Reading uses ruamel's round trip only
where a file is rewritten keeping its comments (the base CSV): files read for their data
go through :mod:`olmtool.yamlread`, which reads YAML as Kubernetes does, much faster.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from olmtool import inputlimits
from olmtool.errors import InputError
from olmtool.yamlread import parse, read_text  # one rule for reading a YAML file
from olmtool.yamlscalars import reads_as_string

# Characters a string keeps only escaped, in double quotes: C0 and C1 controls but tab and
# line feed, surrogates, U+FEFF, U+FFFE, U+FFFF, and the line breaks readers fold (NEL,
# U+2028, U+2029).
_ESCAPED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def _dumper() -> YAML:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 4096  # one value per line: wrapping would make diffs noisy
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def to_plain(value: Any, *, sort_keys: bool = True) -> Any:
    """Sorted mappings, literal blocks for text that spans lines, and quotes on every
    string Kubernetes' reader would take for something else."""
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else list(value)
        return {_string(key, key=True): to_plain(value[key], sort_keys=sort_keys) for key in keys}
    if isinstance(value, list | tuple):
        return [to_plain(item, sort_keys=sort_keys) for item in value]
    if isinstance(value, str):
        return _string(value)
    return value


def _string(value: Any, *, key: bool = False) -> Any:
    """ruamel writes YAML 1.2, where ``on``, ``off``, ``yes``, ``no``, ``y`` and ``n`` are
    plain strings; yaml.v2 (kubectl, the apiserver, opm) reads them as booleans, so they,
    and whatever else it would not read back as the same string, are quoted. Text of
    several lines is a literal block where one keeps it exactly (ruamel double-quotes the
    rest, with escapes)."""
    if not isinstance(value, str) or type(value) is not str:
        return value  # not text, or a style chosen already
    if _ESCAPED.search(value):
        return DoubleQuotedScalarString(value)
    if "\n" in value:
        return value if key else LiteralScalarString(value)
    if not reads_as_string(value):
        return SingleQuotedScalarString(value)
    return value


def dump(data: Any, *, header: str | None = None, sort_keys: bool = True) -> str:
    """YAML text for ``data``; ``header`` becomes leading ``#`` comment lines."""
    return _dump(to_plain(data, sort_keys=sort_keys), header)


def dump_document(document: Any, *, header: str | None = None) -> str:
    """YAML text for a document loaded round-trip, keeping its key order and comments.

    Values inserted into it should already have gone through :func:`to_plain`.
    """
    return _dump(document, header)


def _dump(data: Any, header: str | None) -> str:
    stream = io.StringIO()
    if header:
        for line in header.splitlines():
            stream.write(f"# {line}".rstrip() + "\n")
    _dumper().dump(data, stream)
    return stream.getvalue()


class _Dumper(yaml.CSafeDumper):
    """YAML 1.1 output with multi-line strings as literal blocks (as go-yaml writes them)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    if style is None and value and not reads_as_string(value):
        # YAML 1.1 as yaml.v2 reads it: "y", "0o755", "1e5" would not come back as
        # strings, and PyYAML's own resolver does not know it; go-yaml double-quotes.
        style = '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)
_NO_WRAP = 1 << 30


def dump_as_go(document: Any) -> str:
    """YAML text for ``document`` as sigs.k8s.io/yaml writes it (opm's catalogs, byte for
    byte): sorted keys, sequences not indented, double quotes, no line wrapping; the same
    quoting rule as :func:`dump`."""
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=_NO_WRAP,
    )


def plain(value: Any) -> Any:
    """Builtin dicts/lists/scalars for a round-trip document (no comments or positions)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def load(path: str | Path) -> Any:
    """One YAML document, with a one-line error naming the file and line if it is bad."""
    return loads(read_text(path), path=path)


def loads(text: str, *, path: str | Path | None = None) -> Any:
    _bounded(text, path)
    with _one_line_errors(path):
        return YAML(typ="rt").load(text)


def _bounded(text: str, path: str | Path | None) -> None:
    """The one rule for input (:mod:`olmtool.inputlimits`) before ruamel.yaml, which
    recurses in Python and whose aliases :func:`plain` would expand: nesting checked from
    the text, aliases by a yamlread parse when the text has anchors (rarely)."""
    too_deep = inputlimits.yaml_too_deep(text)
    if too_deep is not None:
        raise InputError(inputlimits.too_deep_message(), path=path, line=too_deep.line)
    if inputlimits.has_anchor(text):
        parse(text, path=path)


@contextmanager
def _one_line_errors(path: str | Path | None) -> Iterator[None]:
    """Turn a YAML parse error into an InputError naming the file and (if known) the line."""
    try:
        yield
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None


def load_all(path: str | Path) -> list[Any]:
    """Every document of a multi-document YAML file (empty documents skipped)."""
    return loads_all(read_text(path), path=path)


def loads_all(text: str, *, path: str | Path | None = None) -> list[Any]:
    _bounded(text, path)
    with _one_line_errors(path):
        return [doc for doc in YAML(typ="rt").load_all(text) if doc is not None]
