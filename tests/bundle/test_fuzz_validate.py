"""``bundle validate`` never crashes: one value of the shipped bundle changed at a time.

Every field path of every manifest of bundle/etcd-operator/0.3.0 and of
metadata/annotations.yaml is a target; each gets a value of another type (" ", "", a
mapping, lists, numbers, a boolean, null, a YAML date, a long string) or loses its key.
The CRD's OpenAPI schema nodes also get schema keywords of the wrong type added. Each
case is validated with every suite: findings are fine, an exception or the driver's
``internal/check-crashed`` guard is a bug.

The targets times the values are some 11,500 cases (plus some 29,000 schema-keyword
cases), too many for every run: hypothesis samples 500, derandomized, so CI is
reproducible (about 15 s of CPU). ``OLMTOOL_FUZZ_EXHAUSTIVE=1`` runs them all (some ten
minutes on one core).
"""

from __future__ import annotations

import copy
import datetime
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmtool import yamlread
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import CHECK_CRASHED, select_suites, validate_bundle

SOURCE = Path(__file__).resolve().parents[2] / "bundle" / "etcd-operator" / "0.3.0"
SUITES = select_suites(["all"])
CRD = "manifests/etcd.olmtool.dev_etcdclusters.yaml"


class _Delete:
    def __repr__(self) -> str:
        return "<key deleted>"


DELETE = _Delete()
VALUES: list[Any] = [
    " ",
    "",
    {"a": "b"},
    ["a"],
    [{"a": "b"}],
    5,
    -1,
    True,
    None,
    datetime.date(2001, 1, 1),  # written as a YAML date: 2001-01-01
    "x" * 300,
    DELETE,
]
SCHEMA_KEYWORDS = [
    "type", "pattern", "format", "items", "properties", "enum", "default", "required",
    "additionalProperties", "minimum", "maxLength", "multipleOf", "exclusiveMinimum",
    "uniqueItems", "nullable", "allOf", "anyOf", "oneOf", "not", "$ref", "description",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type", "x-kubernetes-validations",
]  # fmt: skip

Path_ = tuple[str | int, ...]
Target = tuple[str, int, Path_]  # file, document index, path in the document


def _files() -> list[str]:
    return sorted(
        path.relative_to(SOURCE).as_posix()
        for path in [*SOURCE.glob("manifests/*.yaml"), SOURCE / "metadata" / "annotations.yaml"]
    )


DOCUMENTS: dict[str, list[Any]] = {
    file: yamlread.load_all((SOURCE / file).read_text(encoding="utf-8")) for file in _files()
}


def _paths(node: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _paths(child, (*prefix, index))


def _get(node: Any, path: Path_) -> Any:
    for step in path:
        node = node[step]
    return node


TARGETS: list[Target] = [
    (file, index, path)
    for file, documents in DOCUMENTS.items()
    for index, document in enumerate(documents)
    for path in _paths(document)
    if path
]
# every mapping under an openAPIV3Schema that is a schema (not a `properties` map)
SCHEMA_NODES: list[Target] = [
    (CRD, index, path)
    for index, document in enumerate(DOCUMENTS[CRD])
    for path in _paths(document)
    if "openAPIV3Schema" in path
    and isinstance(_get(document, path), dict)
    and path[-1] not in ("properties", "default", "example", "enum")
    and "default" not in path
]


def _mutated(target: Target, value: Any, *, add_key: str | None = None) -> str:
    """The file's text with the value at the target replaced (or its key deleted; with
    ``add_key``, the key set inside the target mapping)."""
    file, index, path = target
    documents = copy.deepcopy(DOCUMENTS[file])
    if add_key is not None:
        parent, key = _get(documents[index], path), add_key
    else:
        parent, key = _get(documents[index], path[:-1]), path[-1]
    if value is DELETE:
        if isinstance(key, int) or key not in parent:
            parent[key] = None  # a list item (or absent key) cannot be deleted: null it
        else:
            del parent[key]
    else:
        parent[key] = copy.deepcopy(value)
    return yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "etcd-operator"
    shutil.copytree(SOURCE, root)
    return root


def check_no_crash(root: Path, file: str, text: str, what: str) -> None:
    """Validate the bundle with ``file`` replaced by ``text``: no exception, no crashed
    check. The file is restored afterwards."""
    path = root / file
    original = path.read_bytes()
    path.write_text(text, encoding="utf-8")
    try:
        report = validate_bundle(load_bundle(root), suites=SUITES)
    finally:
        path.write_bytes(original)
    crashed = [f.message for f in report.findings if f.check == CHECK_CRASHED]
    assert not crashed, f"{what}: {crashed}"


FUZZ_SETTINGS = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def test_targets_cover_the_bundle():
    files = {file for file, _, _ in TARGETS}
    assert files == set(_files()) and len(files) == 6
    assert len(TARGETS) > 900 and len(SCHEMA_NODES) > 30


@FUZZ_SETTINGS
@given(target=st.sampled_from(TARGETS), value=st.sampled_from(VALUES))
def test_one_value_changed(workdir: Path, target: Target, value: Any):
    file, index, path = target
    check_no_crash(workdir, file, _mutated(target, value), f"{file}[{index}] {path} = {value!r}")


@settings(FUZZ_SETTINGS, max_examples=200)
@given(
    target=st.sampled_from(SCHEMA_NODES),
    keyword=st.sampled_from(SCHEMA_KEYWORDS),
    value=st.sampled_from(VALUES),
)
def test_schema_keyword_of_the_wrong_type(workdir: Path, target: Target, keyword: str, value: Any):
    file, index, path = target
    text = _mutated(target, value, add_key=keyword)
    check_no_crash(workdir, file, text, f"{file}[{index}] {path}.{keyword} = {value!r}")


@pytest.mark.skipif(
    os.environ.get("OLMTOOL_FUZZ_EXHAUSTIVE") != "1", reason="set OLMTOOL_FUZZ_EXHAUSTIVE=1"
)
def test_every_path_with_every_value(workdir: Path):
    cases = [(target, value, None) for target in TARGETS for value in VALUES]
    cases += [
        (target, value, keyword)
        for target in SCHEMA_NODES
        for keyword in SCHEMA_KEYWORDS
        for value in VALUES
    ]
    failures = []
    for target, value, keyword in cases:
        file, index, path = target
        what = f"{file}[{index}] {path}{f'.{keyword}' if keyword else ''} = {value!r}"
        try:
            check_no_crash(workdir, file, _mutated(target, value, add_key=keyword), what)
        except Exception as exc:  # collect them all, then fail once
            failures.append(f"{what}: {exc}")
    assert not failures, "\n".join(failures[:50])
