"""Which regular expressions Go's ``regexp`` (the apiserver's, RE2 syntax) refuses.

CRD ``pattern``s are compiled by the apiserver with Go's ``regexp``. Python's ``re``
accepts more (lookaround, backreferences, possessive quantifiers, atomic groups) and
less (``\\p{L}``, ``\\z``, ``\\Q...\\E``, ``\\x{...}``). This module walks a pattern token
by token, as Go's parser does, so that a ``(?=`` or a ``*+`` inside a character class
(``[*+?]``, ``[(?=]``) or after a backslash is not taken for one.

>>> re2_problem("^[A-Za-z0-9!#$%&'*+\\\\-.^_`|~]+$") is None
True
>>> re2_problem("a(?=b)")
'uses lookahead (?=...)'
"""

from __future__ import annotations

import re

# Escapes Go accepts outside a character class (besides octal, \x and punctuation).
_LETTER_ESCAPES = frozenset("AbBzQpPdDsSwWaftnrv")
# ... and inside one (no assertions there).
_CLASS_LETTER_ESCAPES = frozenset("pPdDsSwWaftnrv")
_GROUPS = {
    "(?=": "uses lookahead (?=...)",
    "(?!": "uses negative lookahead (?!...)",
    "(?<=": "uses lookbehind (?<=...)",
    "(?<!": "uses negative lookbehind (?<!...)",
    "(?P=": "uses a named backreference (?P=...)",
    "(?(": "uses a conditional group (?(...)...)",
    "(?>": "uses an atomic group (?>...)",
}
_REPEAT = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
# Go syntax that Python's re does not know: when present, re.compile's verdict is moot.
_GO_ONLY = re.compile(r"\\[pPzQ]|\\x\{|\(\?<[A-Za-z_]|\(\?[imsU]*U")


def re2_problem(pattern: str) -> str | None:
    """What Go's regexp would refuse in ``pattern`` that Python's re may accept, or None."""
    index, in_class, repeated = 0, False, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            problem = _escape_problem(pattern, index, in_class)
            if problem:
                return problem
            if pattern.startswith("\\Q", index) and not in_class:
                end = pattern.find("\\E", index + 2)  # a literal run, as in Go
                index = len(pattern) if end < 0 else end + 2
            else:
                index += 2
            repeated = False
        elif in_class:
            if pattern.startswith("[:", index):  # [:alpha:] inside a class
                end = pattern.find(":]", index + 2)
                index = index + 1 if end < 0 else end + 2
            else:
                in_class = char != "]"
                index += 1
        elif char == "[":
            index += 1
            if pattern.startswith("^", index):
                index += 1
            if pattern.startswith("]", index):  # a leading ] is a literal
                index += 1
            in_class, repeated = True, False
        elif char == "(":
            for opening, problem in _GROUPS.items():
                if pattern.startswith(opening, index):
                    return problem
            index, repeated = index + 1, False
        elif char in "*+?" or (char == "{" and _REPEAT.match(pattern, index)):
            if repeated and char != "?":
                return "uses a possessive quantifier or a repeated repetition (like *+)"
            index = _REPEAT.match(pattern, index).end() if char == "{" else index + 1  # type: ignore[union-attr]
            # A ? right after a repetition makes it lazy (fine); a + makes it possessive.
            repeated = not (char == "?" and repeated)
        else:
            index, repeated = index + 1, False
    return None


def python_can_judge(pattern: str) -> bool:
    """Whether ``re.compile``'s errors say something about Go: not when the pattern uses
    syntax only Go knows."""
    return not _GO_ONLY.search(pattern)


def _escape_problem(pattern: str, index: int, in_class: bool) -> str | None:
    escaped = pattern[index + 1 : index + 2]
    if not escaped:
        return "ends with a lone backslash"
    if escaped in "123456789":
        following = pattern[index + 2 : index + 3]
        if escaped in "89" or not following or following not in "01234567":
            return f"uses a backreference \\{escaped}"
        return None  # an octal escape
    if escaped == "0" or not escaped.isascii() or not escaped.isalnum():
        return None if escaped.isascii() else f"escapes a non-ASCII character \\{escaped}"
    allowed = _CLASS_LETTER_ESCAPES if in_class else _LETTER_ESCAPES
    if escaped == "x" or escaped in allowed:
        return None
    return f"uses the escape \\{escaped}"
