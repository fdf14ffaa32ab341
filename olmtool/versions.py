"""Semantic versions and the version ranges OLM uses (``olm.skipRange``, package deps).

OLM parses ranges with blang/semver v4.0.0 (:func:`parse_range` follows its ``range.go``
function for function): comparisons (``>=1.0.0``, ``<2.0.0``, ``!=1.2.3``, ``=1.0.0``)
joined by spaces (and) and ``||`` (or), with ``x`` wildcards such as ``1.x`` or
``>=2.1.x``.

>>> parse_range(">=0.1.0 <0.3.0").contains("0.2.5")
True
>>> parse_range(">=0.1.0 <0.3.0 || 1.x").contains("1.4.0")
True
"""

from __future__ import annotations

import bisect
import functools
import operator
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import semver

_OPERATORS: dict[str, Callable[[semver.Version, semver.Version], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "!=": operator.ne,
    "=": operator.eq,
    "==": operator.eq,
    "": operator.eq,
}


def parse_version(text: str) -> semver.Version:
    """A semantic version, or ValueError naming the text."""
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a semantic version (like 1.2.3)") from None


@dataclass(frozen=True)
class Range:
    """A parsed range: any of ``alternatives`` matches, each a list of comparisons."""

    text: str
    alternatives: tuple[tuple[tuple[str, semver.Version], ...], ...]

    def contains(self, version: str | semver.Version) -> bool:
        v = precedence_key(parse_version(version) if isinstance(version, str) else version)
        return any(
            all(_OPERATORS[op](v, bound) for op, bound in alt) for alt in self._key_alternatives
        )

    @property
    def _key_alternatives(self) -> tuple[tuple[tuple[str, tuple[object, ...]], ...], ...]:
        # comparing plain tuples is ~20x faster than semver.Version's rich comparisons,
        # which matters when a skipRange is matched against every bundle of a big catalog
        cached = self.__dict__.get("_keys")
        if cached is None:
            cached = tuple(
                tuple((op, precedence_key(bound)) for op, bound in alt) for alt in self.alternatives
            )
            object.__setattr__(self, "_keys", cached)
        return cached


def precedence_key(version: semver.Version) -> tuple[object, ...]:
    """A tuple ordered like semver precedence (build metadata ignored)."""
    if not version.prerelease:
        return (version.major, version.minor, version.patch, 1, ())
    parts = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in version.prerelease.split(".")
    )
    return (version.major, version.minor, version.patch, 0, parts)


class VersionIndex:
    """Versions sorted by precedence, so that the ones a range contains are found by
    bisection instead of by testing every version: each alternative of a range narrows to
    the slice its ``>``/``>=``/``<``/``<=``/``=`` bounds allow, and only that slice is
    tested (``!=`` narrows nothing). The answers are exactly :meth:`Range.contains`'s.

    >>> index = VersionIndex([parse_version("1.0.0"), None, parse_version("0.9.0")])
    >>> index.matching(parse_range(">=0.9.0 <1.0.0"))
    [2]
    """

    def __init__(self, versions: Iterable[semver.Version | None]) -> None:
        keyed = sorted((precedence_key(v), i) for i, v in enumerate(versions) if v is not None)
        self._keys = [key for key, _ in keyed]
        self._positions = [position for _, position in keyed]

    def matching(self, version_range: Range) -> list[int]:
        """Positions (in the order the versions were given) that ``version_range``
        contains, ascending; None versions never match."""
        found: set[int] = set()
        for alternative, lo, hi in self._slices(version_range):
            for i in range(lo, hi):
                key = self._keys[i]
                if all(_OPERATORS[op](key, bound) for op, bound in alternative):
                    found.add(self._positions[i])
        return sorted(found)

    def any_match(self, version_range: Range) -> bool:
        """Whether ``version_range`` contains any of the versions."""
        for alternative, lo, hi in self._slices(version_range):
            for i in range(lo, hi):
                key = self._keys[i]
                if all(_OPERATORS[op](key, bound) for op, bound in alternative):
                    return True
        return False

    def _slices(
        self, version_range: Range
    ) -> Iterator[tuple[tuple[tuple[str, tuple[object, ...]], ...], int, int]]:
        keys = self._keys
        for alternative in version_range._key_alternatives:
            lo, hi = 0, len(keys)
            for op, bound in alternative:
                if op in (">=", "="):
                    lo = max(lo, bisect.bisect_left(keys, bound))
                elif op == ">":
                    lo = max(lo, bisect.bisect_right(keys, bound))
                if op == "<":
                    hi = min(hi, bisect.bisect_left(keys, bound))
                elif op in ("<=", "="):
                    hi = min(hi, bisect.bisect_right(keys, bound))
            if lo < hi:
                yield alternative, lo, hi


