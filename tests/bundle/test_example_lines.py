"""alm-examples findings: every problem of every example, each at the line of the
offending field inside the JSON (where the YAML keeps the JSON's lines) and with the path
inside the example."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from olmtool import yamlread
from olmtool.bundle.examples import json_offsets
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from tests.bundle.test_corpus import CSV, SOURCE, examples

TWO_BAD_EXAMPLES = """[
  {
    "apiVersion": "etcd.olmtool.dev/v1beta1",
    "kind": "EtcdCluster",
    "metadata": {"name": "first"},
    "spec": {
      "replicas": 4,
      "version": "2.0.0"
    }
  },
  {
    "apiVersion": "etcd.olmtool.dev/v1beta1",
    "kind": "EtcdCluster",
    "metadata": {"name": "second"},
    "spec": {"replicas": 2, "finalSnapshot": "yes"}
  }
]
"""


def _line(text: str, needle: str) -> int:
    (number,) = [n for n, line in enumerate(text.split("\n"), start=1) if needle in line]
    return number


def test_every_problem_of_every_example_at_its_line(tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(SOURCE, root)
    examples(TWO_BAD_EXAMPLES)(root)
    report = validate_bundle(load_bundle(root), suites=select_suites([]))
    text = (root / CSV).read_text(encoding="utf-8")
    found = sorted((f.line, f.path) for f in report.findings if f.check == "bundle/example-invalid")
    at = "metadata.annotations[alm-examples]"
    second = _line(text, '"spec": {"replicas": 2')
    assert found == [
        (_line(text, '"replicas": 4'), f"{at}[0].spec.replicas"),
        (_line(text, '"version": "2.0.0"'), f"{at}[0].spec.version"),
        (second, f"{at}[1].spec.finalSnapshot"),
        (second, f"{at}[1].spec.replicas"),
    ]
    assert all(f.severity == "warning" for f in report.findings)


def test_a_folded_annotation_points_at_the_annotation(tmp_path: Path) -> None:
    """A quoted scalar over several lines moves the JSON's lines: the annotation's line."""
    root = tmp_path / "b"
    shutil.copytree(SOURCE, root)
    flat = TWO_BAD_EXAMPLES.replace('"', '\\"').replace("\n", "\n      ")
    csv = root / CSV
    text = csv.read_text(encoding="utf-8")
    start = text.index("    alm-examples: |\n")
    end = text.index("    capabilities:", start)
    csv.write_text(text[:start] + f'    alm-examples: "{flat}"\n' + text[end:], encoding="utf-8")
    report = validate_bundle(load_bundle(root), suites=select_suites([]))
    lines = {f.line for f in report.findings if f.check == "bundle/example-invalid"}
    assert lines == {_line(csv.read_text(), "    alm-examples: ")}


def test_json_offsets() -> None:
    text = '[\n {"a": {"b": [1,\n  {"c.d": null}]}},\n "x"\n]'
    offsets = json_offsets(text)
    line = {path: text.count("\n", 0, at) for path, at in offsets.items()}
    assert line == {
        "": 0,
        "[0]": 1,
        "[0].a": 1,
        "[0].a.b": 1,
        "[0].a.b[0]": 1,
        "[0].a.b[1]": 2,
        "[0].a.b[1][c.d]": 2,
        "[1]": 3,
    }
    assert json_offsets("[1,") == {} and json_offsets("{} x") == {}


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("a:\n  b: |\n    one\n    two\n", [3, 4]),
        ("a:\n  b: |-\n\n    one\n", [3, 4]),
        ("a:\n  b: 'one'\n", [2, 2]),
        ("a:\n  b: >\n    one\n    two\n", [None, None]),
        ("a:\n  b: 'one\n    two'\n", [None, None]),
        ("a:\n  c: x\n", [None, None]),
    ],
)
def test_text_line(yaml: str, expected: list[int | None]) -> None:
    source = yamlread.parse(yaml)
    assert [source.text_line(0, "a.b", n) for n in (0, 1)] == expected
