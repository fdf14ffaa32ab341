"""Property-based tests: pydantic and the emitted CRD schema accept and refuse the same data.

For every feature model (``features.SPEC_MODELS``) and the etcd operator's API models:

a. data generated from pydantic's own JSON schema is accepted by the CRD schema (as the
   apiserver validates it: :func:`validate_against`), data generated from the CRD schema
   is accepted by pydantic, and what pydantic serialises is accepted by the CRD schema;
b. a valid instance with one constraint of the emitted schema broken is refused by both.

Known differences in semantics the tests account for (they are not olmtool bugs):

* pydantic is lax by default ("3" -> 3, 1.0 -> 1, true -> 1, "yes" -> True, 12345 -> a
  datetime); the invalid-data tests validate with ``strict=True``.
* The apiserver prunes unknown fields and drops nulls of non-nullable fields before it
  validates (``validation.prune``); data generated from the CRD schema is pruned before it
  is given to pydantic, as the operator would only ever read the pruned object. Nulls are
  never used as mutations for the same reason.
* Neither side evaluates CEL rules (``x-kubernetes-validations``); list-type set/map
  uniqueness is checked only on the CRD side, like the apiserver (pydantic lists keep
  duplicates, pydantic sets silently de-duplicate), so generated data with duplicates is
  skipped (``_clean``); the ``Format``
  marker is for the apiserver only (pydantic does not check it, jsonschema checks only
  some formats). No mutation targets those, nor string formats.
* Python's ``re`` (used by hypothesis-jsonschema) differs from pydantic's and the
  apiserver's regex engines (RE2; ``validate_against`` emulates it with ``go_regex``) on a
  few characters; generated data that depends on the difference is skipped (``_clean``).

Real disagreements these properties found are pinned as regression tests at the end.
"""

import copy
import functools
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import hypothesis_jsonschema._from_schema as _hypothesis_jsonschema
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as _conjecture_utils
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel, ValidationError

from olmtool.crd import model_to_openapi, openapi_to_jsonschema
from olmtool.crd.markers import (
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    LIST_TYPE,
)
from olmtool.crd.validation import duplicate_list_entries, go_regex, prune, validate_against
from tests.crd import features

OPERATOR_DIR = Path(__file__).resolve().parents[2] / "operator"
if str(OPERATOR_DIR) not in sys.path:
    sys.path.insert(0, str(OPERATOR_DIR))

from etcd_operator.api import v1alpha1, v1beta1  # noqa: E402

# --- hypothesis-jsonschema compatibility ---------------------------------------------------
# hypothesis-jsonschema 0.23.1 (the latest release) drives object generation with the old
# ``cu.many(...).more()`` protocol, which recent Hypothesis releases replaced by a context
# manager: every object schema fails with "'many' object has no attribute 'more'". Give
# hypothesis-jsonschema (only it: Hypothesis's own strategies keep the real class) a
# minimal implementation of the old protocol. Does nothing on Hypothesis versions that
# still have it.


class _LegacyMany:
    def __init__(self, data, min_size, max_size, average_size):
        self.data = data
        self.min_size = min_size
        self.max_size = max_size
        self.p_continue = (
            _conjecture_utils._calc_p_continue(average_size - min_size, max_size - min_size)
            if max_size > min_size
            else 0.0
        )
        self.count = 0
        self.rejections = 0
        self.force_stop = False

    def more(self) -> bool:
        if self.min_size == self.max_size:
            more = self.count < self.min_size
        elif self.force_stop or self.count >= self.max_size:
            more = self.data.draw_boolean(0.5, forced=False)
        elif self.count < self.min_size:
            more = self.data.draw_boolean(0.5, forced=True)
        else:
            more = self.data.draw_boolean(self.p_continue)
        self.count += more
        return more

    def reject(self, why: str | None = None) -> None:
        self.count -= 1
        self.rejections += 1
        if self.rejections > max(3, 2 * self.count):
            if self.count < self.min_size:
                self.data.mark_invalid(why)
            self.force_stop = True