def parse_range(text: str) -> Range:
    """Parse a range exactly as blang/semver v4.0.0's ``ParseRange`` (which OLM and opm
    use): ValueError naming the offending part where blang returns an error. Each
    distinct text is parsed once (ranges are immutable; catalogs repeat them).

    blang's quirks are kept on purpose, since they decide which bundles a skipRange
    matches: only a lowercase ``x`` is a wildcard and it may follow any operator
    (``>=2.1.x`` is ``>=2.1.0``, ``<2.x`` is ``<2.0.0``, ``1.x.x`` is a patch wildcard),
    an operator may be written apart from its version (``>= 1.0.0``), ``!`` means ``!=``,
    and a one-character word between spaces is dropped.
    """
    try:
        parts = _split_and_trim(text)
        if not parts:  # blang says "Last element in range is '||'"
            raise ValueError("no comparison in it (one-character words are ignored)")
        alternatives = []
        for alternative in _expand_wildcards(_split_or_parts(parts)):
            if not alternative:
                # blang builds a nil function for "a || || b" that panics when called
                raise ValueError("empty alternative between '||'")
            comparisons = []
            for part in alternative:
                op, version = _split_comparator_version(part)
                comparisons.append(_build_comparison(op, version, part))
            alternatives.append(tuple(comparisons))
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a version range: {exc}") from None
    return Range(text, tuple(alternatives))


parse_range = functools.lru_cache(maxsize=32768)(parse_range)


# --- blang/semver v4.0.0 range.go, function for function ------------------------------

_COMPARATORS = {"": "=", "=": "=", "==": "=", ">": ">", ">=": ">=", "<": "<", "<=": "<=",
                "!": "!=", "!=": "!="}  # fmt: skip


def _split_and_trim(text: str) -> list[str]:
    """``splitAndTrim``: split on spaces, except after ``>``, ``<`` or ``=``; a word must
    be at least two bytes long; spaces inside a word are removed."""
    data = text.encode("utf-8")  # Go indexes bytes
    result: list[bytes] = []
    last, last_char = 0, 0
    for i, byte in enumerate(data):
        if byte == 0x20 and last_char not in b"><=":
            if last < i - 1:
                result.append(data[last:i])
            last = i + 1
        elif byte != 0x20:
            last_char = byte
    if last < len(data) - 1:
        result.append(data[last:])
    return [word.replace(b" ", b"").decode("utf-8", "replace") for word in result]


def _split_or_parts(parts: list[str]) -> list[list[str]]:
    """``splitORParts``."""
    alternatives: list[list[str]] = []
    last = 0
    for i, part in enumerate(parts):
        if part == "||":
            if i == 0:
                raise ValueError("First element in range is '||'")
            alternatives.append(parts[last:i])
            last = i + 1
    if last == len(parts):
        raise ValueError("Last element in range is '||'")
    alternatives.append(parts[last:])
    return alternatives


def _split_comparator_version(part: str) -> tuple[str, str]:
    """``splitComparatorVersion``: the operator is everything before the first digit."""
    for i, char in enumerate(part):
        if char.isdecimal():  # unicode.IsDigit
            return part[:i].strip(), part[i:]
    raise ValueError(f"Could not get version from string: {part!r}")


def _wildcard_type(version: str) -> int:
    """``getWildcardType``: 1 major, 2 minor, 3 patch (by the number of parts), 0 none."""
    parts = version.split(".")
    return len(parts) if parts[-1] == "x" and len(parts) <= 3 else 0


