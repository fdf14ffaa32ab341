"""The catalog server stores each blob as compact JSON; blobs read from JSON text without
floats go through orjson (:func:`declcfg.to_compact_json_without_floats`), which must
write exactly what :func:`declcfg.to_json` writes, or fall back to it."""

from __future__ import annotations

from typing import Any

import pytest

from olmtool.catalog import declcfg as dc

CHARACTERS = "".join(chr(c) for c in range(0x300)) + "\u2028\u2029\ufeff\U0001f600\uffff"

BLOBS: list[dict[str, Any]] = [
    {"schema": "olm.package", "name": "p", "description": CHARACTERS},
    {
        "schema": "olm.bundle",
        "name": "p.v1",
        "properties": [
            {"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}},
            {"type": "x", "value": {"n": [0, -1, 2**63 - 1, -(2**63)], "b": [True, False, None]}},
            {"type": "y", "value": {"": {}, "nested": [[[]]], CHARACTERS: CHARACTERS}},
        ],
    },
    {"schema": "olm.bundle", "properties": [{"type": "big", "value": 2**64}]},  # orjson refuses
    {"schema": "s", "properties": [{"type": "raw", "value": dc.RawJSON('{"a": 1}')}]},
    {"schema": "s", "properties": "not a list"},
]


@pytest.mark.parametrize("blob", BLOBS, ids=range(len(BLOBS)))
def test_the_fast_writer_writes_what_to_json_writes(blob: dict[str, Any]) -> None:
    expected = dc.to_json(blob, indent=None)
    assert dc.to_compact_json_without_floats(blob).decode() == expected
