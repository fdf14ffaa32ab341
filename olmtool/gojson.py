"""JSON text exactly as Go's ``encoding/json`` (Go 1.19, what opm v1.26 is built with)
writes it, for the bytes opm puts in catalogs.

- :func:`marshal` is ``json.Marshal`` of decoded data (``map[string]interface{}``):
  sorted keys, no spaces, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as ``\\u003c``
  etc., control characters other than ``\\n \\r \\t`` as ``\\u00XX`` (Go 1.19 has no
  ``\\b``/``\\f`` short forms), and floats in Go's format (``1`` not ``1.0``, ``1e+21``,
  ``1e-7``).
- :func:`compact` and :func:`indent` are ``json.Compact`` and ``json.Indent``: how a
  ``json.RawMessage`` (a property value kept as read) comes out of an encoder.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from decimal import Decimal
from typing import Any

from olmtool.errors import InputError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1
_HTML = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"))
_SEPARATORS = ("\u2028", "\\u2028"), ("\u2029", "\\u2029")
_SHORT_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_PLACEHOLDER = "\x00f{}\x00"
_PLACEHOLDER_OUT = re.compile(r'"\\u0000f(\d+)\\u0000"')


def go_float(value: float) -> str:
    """``strconv.AppendFloat(f, 'f' or 'e', -1, 64)`` as encoding/json chooses and cleans it."""
    if math.isnan(value) or math.isinf(value):
        raise InputError(f"json: unsupported value: {value!r}")  # as Go's Marshal refuses
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    # repr is the shortest round-tripping decimal, as Go's -1 precision is
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exponent = int(exponent) + len(digit_tuple) - len(digits)  # value = digits * 10**exponent
    prefix = "-" if sign else ""
    if 1e-6 <= abs(value) < 1e21:
        if exponent >= 0:
            return prefix + digits + "0" * exponent
        point = len(digits) + exponent
        if point > 0:
            return prefix + digits[:point] + "." + digits[point:]
        return prefix + "0." + "0" * -point + digits
    power = len(digits) - 1 + exponent
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    # 'e' writes at least two exponent digits; encoding/json then trims "e-07" to "e-7"
    written = f"+{power:02d}" if power >= 0 else f"-{-power}"
    return f"{prefix}{mantissa}e{written}"


def marshal(value: Any, *, escape_html: bool = True, unstructured: bool = True) -> str:
    """``json.Marshal(value)``: compact, map keys sorted.

    Numbers are what Go held: go-yaml converting YAML to JSON keeps integers up to
    uint64 (``unstructured=False``: a RawMessage read from YAML); an unstructured object
    went through Kubernetes' JSON decoding as well, which holds every number that parses
    as an int64 as one (so ``-0`` is ``0``) and the rest as float64."""
    floats: list[float] = []
    prepared = _prepare(value, floats, INT64_MAX if unstructured else UINT64_MAX)
    if unstructured:
        floats[:] = [0.0 if f == 0 else f for f in floats]
    text = json.dumps(prepared, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if "\\b" in text or "\\f" in text:  # Python's short escapes Go 1.19 does not have
        text = _SHORT_ESCAPE.sub(_long_escape, text)
    if escape_html:
        for char, escaped in _HTML:
            if char in text:  # outside strings JSON has none of these characters
                text = text.replace(char, escaped)
    for char, escaped in _SEPARATORS:
        if char in text:
            text = text.replace(char, escaped)
    if floats:
        text = _PLACEHOLDER_OUT.sub(lambda m: go_float(floats[int(m[1])]), text)
    return text


def _long_escape(match: re.Match[str]) -> str:
    return {"b": "\\u0008", "f": "\\u000c"}.get(match[1], match[0])


def _prepare(value: Any, floats: list[float], int_limit: int) -> Any:
    """A copy json.dumps can write, floats replaced by placeholders filled in afterwards
    (Python's float repr is not Go's), keys made strings as YAML-to-JSON makes them."""
    if isinstance(value, dict):
        return {_key(k): _prepare(v, floats, int_limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_prepare(v, floats, int_limit) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        # a string exactly like a placeholder would be mistaken for a float
        if isinstance(value, str) and "\x00" in value and re.fullmatch(r"\x00f\d+\x00", value):
            raise InputError("a string value is made of NUL-delimited digits olmtool reserves")
        return value
    if isinstance(value, int):
        if INT64_MIN <= value <= int_limit:
            return value
        value = float(value)
    if isinstance(value, float):
        floats.append(value)
        return _PLACEHOLDER.format(len(floats) - 1)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()  # Kubernetes keeps timestamps as their text
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, float):
        return go_float(key)
    return str(key)


# A JSON string token (unrolled: no per-character alternation) and JSON's whitespace.
_STRING = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")', re.S)
_NO_SPACE = str.maketrans("", "", " \t\r\n")


def compact(raw: str) -> str:
    """``json.Compact`` (no HTML escaping) of valid JSON: insignificant whitespace removed."""
    parts = _STRING.split(raw)  # even: between strings, odd: strings
    parts[::2] = [part.translate(_NO_SPACE) for part in parts[::2]]
    return "".join(parts)


def indent(raw: str, prefix: str, step: str = "    ") -> str:
    """``json.Indent(dst, raw, prefix, step)`` of valid JSON: a new line per element,
    ``": "`` after keys, empty ``{}``/``[]`` kept on one line. Strings are copied whole;
    only the text between them is walked."""
    out: list[str] = []
    depth = 0
    need_indent = False
    for index, part in enumerate(_STRING.split(raw)):
        if index % 2:  # a string: a value or a key
            if need_indent:
                need_indent = False
                depth += 1
                out.append("\n" + prefix + step * depth)
            out.append(part)
            continue
        for char in part.translate(_NO_SPACE):
            if need_indent and char not in "]}":
                need_indent = False
                depth += 1
                out.append("\n" + prefix + step * depth)
            if char in "[{":
                need_indent = True  # delayed so that an empty value stays "{}"
                out.append(char)
            elif char == ",":
                out.append(",\n" + prefix + step * depth)
            elif char == ":":
                out.append(": ")
            elif char in "]}":
                if need_indent:
                    need_indent = False
                else:
                    depth -= 1
                    out.append("\n" + prefix + step * depth)
                out.append(char)
            else:
                out.append(char)
    return "".join(out)
