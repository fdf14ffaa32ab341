"""olmtool.inputlimits: the cheap bounds are sound (never say "shallow" or "no anchor"
when libyaml would find otherwise), checked with a small limit on generated texts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmtool import inputlimits

SMALL = 3
PROPERTY = settings(
    derandomize=True,
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

LEAVES = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b c", "-", "[x]", "? y", ""]))
DATA = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["k", "l", "m n"]), children, max_size=3),
    ),
    max_leaves=25,
)
# Characters that build YAML structure, and some that do not; and lines made of them.
CHARACTERS = st.text(alphabet="-?: \n\t[]{},ab&*!#'\"|>\r", max_size=80)
LINES = st.lists(
    st.tuples(
        st.integers(0, 6),
        st.lists(st.sampled_from(["- ", "? ", ": ", "[", "{", "&a ", "*a ", "!t "]), max_size=4),
        st.sampled_from(["", "x", "x:", "x: y", "]", "}", ", z", "# c", "'q'"]),
    ),
    max_size=12,
).map(lambda lines: "\n".join(" " * n + "".join(marks) + tail for n, marks, tail in lines))
STRUCTURE = st.one_of(CHARACTERS, LINES)


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(inputlimits, "MAX_DEPTH", SMALL)
    return SMALL


def events(text: str) -> Iterator[yaml.Event]:
    """libyaml's events up to the end or the first error."""
    loader = yaml.CSafeLoader(text)
    try:
        while (event := loader.get_event()) is not None:
            yield event
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def deepest(text: str) -> int:
    depth = most = 0
    for event in events(text):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            most = max(most, depth)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return most


def dumped(data: Any, flow: bool | None, indent: int) -> str:
    return yaml.safe_dump(data, default_flow_style=flow, indent=indent, width=30)


@PROPERTY
@given(data=DATA, flow=st.sampled_from([False, True, None]), indent=st.integers(2, 5))
def test_shallow_bound_is_sound_on_real_yaml(
    small_limit: int, data: Any, flow: bool | None, indent: int
) -> None:
    text = dumped(data, flow, indent)
    found = inputlimits.yaml_too_deep(text)
    assert (found is not None) == (deepest(text) > small_limit)
    if inputlimits._shallow(text):
        assert deepest(text) <= small_limit


@PROPERTY
@given(text=STRUCTURE)
def test_shallow_bound_is_sound_on_any_text(small_limit: int, text: str) -> None:
    if inputlimits._shallow(text):
        assert deepest(text) <= small_limit


@PROPERTY
@given(text=STRUCTURE)
def test_has_anchor_misses_no_anchor_libyaml_finds(text: str) -> None:
    tokens = []
    try:
        for token in yaml.scan(text, Loader=yaml.CSafeLoader):
            tokens.append(token)
    except yaml.YAMLError:
        pass
    if any(isinstance(token, yaml.AnchorToken) for token in tokens):
        assert inputlimits.has_anchor(text)


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("a: &x [1]", True),
        ('{"a":&x [1]}', True),
        ("[&x 1, *x]", True),
        ("\ufeff&x [1]", True),
        ("u: http://example.com/?a=1&b=2", False),
        ("d: R&D", False),
        ("d: a & b", False),
    ],
)
def test_has_anchor(text: str, anchor: bool) -> None:
    assert inputlimits.has_anchor(text) is anchor


def json_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((json_depth(v) for v in value), default=0)
    return 0


@PROPERTY
@given(data=DATA)
def test_json_too_deep_is_exact(small_limit: int, data: Any) -> None:
    text = "  " + json.dumps({"s": '"[{', "v": data}) + " {}"
    end = len(text) - 3
    found = inputlimits.json_too_deep(text, 2, end)
    assert (found is not None) == (json_depth(json.loads(text[2:end])) > small_limit)
    assert inputlimits.json_too_deep(text, 2) == found  # the end found by the brackets
    if found is not None:
        assert text[found] in "[{"


def test_excessive_aliasing_is_yaml_v2s_rule() -> None:
    assert not inputlimits.excessive_aliasing(100, 100_000)  # at most 100 aliased: fine
    assert not inputlimits.excessive_aliasing(990, 1000)  # at most 1000 decoded: fine
    assert inputlimits.excessive_aliasing(1000, 1001)  # 99.9% from aliases
    assert not inputlimits.excessive_aliasing(396_000, 400_000)  # 99%: allowed
    assert inputlimits.excessive_aliasing(500_000, 4_000_000)  # 12.5% of a huge document
    assert not inputlimits.excessive_aliasing(399_000, 4_000_000)
