"""olmtool.yamlread: YAML as sigs.k8s.io/yaml (Go yaml.v2 -> JSON) reads it.

The expected values were checked against opm v1.26's render of the same YAML (a blob of
an unknown schema is passed through as its JSON): see test_matches_opm at the end.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from olmtool import yamlread
from olmtool.errors import InputError

OPM = Path(__file__).resolve().parents[2] / "shared" / "peers" / "opm"

SCALARS = """\
b1: y
b2: n
b3: yes
b4: on
b5: Off
b6: TRUE
b7: NO
i1: 0755
i2: 0o755
i3: 0x1F
i4: 0b101
i5: 1_000
i6: 190:20:30
i7: -0b11
i8: +12
i9: 08
i10: 12345678901234567890
i11: 123456789012345678901234
f1: 1e5
f2: 1.5e+3
f4: 685_230.15
f5: 190:20:30.15
f6: .5
f7: 1.
t1: 2023-05-02T10:00:00Z
t2: 2023-05-02
t3: 2001-12-14 21:59:43.10 -5
n1: ~
n2: Null
n3:
s1: =
s2: "yes"
s3: '0755'
s4: !!str 12
s5: 1.2.3
bin: !!binary aGVsbG8=
set: !!set {a, b}
omap: !!omap [a: 1, b: 2]
custom: !foo bar
custommap: !foo {a: 1}
ts: !!timestamp 2023-05-02
ti: !!int "12"
"""

EXPECTED = {
    "b1": True,
    "b2": False,
    "b3": True,
    "b4": True,
    "b5": False,
    "b6": True,
    "b7": False,
    "i1": 493,
    "i2": 493,
    "i3": 31,
    "i4": 5,
    "i5": 1000,
    "i6": "190:20:30",
    "i7": -3,
    "i8": 12,
    "i9": 8.0,
    "i10": 12345678901234567890,
    "i11": 1.2345678901234568e23,
    "f1": 100000.0,
    "f2": 1500.0,
    "f4": 685230.15,
    "f5": "190:20:30.15",
    "f6": 0.5,
    "f7": 1.0,
    "t1": "2023-05-02T10:00:00Z",
    "t2": "2023-05-02",
    "t3": "2001-12-14 21:59:43.10 -5",
    "n1": None,
    "n2": None,
    "n3": None,
    "s1": "=",
    "s2": "yes",
    "s3": "0755",
    "s4": "12",
    "s5": "1.2.3",
    "bin": "hello",
    "set": {"a": None, "b": None},
    "omap": [{"a": 1}, {"b": 2}],
    "custom": "bar",
    "custommap": {"a": 1},
    "ts": "2023-05-02",
    "ti": 12,
}


def test_scalars_resolve_as_yaml_v2_into_json() -> None:
    data = yamlread.load(SCALARS)
    assert data == EXPECTED
    assert json.loads(json.dumps(data)) == data  # nothing JSON cannot hold


def test_timestamps_and_dates_stay_the_text_written() -> None:
    text = "createdAt: 2023-05-02T10:00:00Z\nday: 2024-01-31\nnested: {at: 2023-05-02 10:00:00}\n"
    assert yamlread.load(text) == {
        "createdAt": "2023-05-02T10:00:00Z",
        "day": "2024-01-31",
        "nested": {"at": "2023-05-02 10:00:00"},
    }


def test_keys_become_strings() -> None:
    text = "1: a\n1.5: b\nfalse: c\n1e6: d\n1234567.5: e\n"
    assert yamlread.load(text) == {
        "1": "a",
        "1.5": "b",
        "false": "c",
        "1e+06": "d",
        "1.2345675e+06": "e",
    }


def test_a_null_key_is_refused_as_go_refuses_it() -> None:
    with pytest.raises(InputError) as exc:
        yamlread.load("a: 1\n~: 2\n", path="x.yaml")
    assert exc.value.line == 2 and "unsupported map key null" in exc.value.message


def test_merge_keys_apply_in_order_as_in_yaml_v2() -> None:
    text = """\