if not hasattr(_conjecture_utils.many, "more"):
    _hypothesis_jsonschema.cu = types.SimpleNamespace(
        **{**vars(_conjecture_utils), "many": _LegacyMany}
    )

# Speed: hypothesis-jsonschema rebuilds the strategy of every sub-schema (canonicalising
# it, parsing its regex) on each draw. Strategies are immutable, so memoise both; this
# roughly halves the run time of this file.
_uncached_from_schema = getattr(_hypothesis_jsonschema, "__from_schema")
_strategies: dict[tuple, tuple] = {}


def _memoised_from_schema(schema, *, alphabet, custom_formats):
    try:
        key = (json.dumps(schema, sort_keys=True), id(alphabet), id(custom_formats))
    except TypeError:  # not JSON (custom format strategies): no caching
        return _uncached_from_schema(schema, alphabet=alphabet, custom_formats=custom_formats)
    if key not in _strategies:
        strategy = _uncached_from_schema(schema, alphabet=alphabet, custom_formats=custom_formats)
        _strategies[key] = (alphabet, custom_formats, strategy)  # keeps the ids alive
    return _strategies[key][2]


setattr(_hypothesis_jsonschema, "__from_schema", _memoised_from_schema)
_hypothesis_jsonschema.from_js_regex = functools.cache(_hypothesis_jsonschema.from_js_regex)


# --- the models -----------------------------------------------------------------------------

MODELS: dict[str, type[BaseModel]] = {
    **{model.__name__: model for model in features.SPEC_MODELS},
    "etcd.v1alpha1.EtcdClusterSpec": v1alpha1.EtcdClusterSpec,
    "etcd.v1alpha1.EtcdClusterStatus": v1alpha1.EtcdClusterStatus,
    "etcd.v1beta1.EtcdClusterSpec": v1beta1.EtcdClusterSpec,
    "etcd.v1beta1.EtcdClusterStatus": v1beta1.EtcdClusterStatus,
}
model_names = pytest.mark.parametrize("name", sorted(MODELS))

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Characters Python's ``re`` puts in ``\s`` but pydantic's Rust regex and the apiserver's
# RE2 do not (see test_pattern_whitespace_semantics below): hypothesis-jsonschema generates
# them from patterns like etcd's cron schedule, so generated data is kept free of them.


@functools.cache
def _openapi(name: str) -> dict[str, Any]:
    return model_to_openapi(MODELS[name])


@functools.cache
def _pydantic_strategy(name: str) -> st.SearchStrategy[Any]:
    schema = MODELS[name].model_json_schema(mode="validation")
    # pydantic's EmbeddedObject is a plain dict, but the apiserver requires apiVersion and
    # kind in an embedded resource (a known gap: see test_embedded_object_needs_api_version).
    # Generate what the type's documentation promises, a Kubernetes object.
    return from_schema(_require_type_meta(schema))


@functools.cache
def _crd_strategy(name: str) -> st.SearchStrategy[Any]:
    # openapi_to_jsonschema gives the draft-4 meaning of the emitted schema (nullable ->
    # type [.., null], int-or-string -> anyOf, embedded resource -> required apiVersion/kind).
    return from_schema(openapi_to_jsonschema(_openapi(name)))


