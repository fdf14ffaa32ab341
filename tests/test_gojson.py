"""Go's encoding/json (Go 1.19, opm v1.26's): floats, escapes, compaction, indentation.

The float table is what opm v1.26 printed for these YAML numbers in a bundle's
properties.yaml (a RawMessage from YAML) and in a manifest (an unstructured object).
"""

from __future__ import annotations

import pytest

from olmtool import gojson
from olmtool.errors import InputError

# YAML number -> (in a property value, in an unstructured object), as opm v1.26 wrote them
OPM_NUMBERS = {
    "1.0": ("1", "1"),
    "0.5": ("0.5", "0.5"),
    "1e21": ("1e+21", "1e+21"),
    "1.0e+20": ("100000000000000000000", "100000000000000000000"),
    "1.0e-6": ("0.000001", "0.000001"),
    "1.0e-7": ("1e-7", "1e-7"),
    "1.5e-7": ("1.5e-7", "1.5e-7"),
    "123456789.125": ("123456789.125", "123456789.125"),
    "1.2345678901234567e+25": ("1.2345678901234566e+25", "1.2345678901234566e+25"),
    "-0.0": ("-0", "0"),
    "1.0e-10": ("1e-10", "1e-10"),
    "1.0e+100": ("1e+100", "1e+100"),
    "3.0e+16": ("30000000000000000", "30000000000000000"),
    "18446744073709551616": ("18446744073709552000", "18446744073709552000"),
    "18446744073709551615": ("18446744073709551615", "18446744073709552000"),
    "9223372036854775808": ("9223372036854775808", "9223372036854776000"),
    "-9223372036854775809": ("-9223372036854776000", "-9223372036854776000"),
    "0.000123": ("0.000123", "0.000123"),
    "-2.5e-300": ("-2.5e-300", "-2.5e-300"),
    "1.7976931348623157e+308": ("1.7976931348623157e+308", "1.7976931348623157e+308"),
    "5.0e-324": ("5e-324", "5e-324"),
}


@pytest.mark.parametrize("text", sorted(OPM_NUMBERS))
def test_numbers_as_opm_wrote_them(text: str) -> None:
    number = int(text) if text.lstrip("-").isdigit() else float(text)
    in_property, in_object = OPM_NUMBERS[text]
    assert gojson.marshal(number, unstructured=False) == in_property
    assert gojson.marshal(number) == in_object


def test_marshal_sorts_keys_and_escapes_like_go() -> None:
    value = {
        "b": "<a href='x'>&</a>",
        "a": ["\b\f\x01\x7f", "\u2028\u2029 é \U0001f680"],
        "c": None,
    }
    assert gojson.marshal(value) == (
        '{"a":["\\u0008\\u000c\\u0001\x7f","\\u2028\\u2029 é \U0001f680"],'
        '"b":"\\u003ca href=\'x\'\\u003e\\u0026\\u003c/a\\u003e","c":null}'
    )
    assert gojson.marshal({"x": "<&>"}, escape_html=False) == '{"x":"<&>"}'
    assert gojson.marshal({"k": "a\\\\b"}) == '{"k":"a\\\\\\\\b"}'  # an escaped backslash and b


def test_marshal_refuses_what_go_refuses() -> None:
    with pytest.raises(InputError, match="unsupported value"):
        gojson.marshal({"x": float("nan")})


def test_compact_and_indent_like_go() -> None:
    raw = '{ "z" : 1, "a": [ ], "s": "a b\\" }", "o": {}, "l": [1, {"k": "v"}] }'
    compact = gojson.compact(raw)
    assert compact == '{"z":1,"a":[],"s":"a b\\" }","o":{},"l":[1,{"k":"v"}]}'
    assert gojson.indent(compact, "  ", "  ") == (
        '{\n    "z": 1,\n    "a": [],\n    "s": "a b\\" }",\n    "o": {},\n'
        '    "l": [\n      1,\n      {\n        "k": "v"\n      }\n    ]\n  }'
    )
