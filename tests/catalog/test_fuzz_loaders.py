"""Fuzzing the catalog loaders (issue 15): random bytes, mutated YAML and JSON catalogs and
random values in blob fields give findings (or an InputError), never another exception.

Bounded and reproducible: ``derandomize`` fixes hypothesis's seed (CI runs the same cases
every time), a few hundred cases per loader, no deadline (the machine may be busy).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmtool import yamlread
from olmtool.catalog.load import iter_json_stream, load_catalog, load_texts, parse_blobs
from olmtool.catalog.templates.documents import _line_maps
from olmtool.catalog.validate import validate_config
from olmtool.errors import InputError

CORPUS = Path(__file__).parent / "corpus"
SEED_YAML = (CORPUS / "valid-yaml" / "widget-operator" / "catalog.yaml").read_text()
SEED_JSON = (CORPUS / "valid-json" / "widget-operator" / "catalog.json").read_text()

FUZZ = settings(
    derandomize=True,
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Pieces that reach the loaders' corners: aliases, merges, tags, deep nesting, big
# numbers, escapes, document markers, odd line breaks, characters YAML refuses.
SNIPPETS = [
    "&a ",
    "*a",
    "<<: *a\n",
    "&b [*a, *a, *a, *a, *a, *a, *a, *a]",
    "[" * 600,
    "{a: " * 300,
    "- " * 300,
    "]",
    "}",
    "9" * 5000,
    "1e400",
    "0x" + "f" * 40,
    "!!binary ",
    "!!int ",
    "!!map ",
    "!!omap ",
    "!!set ",
    "!custom ",
    "? ",
    "- ",
    ": ",
    ", ",
    "\t",
    "\x00",
    "\x85",
    "\ufeff",
    "\u2028",
    "\r",
    "'",
    '"',
    "\\",
    "\\u0000",
    "\\ud800",
    "NaN",
    "-Infinity",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "# c\n",
    "|\n",
    ">-\n",
    "\n",
    "  ",
    "null",
    "true",
    "~",
    "schema: olm.bundle\n",
    '{"schema": "olm.channel", "entries": 5}',
]
MUTATION = st.tuples(
    st.floats(0, 1),  # where
    st.sampled_from(["insert", "replace", "delete"]),
    st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=4)),
    st.integers(1, 40),  # how much to replace or delete
)


def mutate(seed: str, mutations: list[tuple[float, str, str, int]]) -> str:
    text = seed
    for where, kind, piece, span in mutations:
        at = int(where * len(text))
        if kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "replace":
            text = text[:at] + piece + text[at + span :]
        else:
            text = text[:at] + text[at + span :]
    return text


@dataclass(frozen=True)
class Loaded:
    blobs: int  # blobs the stream parser read
    unparsable: bool  # the parser reported the file
    invalid: bool  # the catalog's validation has an error


def loads_cleanly(text: str, name: str) -> Loaded:
    """Each loader on ``text``: findings, or an InputError, and nothing else."""
    blobs, problems = parse_blobs(text, name)
    assert all(blob.origin.file == name for blob in blobs)
    assert all(p.file == name and p.check == "parse" for p in problems)
    result = load_texts({name: text})
    report = validate_config(result.config, load_findings=result.findings)
    assert all(f.severity in ("error", "warning") for f in report.findings)
    try:
        parsed = yamlread.parse(text, path=name)
    except InputError as exc:
        assert exc.path == name
    else:  # a finding's line: the file composed again
        for index in range(len(parsed.documents)):
            parsed.line_at(index, "properties[0].value.group")
    _line_maps(text, len(blobs))  # templates: the line of every key
    invalid = any(f.severity == "error" for f in report.findings)
    return Loaded(len(blobs), bool(problems), invalid)


@FUZZ
@given(st.lists(MUTATION, min_size=1, max_size=8))
def test_mutated_yaml_catalogs(mutations: list[tuple[float, str, str, int]]) -> None:
    loaded = loads_cleanly(mutate(SEED_YAML, mutations), "catalog.yaml")
    assert loaded.invalid or not loaded.unparsable  # a file it cannot read fails the catalog


@FUZZ
@given(st.lists(MUTATION, min_size=1, max_size=8))
def test_mutated_json_catalogs(mutations: list[tuple[float, str, str, int]]) -> None:
    loaded = loads_cleanly(mutate(SEED_JSON, mutations), "catalog.json")
    assert loaded.invalid or not loaded.unparsable  # a file it cannot read fails the catalog


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(["", "widget-operator", "stable", ">=1.0.0 <2.0.0", "1.0.0", "x.v1"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.text(max_size=8), st.sampled_from(["type", "value", "name"])),
            children,
            max_size=4,
        ),
    ),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    [
        "name",
        "package",
        "defaultChannel",
        "icon",
        "entries",
        "properties",
        "relatedImages",
        "image",
        "skips",
        "replaces",
        "skipRange",
        "value",
        "description",
    ]
)


def blobs_of(seed: str) -> list[dict[str, Any]]:
    return [blob for blob, _ in iter_json_stream(seed, "seed.json")]


@FUZZ
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 3), FIELDS, JSON_VALUES),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_random_values_in_blob_fields(
    changes: list[tuple[int, int, str, Any]], as_yaml: bool
) -> None:
    """Well-formed files whose fields hold anything: decoding and validation report them."""
    blobs = blobs_of(SEED_JSON)
    for which, depth, field, value in changes:
        descend(blobs[which % len(blobs)], depth)[field] = value
    if as_yaml:
        text = "".join("---\n" + yamlread_dump(blob) for blob in blobs)
        loaded = loads_cleanly(text, "catalog.yaml")
    else:
        loaded = loads_cleanly("\n".join(json.dumps(blob) for blob in blobs), "catalog.json")
    assert loaded.blobs == len(blobs) and not loaded.unparsable  # well-formed: every blob read


def descend(blob: dict[str, Any], depth: int) -> dict[str, Any]:
    """The blob, or an object ``depth`` levels inside it (a property, an entry, an icon)."""
    target = blob
    for _ in range(depth):
        inner = [
            item
            for value in target.values()
            for item in (value if isinstance(value, list) else [value])
            if isinstance(item, dict)
        ]
        if not inner:
            break
        target = inner[0]
    return target


def yamlread_dump(blob: dict[str, Any]) -> str:
    return yaml.dump(blob, Dumper=yaml.CSafeDumper)


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(data=st.binary(max_size=400), name=st.sampled_from(["c.yaml", "c.json", "c"]))
def test_random_bytes_in_a_catalog_file(catalog_dir: Path, data: bytes, name: str) -> None:
    for old in catalog_dir.iterdir():
        old.unlink()
    (catalog_dir / name).write_bytes(data)
    result = load_catalog(catalog_dir)
    validate_config(result.config, load_findings=result.findings)
    assert all(f.file.endswith(name) for f in result.findings if f.check == "parse")
    with contextlib.suppress(InputError):
        yamlread.parse(data.decode("utf-8", errors="replace"), path=name)
