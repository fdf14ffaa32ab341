"""Versions and blang/semver ranges: the fast precedence keys agree with semver, and
ranges parse and match exactly as blang/semver v4.0.0 (OLM's and opm's) does: the tables
are blang's own tests (``v4/range_test.go``) plus the ranges real catalogs carry."""

from __future__ import annotations

import pytest
import semver
from hypothesis import given
from hypothesis import strategies as st

from olmtool.versions import blang_parse, parse_range, precedence_key

identifier = st.one_of(
    st.integers(min_value=0, max_value=20).map(str),
    st.sampled_from(["alpha", "beta", "rc", "x-1", "0a"]),
)
versions = st.builds(
    semver.Version,
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.one_of(st.none(), st.lists(identifier, min_size=1, max_size=3).map(".".join)),
    st.one_of(st.none(), st.sampled_from(["build.1", "sha.abc"])),
)


@given(versions, versions)
def test_precedence_key_orders_like_semver(a: semver.Version, b: semver.Version) -> None:
    assert (a < b) == (precedence_key(a) < precedence_key(b))
    assert (a == b) == (precedence_key(a) == precedence_key(b))


def test_ranges_with_prereleases_and_alternatives() -> None:
    skip_range = parse_range(">=0.1.0 <0.3.0 || 1.x")
    assert skip_range.contains("0.2.9")
    assert skip_range.contains("0.3.0-rc.1")  # below 0.3.0 by precedence, as in blang
    assert not skip_range.contains("0.3.0")
    assert skip_range.contains("1.4.0")
    assert not skip_range.contains("2.0.0")


def _expanded(text: str) -> list[list[str]]:
    return [[f"{op}{version}" for op, version in alt] for alt in parse_range(text).alternatives]


# blang TestExpandWildcardVersion (operators normalised: "" and "==" are "=")
@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        (">=1.2.x", [[">=1.2.0"]]),
        ("<=1.2.x", [["<1.3.0"]]),
        (">1.2.x", [[">=1.3.0"]]),
        ("<1.2.x", [["<1.2.0"]]),
        ("!=1.2.x", [["<1.2.0", ">=1.3.0"]]),
        (">=1.x", [[">=1.0.0"]]),
        ("<=1.x", [["<2.0.0"]]),
        (">1.x", [[">=2.0.0"]]),
        ("<1.x", [["<1.0.0"]]),
        ("!=1.x", [["<1.0.0", ">=2.0.0"]]),
        ("1.2.x", [[">=1.2.0", "<1.3.0"]]),
        ("1.x", [[">=1.0.0", "<2.0.0"]]),
        # real catalogs (infinispan's skipRange) and blang's quirks
        (">=2.1.x <2.2.0", [[">=2.1.0", "<2.2.0"]]),
        ("<2.x", [["<2.0.0"]]),
        ("1.x.x", [[">=1.0.0", "<1.1.0"]]),  # ".x.x" is a patch wildcard of 1.0
        (">>1.2.x", [["=1.2.0"]]),  # an unknown operator leaves the bare version
        ("  >=   1.2.3   <=  1.2.3   ", [[">=1.2.3", "<=1.2.3"]]),  # blang TestSplitAndTrim
        ("1.2.3 || >=1.2.3 <1.2.3", [["=1.2.3"], [">=1.2.3", "<1.2.3"]]),
        ("!1.2.3", [["!=1.2.3"]]),
        ("! 1.2.3", [["=1.2.3"]]),  # a one-character word is dropped
    ],
)
def test_wildcards_expand_as_blang(text: str, expanded: list[list[str]]) -> None:
    assert _expanded(text) == expanded


