"""Semantic versions and the version ranges OLM uses (``olm.skipRange``, package deps).

OLM parses ranges with blang/semver: comparisons (``>=1.0.0``, ``<2.0.0``, ``!=1.2.3``,
``=1.0.0``) joined by spaces (and) and ``||`` (or), with ``x`` wildcards such as ``1.x``.

>>> parse_range(">=0.1.0 <0.3.0").contains("0.2.5")
True
>>> parse_range(">=0.1.0 <0.3.0 || 1.x").contains("1.4.0")
True
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

import semver

_COMPARATOR = re.compile(r"^(>=|<=|!=|==|=|>|<)?\s*v?([0-9xX*][0-9A-Za-z.+\-xX*]*)$")
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


def parse_range(text: str) -> Range:
    """Parse a blang/semver range; ValueError with the offending part if it is not one."""
    alternatives = []
    for alternative in text.split("||"):
        parts = _tokens(alternative)
        if not parts:
            raise ValueError(f"{text!r} is not a version range: empty alternative")
        comparisons: list[tuple[str, semver.Version]] = []
        for part in parts:
            comparisons.extend(_comparisons(part, text))
        alternatives.append(tuple(comparisons))
    return Range(text, tuple(alternatives))


def _tokens(alternative: str) -> list[str]:
    """Split on spaces, re-attaching operators written apart from their version (``>= 1.0``)."""
    tokens: list[str] = []
    for word in alternative.split():
        if tokens and tokens[-1] in _OPERATORS:
            tokens[-1] += word
        else:
            tokens.append(word)
    return tokens


def _comparisons(part: str, text: str) -> list[tuple[str, semver.Version]]:
    match = _COMPARATOR.match(part)
    if not match:
        raise ValueError(f"{text!r} is not a version range: cannot parse {part!r}")
    op, version = match.group(1) or "", match.group(2)
    if any(c in version for c in "xX*"):
        return _wildcard(op, version, text)
    try:
        return [(op, semver.Version.parse(version))]
    except ValueError:
        raise ValueError(f"{text!r} is not a version range: {version!r} is not a version") from None


def _wildcard(op: str, version: str, text: str) -> list[tuple[str, semver.Version]]:
    """``1.x`` means ``>=1.0.0 <2.0.0``; blang allows wildcards only with = or >= ... forms."""
    fields = version.split(".")
    numbers: list[int] = []
    for item in fields:
        if item in ("x", "X", "*"):
            break
        if not item.isdigit():
            raise ValueError(f"{text!r} is not a version range: bad wildcard {version!r}")
        numbers.append(int(item))
    if op not in ("", "=", "=="):
        raise ValueError(f"{text!r} is not a version range: {op}{version} mixes a wildcard")
    if not numbers:
        return [(">=", semver.Version(0, 0, 0))]
    low = semver.Version(*([*numbers, 0, 0, 0])[:3])
    high = low.bump_major() if len(numbers) == 1 else low.bump_minor()
    return [(">=", low), ("<", high)]
