"""re2_problem: what Go's regexp refuses, found token by token (never inside a character
class or after a backslash)."""

from __future__ import annotations

import pytest

from olmtool.crd.re2 import python_can_judge, re2_problem

ACCEPTED = [
    r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$",  # Gateway API header names
    r"^[(?=)(?!)(?<=)(?<!)]$",
    r"^\(?=\)$",
    r"^[*+?]+$",
    r"^[]a]+$",
    r"^[^]a]+$",
    r"^[[:alpha:]]+$",
    r"a*?",
    r"a+?",
    r"a??",
    r"a{2,3}?",
    r"\x60\x{1F600}",
    r"\012",
    r"\Qa*+(?=\E",
    r"\p{Greek}+\PL",
    r"\Aa\z",
    r"(?i)(?:a|b)(?P<n>c)",
]

REFUSED = [
    ("a(?=b)", "lookahead"),
    ("a(?!b)", "negative lookahead"),
    ("(?<=a)b", "lookbehind"),
    ("(?<!a)b", "negative lookbehind"),
    (r"(a)\1", r"backreference \1"),
    (r"(a)\8", r"backreference \8"),
    ("(?P<x>a)(?P=x)", "named backreference"),
    ("(?(1)a|b)", "conditional"),
    ("(?>a)", "atomic"),
    ("a*+", "possessive"),
    ("a++", "possessive"),
    ("a?+", "possessive"),
    ("a{2}+", "possessive"),
    ("[a]*+", "possessive"),
    (r"a\Z", r"escape \Z"),
    (r"\u0041", r"escape \u"),
    (r"[\b]", r"escape \b"),
    ("a\\", "lone backslash"),
]


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_accepted(pattern: str) -> None:
    assert re2_problem(pattern) is None


@pytest.mark.parametrize(("pattern", "why"), REFUSED)
def test_refused(pattern: str, why: str) -> None:
    problem = re2_problem(pattern)
    assert problem is not None and why in problem


def test_python_cannot_judge_go_only_syntax() -> None:
    assert python_can_judge(r"^[a-z]+$")
    assert not python_can_judge(r"\p{L}")
    assert not python_can_judge(r"a\z")
    assert not python_can_judge(r"(?<name>a)")
    assert python_can_judge(r"(?<=a)")
