"""Versions and blang/semver ranges: the fast precedence keys agree with semver."""

from __future__ import annotations

import semver
from hypothesis import given
from hypothesis import strategies as st

from olmtool.versions import parse_range, precedence_key

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