def _flatten_wildcard(version: str) -> str:
    """``createVersionFromWildcard``: ``1.x.x`` and ``1.x`` to ``1.0.0``, ``1.2.x`` to ``1.2.0``."""
    flat = version.replace(".x.x", ".x", 1).replace(".x", ".0", 1)
    return flat + ".0" if len(flat.split(".")) == 2 else flat


def _increment(version: str, index: int) -> str:
    """``incrementMajorVersion``/``incrementMinorVersion`` (others parts unchanged); ""
    where Go's Atoi fails, as blang ignores that error."""
    parts = version.split(".")
    if not re.fullmatch(r"[+-]?[0-9]+", parts[index]):
        return ""
    parts[index] = str(int(parts[index]) + 1)
    return ".".join(parts)


def _expand_wildcards(alternatives: list[list[str]]) -> list[list[str]]:
    """``expandWildcardVersion``: any part containing an ``x`` is rewritten (an unknown
    operator leaves the bare flattened version, an equality)."""
    expanded = []
    for alternative in alternatives:
        parts: list[str] = []
        for part in alternative:
            if "x" in part:
                op, version = _split_comparator_version(part)
                kind, flat = _wildcard_type(version), _flatten_wildcard(version)
                result, increment = "", False
                if op == ">":
                    result, increment = ">=", True
                elif op == ">=":
                    result = ">="
                elif op == "<":
                    result = "<"
                elif op == "<=":
                    result, increment = "<", True
                elif op in ("", "=", "=="):
                    parts.append(">=" + flat)
                    result, increment = "<", True
                elif op in ("!=", "!"):
                    parts.append("<" + flat)
                    result, increment = ">=", True
                bound = flat
                if increment:
                    bound = {3: _increment(flat, 1), 2: _increment(flat, 0)}.get(kind, "")
                part = result + bound
            parts.append(part)
        expanded.append(parts)
    return expanded


def _build_comparison(op: str, version: str, part: str) -> tuple[str, semver.Version]:
    """``buildVersionRange``: a known comparator and a strictly parsed version."""
    if op not in _COMPARATORS:
        raise ValueError(f"Could not parse comparator {op!r} in {part!r}")
    try:
        return _COMPARATORS[op], blang_parse(version)
    except ValueError as exc:
        raise ValueError(f"Could not parse version {version!r} in {part!r}: {exc}") from None


_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_UINT64_MAX = (1 << 64) - 1


def blang_parse(text: str) -> semver.Version:
    """blang/semver v4.0.0 ``Parse``: exactly ``MAJOR.MINOR.PATCH[-PRE][+BUILD]``, no
    leading zeros, no ``v`` prefix; numbers up to uint64."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major number")
    minor = _number(parts[1], "minor number")
    patch_text, build, prerelease = parts[2], None, None
    if "+" in patch_text:
        patch_text, _, build_text = patch_text.partition("+")
        build = build_text.split(".")
    if "-" in patch_text:
        patch_text, _, pre_text = patch_text.partition("-")
        prerelease = pre_text.split(".")
    patch = _number(patch_text, "patch number")
    for identifier in prerelease or ():
        if not identifier:
            raise ValueError("Prerelease is empty")
        if set(identifier) <= _NUMBERS:
            _number(identifier, "numeric PreRelease version")
        elif not set(identifier) <= _ALPHANUM:
            raise ValueError(f"Invalid character(s) found in prerelease {identifier!r}")
    for identifier in build or ():
        if not identifier:
            raise ValueError("Build meta data is empty")
        if not set(identifier) <= _ALPHANUM:
            raise ValueError(f"Invalid character(s) found in build meta data {identifier!r}")
    return semver.Version(
        major,
        minor,
        patch,
        ".".join(prerelease) if prerelease else None,
        ".".join(build) if build else None,
    )


def _number(text: str, what: str) -> int:
    if not set(text) <= _NUMBERS:
        raise ValueError(f"Invalid character(s) found in {what} {text!r}")
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f"{what[0].upper()}{what[1:]} must not contain leading zeroes {text!r}")
    if not text or int(text) > _UINT64_MAX:
        raise ValueError(f"{what} {text!r} is not a uint64")
    return int(text)
