"""The static upgrade plan: OLM v0's hop-by-hop paths and the graph mistakes they reveal."""

from __future__ import annotations

import pytest

from olmtool.errors import ArgumentError
from olmtool.olm.resolver import UpgradePlan, upgrade_plan
from tests.catalog.test_graph import REPO
from tests.olm.catalogs import config, entry, model, package


def hops(plan: UpgradePlan) -> dict[str, tuple[str, list[str]]]:
    """op.v<x> -> (status, hops as versions)."""

    def short(name: str) -> str:
        return name.split(".v", 1)[1]

    return {short(p.bundle): (p.status, [short(h) for h in p.hops]) for p in plan.paths}


def kinds(plan: UpgradePlan) -> list[tuple[str, str]]:
    return [(p.kind, p.bundle) for p in plan.problems]


def test_repository_catalog_plan() -> None:
    plan = upgrade_plan(REPO / "catalog", "etcd-operator")
    assert (plan.channel, plan.head) == ("stable", "etcd-operator.v0.5.0")
    assert hops(plan) == {
        "0.5.0": ("at-head", []),
        "0.4.0": ("reaches-head", ["0.5.0"]),  # replaced by the head
        "0.3.0": ("reaches-head", ["0.5.0"]),
        "0.2.0": ("reaches-head", ["0.5.0"]),
        "0.1.0": ("reaches-head", ["0.5.0"]),  # the skipRange, one hop
    }
    assert plan.problems == [] and plan.passed
    data = plan.as_dict()
    assert data["paths"][4]["ends_at"] == "etcd-operator.v0.5.0" and data["passed"] is True


def test_replaces_chain_is_one_hop_at_a_time() -> None:
    plan = upgrade_plan(
        config(entry("0.1.1"), entry("0.1.2", "0.1.1"), entry("0.1.3", "0.1.2")), "op"
    )
    assert hops(plan)["0.1.1"] == ("reaches-head", ["0.1.2", "0.1.3"])
    assert plan.passed


def test_skipped_bundle_is_never_upgraded_to() -> None:
    # 1.2.0 replaces 1.1.0 and also skips it: OLM leaves 1.1.0 out of the channel order, so
    # 1.0.0 (which only 1.1.0 replaces) is stranded, though a graph walk would pass
    plan = upgrade_plan(
        config(entry("1.0.0"), entry("1.1.0", "1.0.0"), entry("1.2.0", "1.1.0", skips=("1.1.0",))),
        "op",
    )
    assert hops(plan)["1.0.0"] == ("stranded", [])
    assert hops(plan)["1.1.0"] == ("reaches-head", ["1.2.0"])
    assert kinds(plan) == [("stranded", "op.v1.0.0")]
    assert "never upgrades to op.v1.2.0" in plan.problems[0].message
    assert not plan.passed


def test_skipped_entries_still_upgrade_onward() -> None:
    # 1.1.0 is skipped by the head (off the chain) yet upgrades to it; 1.0.0 goes by 1.0.5
    cfg = config(
        entry("1.0.0"),
        entry("1.0.5", "1.0.0"),
        entry("1.1.0", skips=("1.0.0",)),
        entry("1.2.0", "1.0.5", skips=("1.1.0",)),
    )
    plan = upgrade_plan(cfg, "op")
    assert plan.head == "op.v1.2.0"
    assert hops(plan)["1.1.0"] == ("reaches-head", ["1.2.0"])
    assert hops(plan)["1.0.0"] == ("reaches-head", ["1.0.5", "1.2.0"])


def test_head_unreachable_and_stranded() -> None:
    # chain 2.0.0 -> 1.0.5 -> 1.0.0 (1.1.0, skipped by the head, is off it): from 1.0.0
    # OLM installs 1.0.5, whose only successor 1.1.0 is never offered
    cfg = config(
        entry("1.0.0"),
        entry("1.0.5", "1.0.0"),
        entry("1.1.0", "1.0.5"),
        entry("2.0.0", "1.1.0", skips=("1.1.0",)),
    )
    plan = upgrade_plan(cfg, "op")
    assert hops(plan)["1.0.0"] == ("stranded", ["1.0.5"])
    assert hops(plan)["1.0.5"] == ("stranded", [])
    assert hops(plan)["1.1.0"] == ("reaches-head", ["2.0.0"])
    assert kinds(plan) == [("stranded", "op.v1.0.5"), ("head-unreachable", "op.v1.0.0")]
    unreachable = plan.problems[1].message
    assert unreachable == "upgrades from op.v1.0.0 stop at op.v1.0.5, not the head op.v2.0.0"


def test_skip_range_downgrade_and_cycle() -> None:
    # 1.1.0's open-ended skipRange contains 1.2.0: OLM "upgrades" 1.2.0 back to 1.1.0, and
    # from there 1.2.0 replaces it again
    cfg = config(
        entry("1.0.0"), entry("1.1.0", "1.0.0", skip_range=">=1.0.0"), entry("1.2.0", "1.1.0")
    )
    plan = upgrade_plan(cfg, "op")
    assert plan.head == "op.v1.2.0"
    assert hops(plan)["1.2.0"] == ("at-head", [])
    assert ("skiprange-downgrade", "op.v1.1.0") in kinds(plan)
    assert ("skiprange-self", "op.v1.1.0") in kinds(plan)
    downgrade = next(p for p in plan.problems if p.kind == "skiprange-downgrade")
    assert "contains newer op.v1.2.0" in downgrade.message
    assert not plan.passed


def test_cycle_through_a_skip_range() -> None:
    # 1.1.0's skipRange contains 1.5.0 (a newer mid-chain entry): 1.5.0 -> 1.1.0 -> 1.5.0
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", "1.0.0", skip_range=">=1.5.0 <1.6.0"),
        entry("1.5.0", "1.1.0"),
        entry("2.0.0", "1.5.0"),
    )
    plan = upgrade_plan(cfg, "op")
    assert hops(plan)["1.5.0"] == ("reaches-head", ["2.0.0"])  # the head is nearer
    assert ("skiprange-downgrade", "op.v1.1.0") in kinds(plan)
    assert ("skiprange-unused", "op.v1.1.0") in kinds(plan)


def test_skip_range_matching_nothing_older_is_a_warning() -> None:
    cfg = config(entry("1.0.0"), entry("1.1.0", "1.0.0", skip_range=">=0.1.0 <0.5.0"))
    plan = upgrade_plan(cfg, "op")
    assert [(p.kind, p.severity) for p in plan.problems] == [("skiprange-unused", "warning")]
    assert plan.passed


def test_unorderable_channel() -> None:
    plan = upgrade_plan(config(entry("0.1.0"), entry("0.2.0", skip_range="<0.2.0")), "op")
    assert plan.head == ""
    assert kinds(plan)[0] == ("channel-order", "")
    assert "2 replacement chains" in plan.problems[0].message
    assert {p.status for p in plan.paths} == {"unresolvable"}


def test_default_and_named_channels_and_refusals() -> None:
    cfg = package(
        "op",
        {"alpha": [entry("0.2.0")], "stable": [entry("0.1.0")]},
        default="stable",
    )
    built = model(cfg)
    assert upgrade_plan(built, "op").channel == "stable"
    assert upgrade_plan(built, "op", "alpha").head == "op.v0.2.0"
    with pytest.raises(ArgumentError) as package_error:
        upgrade_plan(built, "nope")
    assert package_error.value.argument == "package"
    with pytest.raises(ArgumentError) as channel_error:
        upgrade_plan(built, "op", "beta")
    assert channel_error.value.argument == "channel"
