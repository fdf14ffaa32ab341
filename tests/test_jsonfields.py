"""``-o json`` keys: camelCase field names in declaration order, renames and values."""

from __future__ import annotations

import doctest
from dataclasses import dataclass

import olmtool.jsonfields
from olmtool.jsonfields import camel, json_fields


def test_the_module_example_holds() -> None:
    assert doctest.testmod(olmtool.jsonfields).failed == 0


@dataclass
class Status:
    name: str
    olm_crds: list[str]
    node_ready: bool
    docker_config: str | None = None


def test_fields_keep_their_order_under_camel_case_or_a_rename() -> None:
    status = Status("dev", ["a"], True)
    data = json_fields(status, rename={"olm_crds": "olmCRDs"}, node_ready="yes", passed=True)
    assert list(data) == ["name", "olmCRDs", "nodeReady", "dockerConfig", "passed"]
    assert data["nodeReady"] == "yes" and data["dockerConfig"] is None


def test_camel() -> None:
    assert [camel(n) for n in ("a", "install_seconds", "olm_crds")] == [
        "a",
        "installSeconds",
        "olmCrds",
    ]