def _require_type_meta(node: Any) -> Any:
    if isinstance(node, list):
        return [_require_type_meta(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _require_type_meta(value) for key, value in node.items()}
    if out.get(EMBEDDED_RESOURCE) and out.get("type") == "object":
        properties = out.setdefault("properties", {})
        for key in ("apiVersion", "kind"):
            properties.setdefault(key, {"type": "string", "minLength": 1})
        out["required"] = sorted({*out.get("required", []), "apiVersion", "kind"})
    return out


def _clean(value: Any, schema: dict[str, Any]) -> bool:
    """False if the data depends on a known difference between the validators: a string
    checked against a ``pattern`` with Python-only regex behaviour (generated by Python's
    ``re``), or duplicates in a set/map list (which only the apiserver refuses)."""
    if any(True for _ in duplicate_list_entries(value, schema, "")):
        return False
    return _clean_strings(value, schema)


def _clean_strings(value: Any, schema: dict[str, Any]) -> bool:
    if isinstance(value, str):
        pattern = schema.get("pattern")
        return pattern is None or bool(re.search(pattern, value)) == bool(
            go_regex(pattern).search(value)
        )
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        return all(
            _clean_strings(item, properties.get(key) or (extra if isinstance(extra, dict) else {}))
            for key, item in value.items()
        )
    if isinstance(value, list):
        return all(_clean_strings(item, schema.get("items") or {}) for item in value)
    return True


def _crd_valid(name: str, data: Any) -> list[str]:
    return validate_against(data, _openapi(name)).errors


def _pydantic_errors(name: str, data: Any, *, strict: bool = False) -> list[str]:
    try:
        MODELS[name].model_validate_json(json.dumps(data), strict=strict)
    except ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    return []


# --- a. valid data is valid on both sides ---------------------------------------------------


@model_names
@PROPERTY_SETTINGS
@given(data=st.data())
def test_pydantic_valid_data_is_crd_valid(name, data):
    instance = data.draw(_pydantic_strategy(name), label="from pydantic's schema")
    assume(_clean(instance, _openapi(name)))
    assert _crd_valid(name, instance) == []


@model_names
@PROPERTY_SETTINGS
@given(data=st.data())
def test_crd_valid_data_is_pydantic_valid(name, data):
    instance = data.draw(_crd_strategy(name), label="from the CRD schema")
    assume(_clean(instance, _openapi(name)))
    assert _crd_valid(name, instance) == []  # the generator agrees with the validator
    stored, _ = prune(instance, _openapi(name))  # what the apiserver would store
    assert _pydantic_errors(name, stored) == []


@model_names
@PROPERTY_SETTINGS
@given(data=st.data())
def test_pydantic_output_is_crd_valid(name, data):
    """What the operator writes (model_dump by alias) is accepted by the apiserver."""
    instance = data.draw(_crd_strategy(name), label="from the CRD schema")
    assume(_clean(instance, _openapi(name)))
    stored, _ = prune(instance, _openapi(name))
    model = MODELS[name].model_validate_json(json.dumps(stored))
    dumped = model.model_dump(mode="json", by_alias=True)
    assert _crd_valid(name, dumped) == []
    assert MODELS[name].model_validate(dumped) == model  # and it round-trips
    minimal = model.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    assert _crd_valid(name, minimal) == []
    assert MODELS[name].model_validate(minimal) == model
    # (exclude_none does not round-trip by design: a None over a non-None default)
    assert _crd_valid(name, model.model_dump(mode="json", by_alias=True, exclude_none=True)) == []


# --- b. one broken constraint is refused by both --------------------------------------------


def _mutations(value: Any, schema: dict[str, Any], path: tuple = ()) -> list[tuple]:
    """(description, path, kind, argument) for every single-constraint violation of
    ``value`` that pydantic (strict) and the apiserver must both refuse."""
    found: list[tuple] = []

    def add(what: str, kind: str, where: tuple, argument: Any = None) -> None:
        found.append((what, where, kind, argument))

    if schema.get(INT_OR_STRING):
        if isinstance(value, str) and "pattern" in schema:
            add("int-or-string not matching pattern", "set", path, "not a quantity")
        add("int-or-string given an object", "set", path, {"not": "an int or a string"})
        return found
    node_type = schema.get("type")
    if node_type is None:  # typing.Any with PreserveUnknownFields(): anything goes
        return found
    wrong = {
        "integer": "not a number",
        "number": "not a number",
        "string": 12345,
        "boolean": "true",
        "object": "not an object",
        "array": "not a list",
    }[node_type]
    if value is None:
        return found
    if path:  # (replacing the whole object by a string is too easy to be interesting)
        add(f"{node_type} given {type(wrong).__name__}", "set", path, wrong)

    if node_type in ("integer", "number") and isinstance(value, int | float):
        step = schema.get("multipleOf", 1)
        if "maximum" in schema:
            over = schema["maximum"] + (0 if schema.get("exclusiveMaximum") else step)
            add("above maximum", "set", path, over)
        if "minimum" in schema:
            under = schema["minimum"] - (0 if schema.get("exclusiveMinimum") else step)
            add("below minimum", "set", path, under)
        if "multipleOf" in schema:
            add("not a multiple", "set", path, value + schema["multipleOf"] / 2)
        if "enum" in schema:
            add("not in enum", "set", path, max(schema["enum"]) + 1)
    elif node_type == "string" and isinstance(value, str):
        if "maxLength" in schema:
            add("longer than maxLength", "set", path, "a" * (schema["maxLength"] + 1))
        if schema.get("minLength", 0) > 0:
            add("shorter than minLength", "set", path, "a" * (schema["minLength"] - 1))
        if "pattern" in schema:
            mismatch = next(
                (s for s in ("", "!", "-", "Z z", "#1") if not re.search(schema["pattern"], s)),
                None,
            )
            if mismatch is not None:
                add("not matching pattern", "set", path, mismatch)
        if "enum" in schema:
            add("not in enum", "set", path, "not-in-the-enum")
    elif node_type == "object" and isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key in value:
                add(f"missing required {key}", "delete", (*path, key))
        for key, child in properties.items():
            if key in value:
                found += _mutations(value[key], child, (*path, key))
            elif child.get("type") and not child.get(INT_OR_STRING):
                # an absent optional field, written with a value of the wrong type
                wrong_child = {"integer": "x", "number": "x", "string": 1, "boolean": "x",
                               "object": "x", "array": "x"}[child["type"]]  # fmt: skip
                add(f"optional {key} of the wrong type", "set", (*path, key), wrong_child)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                found += _mutations(item, extra, (*path, key))
        # preserve-unknown objects: anything inside goes
    elif node_type == "array" and isinstance(value, list):
        items = schema.get("items") or {}
        if "maxItems" in schema:
            extra_items = _extra_items(value, items, schema, schema["maxItems"] + 1 - len(value))
            if extra_items is not None:
                add("more than maxItems", "extend", path, extra_items)
        if schema.get("minItems", 0) > 0:
            add("fewer than minItems", "set", path, value[: schema["minItems"] - 1])
        for index, item in enumerate(value):
            found += _mutations(item, items, (*path, index))
    return found


def _rank(mutation: tuple) -> int:
    what = mutation[0]
    if what.startswith("missing required"):
        return 1
    if " given " in what or "wrong type" in what:
        return 2
    return 0


def _extra_items(value: list, items: dict, schema: dict, count: int) -> list | None:
    """Valid items that make the list too long, or None if there is no honest way."""
    if items == {"type": "string"}:
        return [f"extra-{i}" for i in range(count)]  # distinct, so sets do not shrink
    if value and schema.get(LIST_TYPE) != "set":
        # duplicates: fine for pydantic lists; a set list would de-duplicate in pydantic
        return [copy.deepcopy(value[0]) for _ in range(count)]
    return None


def _apply(instance: Any, mutation: tuple) -> Any:
    _, where, kind, argument = mutation
    mutated = copy.deepcopy(instance)
    if not where:
        return argument
    parent = mutated
    for step in where[:-1]:
        parent = parent[step]
    if kind == "delete":
        del parent[where[-1]]
    elif kind == "extend":
        parent[where[-1]].extend(copy.deepcopy(argument))
    else:
        parent[where[-1]] = argument
    return mutated


@model_names
@PROPERTY_SETTINGS
@given(data=st.data())
def test_one_broken_constraint_is_refused_by_both(name, data):
    instance = data.draw(_crd_strategy(name), label="valid instance")
    assume(_clean(instance, _openapi(name)))
    valid, _ = prune(instance, _openapi(name))
    assert _crd_valid(name, valid) == []
    assert _pydantic_errors(name, valid, strict=True) == []
    # Hypothesis favours the first elements of sampled_from: broken constraints first,
    # then missing required fields, then values of the wrong type.
    mutations = sorted(_mutations(valid, _openapi(name)), key=_rank)
    assume(mutations)
    mutation = data.draw(st.sampled_from(mutations), label="mutation")
    event(mutation[0])
    broken = _apply(valid, mutation)
    assert _crd_valid(name, broken), f"the CRD schema accepts {mutation[0]} at {mutation[1]}"
    assert _pydantic_errors(name, broken, strict=True), (
        f"pydantic accepts {mutation[0]} at {mutation[1]}"
    )


def test_mutations_cover_every_constraint_kind():
    """The mutation generator is not vacuous: each kind of violation appears somewhere."""
    examples = {
        "ScalarsSpec": {"replicas": 1, "budget": 1.0, "ratio": 0.5, "step": 1.5, "size": 3},
        "StringsSpec": {"name": "a", "createdAt": "2020-01-01T00:00:00Z", "code": "ABC"},
        "CollectionsSpec": {"args": ["a"], "zones": ["a"], "ports": [{"name": "a", "port": 1}]},
        "UnionsSpec": {"targetPort": 1, "memory": "1Gi"},
    }
    seen = set()
    for name, example in examples.items():
        assert _crd_valid(name, example) == [] and _pydantic_errors(name, example) == []
        for mutation in _mutations(example, _openapi(name)):
            seen.add(mutation[0])
            broken = _apply(example, mutation)
            assert _crd_valid(name, broken), mutation
            assert _pydantic_errors(name, broken, strict=True), mutation
    for kind in (
        "above maximum",
        "below minimum",
        "not a multiple",
        "not in enum",
        "longer than maxLength",
        "shorter than minLength",
        "not matching pattern",
        "more than maxItems",
        "fewer than minItems",
        "missing required replicas",
        "missing required name",
        "int-or-string not matching pattern",
        "integer given str",
        "string given int",
    ):
        assert kind in seen, kind


# --- disagreements found by the properties above, fixed: regression tests ----------------
# Each pairs the side that was right with the side that was wrong (validate_against's
# regex, date-time and list-uniqueness checks; EmbeddedObject's type meta in pydantic).

ETCD_SPEC = "etcd.v1beta1.EtcdClusterSpec"
NO_TYPE_META = {"template": {"apiVersion": "v1", "kind": "Pod"}, "object": {"spec": {}}}


def test_pydantic_patterns_behave_like_re2():
    """pydantic's regex engine and the apiserver's RE2 agree: ``$`` is the end of the text
    (no trailing newline) and ``\\s`` does not match the separators \\x1c-\\x1f."""
    assert _pydantic_errors(ETCD_SPEC, {"version": "3.5.1"}) == []
    assert _pydantic_errors(ETCD_SPEC, {"version": "3.5.1\n"})
    assert _pydantic_errors(ETCD_SPEC, {"backupSchedule": "0 */6 * * *"}) == []
    assert _pydantic_errors(ETCD_SPEC, {"backupSchedule": "0\x1c*/6 * * *"})


def test_validator_pattern_dollar_is_end_of_text():
    assert _crd_valid(ETCD_SPEC, {"version": "3.5.1\n"})


def test_validator_pattern_whitespace_is_ascii():
    assert _crd_valid(ETCD_SPEC, {"backupSchedule": "0\x1c*/6 * * *"})


def test_crd_requires_type_meta_in_embedded_objects():
    assert _crd_valid("EmbeddedSpec", NO_TYPE_META) == [
        "object: 'apiVersion' is a required property",
        "object: 'kind' is a required property",
    ]


def test_pydantic_requires_type_meta_in_embedded_objects():
    assert _pydantic_errors("EmbeddedSpec", NO_TYPE_META)


def test_pydantic_refuses_a_bad_date_time():
    assert _pydantic_errors("StringsSpec", {"name": "a", "createdAt": "yesterday"})


def test_validator_checks_date_time_format():
    assert _crd_valid("StringsSpec", {"name": "a", "createdAt": "yesterday"})


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"zones": ["a", "a"]}, id="set"),
        pytest.param({"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}, id="map"),
    ],
)
def test_validator_checks_list_uniqueness(spec):
    assert _crd_valid("CollectionsSpec", spec)