base: &base {a: 1, b: 1}
after: {a: 0, <<: *base}
before: {<<: *base, a: 0}
list: {<<: [{a: 1}, {a: 2, c: 2}]}
"""
    data = yamlread.load(text)
    assert data["after"] == {"a": 1, "b": 1}
    assert data["before"] == {"a": 0, "b": 1}
    assert data["list"] == {"a": 1, "c": 2}


def test_duplicate_keys_last_wins_and_are_listed() -> None:
    text = """\
kind: A
metadata:
  name: x
  labels: {a: "1"}
  labels: {a: "1"}
spec:
  size: 1
  size: 2
"""
    parsed = yamlread.parse(text)
    assert parsed.documents == [
        {"kind": "A", "metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"size": 2}}
    ]
    duplicates = {d.key: d for d in parsed.duplicates}
    assert duplicates["labels"].same and duplicates["labels"].line == 5
    assert duplicates["labels"].first_line == 4
    assert not duplicates["size"].same and duplicates["size"].line == 8


def test_keys_overridden_by_a_merge_are_not_duplicates() -> None:
    assert yamlread.parse("b: &b {a: 1}\nc: {<<: *b, a: 2}\n").duplicates == []


def test_multi_document_files_skip_empty_documents() -> None:
    text = "---\n# nothing\n---\na: 1\n---\n---\nb:\n  - c\n"
    parsed = yamlread.parse(text)
    assert parsed.documents == [{"a": 1}, {"b": ["c"]}]
    assert parsed.start_line(0) == 4
    assert parsed.start_line(1) == 7
    assert parsed.line_at(1, "b[0]") == 8


def test_lazy_line_lookup_of_nested_paths() -> None:
    text = """\
apiVersion: v1
kind: ClusterServiceVersion
spec:
  install:
    spec:
      deployments:
        - name: first
        - name: second
          spec:
            replicas: 1
metadata:
  annotations:
    a.b/c: x
"""
    parsed = yamlread.parse(text)
    assert parsed._nodes is None  # no line was needed yet: the file was parsed once
    assert parsed.line_at(0, "spec.install.spec.deployments[1].name") == 8
    assert parsed.line_at(0, "spec.install.spec.deployments[1].spec.replicas") == 10
    assert parsed.line_at(0, "metadata.annotations[a.b/c]") == 13
    # the deepest node found: the path stops at deployments[1]
    assert parsed.line_at(0, "spec.install.spec.deployments[1].missing.deeper") == 8
    assert parsed.line_at(0, "nothing.here") is None
    assert parsed.start_line(0) == 1


def test_line_of_a_duplicate_key_is_the_last_one() -> None:
    parsed = yamlread.parse("a: 1\nb: 2\na: 3\n")
    assert parsed.line_at(0, "a") == 3


def test_line_lookup_reads_keys_as_the_data_does() -> None:
    parsed = yamlread.parse("m:\n  y: 1\n  2: b\n")
    assert parsed.documents == [{"m": {"true": 1, "2": "b"}}]
    assert parsed.line_at(0, "m[true]") == 2
    assert parsed.line_at(0, "m[2]") == 3


def test_errors_name_file_and_line() -> None:
    with pytest.raises(InputError) as exc:
        yamlread.parse("a: 1\nb: c: d\n", path="f.yaml")
    assert exc.value.line == 2 and exc.value.message.startswith("invalid YAML: ")
    assert str(exc.value).startswith("f.yaml:2: ")


def test_a_recursive_anchor_is_an_error() -> None:
    with pytest.raises(InputError, match="contains itself"):
        yamlread.load("a: &x [*x]\n")


def test_load_refuses_several_documents() -> None:
    with pytest.raises(InputError, match="single document") as exc:
        yamlread.load("a: 1\n---\nb: 2\n")
    assert exc.value.line == 3
    assert yamlread.load("") is None


def test_iter_documents_yields_lines_and_stops_at_a_defect() -> None:
    documents = yamlread.iter_documents("a: 1\n---\n\n# c\nb: 2\n---\nc: [\n", path="s.yaml")
    assert next(documents) == (1, {"a": 1})
    assert next(documents) == (5, {"b": 2})
    with pytest.raises(InputError) as exc:
        next(documents)
    assert exc.value.path == "s.yaml" and exc.value.line is not None


@pytest.mark.skipif(not OPM.exists(), reason="opm is not in ../shared/peers/opm")
def test_matches_opm(tmp_path: Path) -> None:
    """opm render passes a blob of an unknown schema through as sigs.k8s.io/yaml's JSON."""
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    body = "".join(f"  {line}\n" for line in SCALARS.splitlines())
    (catalog / "blob.yaml").write_text(f"schema: my.custom\nname: x\nvals:\n{body}")
    rendered = subprocess.run(
        [str(OPM), "render", str(catalog)], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(rendered)["vals"] == EXPECTED


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (None, ""),
        (3, "3"),
        (1.0, "1"),
        (1.5, "1.5"),
        (1e6, "1e+06"),
        (1234567.5, "1.2345675e+06"),
        (0.0001, "0.0001"),
        (1e-5, "1e-05"),
        ("x", "x"),
    ],
)
def test_go_string_is_how_a_go_string_field_receives_a_scalar(value: object, text: str) -> None:
    assert yamlread.go_string(value) == text