# blang TestParseRange: range -> {version: matches}
BLANG_MATCHES = {
    ">1.2.3": {"1.2.2": False, "1.2.3": False, "1.2.4": True},
    ">=1.2.3": {"1.2.3": True, "1.2.4": True, "1.2.2": False},
    "<1.2.3": {"1.2.2": True, "1.2.3": False, "1.2.4": False},
    "<=1.2.3": {"1.2.2": True, "1.2.3": True, "1.2.4": False},
    "1.2.3": {"1.2.2": False, "1.2.3": True, "1.2.4": False},
    "=1.2.3": {"1.2.2": False, "1.2.3": True, "1.2.4": False},
    "==1.2.3": {"1.2.2": False, "1.2.3": True, "1.2.4": False},
    "!=1.2.3": {"1.2.2": True, "1.2.3": False, "1.2.4": True},
    "!1.2.3": {"1.2.2": True, "1.2.3": False, "1.2.4": True},
    ">1.2.2 <1.2.4": {"1.2.2": False, "1.2.3": True, "1.2.4": False},
    "<1.2.2 <1.2.4": {"1.2.1": True, "1.2.2": False, "1.2.3": False, "1.2.4": False},
    ">1.2.2 <1.2.5 !=1.2.4": {"1.2.2": False, "1.2.3": True, "1.2.4": False, "1.2.5": False},
    ">1.2.2 <1.2.5 !1.2.4": {"1.2.2": False, "1.2.3": True, "1.2.4": False, "1.2.5": False},
    ">1.2.2 || <1.2.4": {"1.2.2": True, "1.2.3": True, "1.2.4": True},
    "<1.2.2 || >1.2.4": {"1.2.2": False, "1.2.3": False, "1.2.4": False},
    ">1.x": {"0.1.9": False, "1.2.6": False, "1.9.0": False, "2.0.0": True},
    ">1.2.x": {"1.1.9": False, "1.2.6": False, "1.3.0": True},
    ">1.2.2 <1.2.4 || >=2.0.0": {
        "1.2.2": False,
        "1.2.3": True,
        "1.2.4": False,
        "2.0.0": True,
        "2.0.1": True,
    },
    "1.x || >=2.0.x <2.2.x": {
        "0.9.2": False,
        "1.2.2": True,
        "2.0.0": True,
        "2.1.8": True,
        "2.2.0": False,
    },
    ">1.2.2 <1.2.4 || >=2.0.0 <3.0.0": {
        "1.2.2": False,
        "1.2.3": True,
        "1.2.4": False,
        "2.0.0": True,
        "2.0.1": True,
        "2.9.9": True,
        "3.0.0": False,
    },
    ">=2.1.x": {"2.0.9": False, "2.1.0": True, "2.1.0-rc.1": False, "7.0.0": True},
}


@pytest.mark.parametrize("text", sorted(BLANG_MATCHES))
def test_ranges_match_as_blang(text: str) -> None:
    parsed = parse_range(text)
    assert {v: parsed.contains(v) for v in BLANG_MATCHES[text]} == BLANG_MATCHES[text]


# blang's error cases (TestParseRange, TestSplitORParts, TestBuildVersionRange) and the
# forms it refuses that other range syntaxes accept
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (">>1.2.3", "Could not parse comparator '>>'"),
        ("1.0", "No Major.Minor.Patch elements found"),
        ("string", "Could not get version from string: 'string'"),
        ("", "no comparison"),
        ("fo.ob.ar.x", "Could not get version from string"),
        (">1.2.3 ||", "Last element in range is '||'"),
        ("|| >1.2.3", "First element in range is '||'"),
        ("=invalid", "Could not get version from string"),
        ("1.X", "No Major.Minor.Patch"),  # only a lowercase x is a wildcard
        ("*", "no comparison"),
        ("v1.0.0", "Could not parse comparator 'v'"),
        ("~1.2.3", "Could not parse comparator '~'"),
        ("^1.2.3", "Could not parse comparator '^'"),
        ("01.2.3", "Major number must not contain leading zeroes"),
        ("1.2.3-", "Prerelease is empty"),
        ("1.2.3 || || 2.0.0", "empty alternative"),
        ("1.2.3-x", "Could not get version from string: '<'"),  # "x" in a prerelease
        ("0.1.0 - latest", "Could not get version from string: 'latest'"),
    ],
)
def test_ranges_blang_refuses(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match="is not a version range") as caught:
        parse_range(text)
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("1.2.3", True),
        ("1.2.3-rc.1+build.5", True),
        ("1.2.3-0a.1-b", True),
        ("18446744073709551615.0.0", True),
        ("18446744073709551616.0.0", False),
        ("1.2.3-01", False),
        ("1.2.3+", False),
        ("1.2.3+a_b", False),
        ("1.2", False),
        ("v1.2.3", False),
    ],
)
def test_versions_parse_as_blang(text: str, ok: bool) -> None:
    if ok:
        assert str(blang_parse(text)) == text
    else:
        with pytest.raises(ValueError):
            blang_parse(text)
