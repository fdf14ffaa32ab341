"""The YAML olmtool writes reads back as written through Kubernetes' rules (yaml.v2,
:mod:`olmtool.yamlread`), whatever the strings: ``on``/``off``/``yes``/``no``/``y``/``n``,
``~``, octal, dates and numbers as text included."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olmtool import yamlread, yamlwrite

# yaml.v2's look-alikes of other types, mixed into the random text
LOOKALIKES = [
    "on", "off", "On", "OFF", "yes", "no", "Yes", "NO", "y", "n", "Y", "N", "true", "False",
    "~", "null", "", "0755", "0o17", "0x1F", "0b101", "1_000", "1e3", ".5", "-.inf", ".NaN",
    "2020-01-01", "2023-05-02T10:00:00Z", "1:20", "<<", "+1", "-0", "007", "12.",
]  # fmt: skip

texts = st.one_of(st.sampled_from(LOOKALIKES), st.text(max_size=20))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=True).filter(lambda f: not math.isnan(f)),
    texts,
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=600, deadline=None)
@given(documents)
def test_what_dump_writes_kubernetes_reads_back_as_written(data: Any) -> None:
    text = yamlwrite.dump(data)
    assert yamlread.load(text) == data, text


@settings(max_examples=500, deadline=None)
@given(documents)
def test_what_dump_as_go_writes_kubernetes_reads_back_as_written(data: Any) -> None:
    """The catalogs' layout (opm's) under the same quoting rule."""
    text = yamlwrite.dump_as_go(data)
    assert yamlread.load(text) == data, text


@pytest.mark.parametrize("word", ["on", "off", "yes", "no", "y", "n", "~", "0755", "1e3"])
def test_a_lookalike_is_quoted(word: str) -> None:
    assert yamlwrite.dump({"enum": [word]}) == f"enum:\n  - '{word}'\n"
    assert yamlread.load(yamlwrite.dump({word: word})) == {word: word}