# --- hostile input: bounded, never a crash (issue 15) --------------------------------------


def laughs(levels: int = 10, fanout: int = 10) -> str:
    """The "billion laughs": each anchor a list of ``fanout`` aliases to the one before."""
    lines = ["a0: &a0 [" + ",".join(['"lol"'] * fanout) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * fanout) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_fast_and_small() -> None:
    import time
    import tracemalloc

    text = laughs()
    assert len(text) < 600  # ten levels: 10**10 strings once expanded
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(InputError, match="document contains excessive aliasing"):
            yamlread.parse(text, path="laughs.yaml")
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < 2  # about 2 ms: yaml.v2's rule stops it after a few thousand nodes
    assert peak < 20 * 1024 * 1024


def test_reasonable_aliases_still_expand() -> None:
    """Anchors reused a few times (a schema shared by two CRD versions, merges) are data."""
    schema = "\n".join(f"    f{i}: {{type: string, description: field {i}}}" for i in range(3000))
    text = f"v1: &schema\n  properties:\n{schema}\nv1beta1: *schema\nv2:\n  <<: *schema\n  x: 1\n"
    data = yamlread.load(text)
    assert data["v1"] == data["v1beta1"] and len(data["v1"]["properties"]) == 3000
    assert data["v2"]["x"] == 1 and data["v2"]["properties"] == data["v1"]["properties"]
    assert yamlread.load(laughs(levels=3))["a2"] == [[["lol"] * 10] * 10] * 10


def test_tagged_collections_are_not_mistaken_for_aliases() -> None:
    """The composer counts only untagged collections; every "!" allows for one more."""
    items = "\n".join(f"- !!map {{k: {i}}}" for i in range(3000))
    data = yamlread.load(f"a: &a [1]\nb: *a\nc:\n{items}\n")
    assert len(data["c"]) == 3000 and data["b"] == [1]


@pytest.mark.parametrize(
    "text",
    [
        "v: &a [*a]\n",
        "v: &a {b: [1, *a]}\n",
        "v: &a\n  b:\n    c: *a\n",
        "v: &a\n  <<: *a\n",
    ],
)
def test_an_anchor_inside_its_own_value_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="an anchor's value contains itself") as exc:
        yamlread.parse(text, path="r.yaml")
    assert exc.value.path == "r.yaml" and exc.value.line in (1, 2, 3)


