"""yaml.v2's scalars as sigs.k8s.io/yaml hands them to JSON: the resolve table, Go's
ParseInt/ParseFloat ranges and spellings, explicit tags, JSON keys and Go's float text.

The half of :mod:`olmtool.yamlread` that is pure string logic (no parser): yamlread's builder
resolves every plain scalar through :func:`plain_scalar`.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Any

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


def plain_scalar(value: str) -> Any:
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
    return isinstance(plain_scalar(text), str) if text else False


def tagged_scalar(tag: str, value: str) -> Any:
    """A scalar with an explicit tag (``!!int "12"``, ``!!binary ...``, ``!foo bar``)."""
    if tag in (_INT, _FLOAT, _BOOL, _NULL):
        resolved = plain_scalar(value) if value else None
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
