"""The spec checks the operator makes itself (older CRDs on a cluster let more through)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from etcd_operator.api.v1alpha1 import POSITIVE_QUANTITY_PATTERN
from etcd_operator.validation import (
    QuantityRefused,
    parse_quantity,
    size,
    size_bytes,
    size_problem,
    spec_problems,
)

from olmtool.crd.re2 import re2_problem

POSITIVE = ["1Gi", "500Mi", "1.5Gi", "0.5Gi", ".5Gi", "1.", "2G", "1e9", "1E3", "+1Gi", "64Mi"]
NOT_POSITIVE = ["0", "0Gi", "0.0", "00", "0e9", "-1Gi", "-0", "+0Mi"]
NOT_QUANTITIES = ["abc", "", "10 GB", "1Gb", "1GiB", "Gi", "1e", "1e1.5", "1.2.3", "--1"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1Gi", 2**30),
        ("500Mi", 500 * 2**20),
        ("1.5Gi", 3 * 2**29),
        ("2G", 2 * 10**9),
        ("1e9", 10**9),
        ("100k", 10**5),
        ("2Ei", 2 * 2**60),
        ("1", 1),
        (1073741824, 2**30),
        (1e9, 10**9),
    ],
)
def test_quantities_parse_like_the_apiserver(value: object, expected: int) -> None:
    assert parse_quantity(value) == Decimal(expected)
    assert size_bytes(value) == expected


def test_a_fraction_of_a_byte_rounds_up() -> None:
    assert parse_quantity("1500m") == Decimal("1.5")
    assert size_bytes("1500m") == 2


@pytest.mark.parametrize("value", [*NOT_POSITIVE, 0, -1])
def test_sizes_must_be_greater_than_zero(value: object) -> None:
    with pytest.raises(QuantityRefused, match="must be greater than zero"):
        size_bytes(value)


@pytest.mark.parametrize("value", [*NOT_QUANTITIES, True, None, [1], "1e999999999"])
def test_what_is_not_a_quantity_is_refused(value: object) -> None:
    with pytest.raises(QuantityRefused):
        parse_quantity(value)


def test_problems_name_the_field_and_the_value() -> None:
    assert spec_problems({}) == []
    assert spec_problems({"storageSize": "10Gi", "backupStorageSize": 1073741824}) == []
    assert spec_problems({"storageSize": "-1Gi", "backupStorageSize": 0}) == [
        'spec.storageSize "-1Gi": must be greater than zero',
        "spec.backupStorageSize 0: must be greater than zero",
    ]
    assert size_problem({"storageSize": "ten gigs"}, "storageSize") == (
        'spec.storageSize "ten gigs": not a quantity (such as 1Gi, 500Mi or 2G)'
    )
    assert size_problem({"storageSize": "1e"}, "storageSize") == (
        'spec.storageSize "1e": unknown unit "e" (units: Ki, Mi, Gi, Ti, k, M, G, T...)'
    )


def test_an_unset_size_is_the_default_and_zero_is_not_unset() -> None:
    assert size({}, "storageSize") == "1Gi"
    assert size({"storageSize": None}, "storageSize") == "1Gi"
    assert size({"storageSize": 2147483648}, "storageSize") == "2147483648"
    assert size_problem({"storageSize": 0}, "storageSize") is not None


def test_the_crd_pattern_admits_what_the_operator_accepts() -> None:
    """The CRD (string form) and the operator's own check agree, and Go's regexp takes the
    pattern (the apiserver compiles it)."""
    assert re2_problem(POSITIVE_QUANTITY_PATTERN) is None
    pattern = re.compile(POSITIVE_QUANTITY_PATTERN)
    for value in POSITIVE:
        assert pattern.match(value), value
        assert size_bytes(value) > 0
    for value in [*NOT_POSITIVE, *NOT_QUANTITIES]:
        assert not pattern.match(value), value
        with pytest.raises(QuantityRefused):
            size_bytes(value)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({}, None),
        ({"heartbeatIntervalMs": 100, "electionTimeoutMs": 500}, None),
        ({"heartbeatIntervalMs": 100, "electionTimeoutMs": 499}, "at least 5 times"),
        ({"heartbeatIntervalMs": 300}, "electionTimeoutMs 1000 must be at least 5 times"),
        ({"autoCompactionMode": "revision", "autoCompactionRetention": "1000"}, None),
        ({"autoCompactionMode": "revision", "autoCompactionRetention": "1h"}, "revisions"),
        ({"autoCompactionRetention": "1h"}, None),
    ],
)
def test_options_etcd_would_refuse_at_start(options: dict, problem: str | None) -> None:
    found = spec_problems({"options": options})
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0] and found[0].startswith("spec.options")