def nested_flow(depth: int) -> str:
    return "schema: x\nv: " + "[" * depth + "]" * depth + "\n"


def nested_block(depth: int) -> str:
    return (
        "schema: x\n"
        + "".join(f"{' ' * level}k{level}:\n" for level in range(depth))
        + (" " * depth + "leaf: 1\n")
    )


@pytest.mark.parametrize("nested", [nested_flow, nested_block])
def test_nesting_up_to_the_limit_is_read_and_one_more_is_refused(nested: object) -> None:
    from olmtool.inputlimits import MAX_DEPTH

    assert callable(nested)
    # the document itself is one mapping: MAX_DEPTH - 1 more levels reach the limit
    assert yamlread.load(nested(MAX_DEPTH - 1))["schema"] == "x"
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels") as exc:
        yamlread.load(nested(MAX_DEPTH), path="deep.yaml")
    assert exc.value.path == "deep.yaml" and exc.value.line is not None


def test_800_deep_yaml_is_a_clean_error() -> None:
    """It used to raise RecursionError from the builder."""
    with pytest.raises(InputError, match="nested deeper than 512 levels") as exc:
        yamlread.parse("a:\n  b: " + "[" * 800 + "]" * 800 + "\n", path="deep.yaml")
    assert exc.value.line == 2


def test_deep_nesting_keeps_the_documents_before_it() -> None:
    text = "a: 1\n---\nb: 2\n---\nc: " + "{x: " * 600 + "1" + "}" * 600 + "\n---\nd: 4\n"
    documents = yamlread.iter_documents(text, path="s.yaml")
    assert [next(documents), next(documents)] == [(1, {"a": 1}), (3, {"b": 2})]
    with pytest.raises(InputError, match="nested deeper") as exc:
        next(documents)
    assert exc.value.line == 5


def test_deep_aliases_are_bounded_like_written_nesting() -> None:
    """Aliases nest data without nesting the text: the expanded depth is bounded too."""
    deep = "[" * 300 + "1" + "]" * 300
    text = f"a: &a {deep}\nb: &b [{'[' * 300}*a{']' * 300}]\n"
    with pytest.raises(InputError, match="nested deeper than 512 levels"):
        yamlread.parse(text)


def test_big_numbers_are_data_as_in_go() -> None:
    """yaml.v2 tries int64, uint64, then float64: what fits none is the text written
    (opm v1.26 renders the same, checked by hand: a string, 1e+300, a string...)."""
    digits = "9" * 5000
    data = yamlread.load(
        f"v1: {digits}\nv2: {'9' * 400}\nv3: {'9' * 300}\nv4: 1e400\nv5: 0x{'f' * 20}\n"
        f"v6: {'0' * 5000}7\nv7: -{digits}\nv8: .5e999\n? {digits}\n: key\n{'9' * 30}: k\n"
    )
    assert data["v1"] == digits and data["v2"] == "9" * 400 and data["v3"] == 1e300
    assert data["v4"] == "1e400" and data["v5"] == "0x" + "f" * 20 and data["v6"] == 7
    assert data["v7"] == "-" + digits and data["v8"] == ".5e999" and data[digits] == "key"
    assert data["1e+30"] == "k"  # a float key, formatted as float32 like sigs.k8s.io/yaml
    assert yamlread.load("v: !!int 1e300")["v"] == int(1e300)


def test_a_lone_surrogate_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not Unicode text"):
        yamlread.parse("a: \udcff\n", path="s.yaml")


def test_read_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    with pytest.raises(InputError, match="a FIFO, not a regular file"):
        yamlread.read(fifo)  # must not wait for a writer
    with pytest.raises(InputError, match=r"symlink loop|cannot resolve"):
        yamlread.read(tmp_path / "loop.yaml")
    with pytest.raises(InputError, match="a character device"):
        yamlread.read(tmp_path / "zero.yaml")
