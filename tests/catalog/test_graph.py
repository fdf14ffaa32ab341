"""``olmtool catalog graph``: upgrade edges, Mermaid as opm renders it, OLM's upgrade paths.

The model and views directly, the ``catalog_graph`` action in-process; the CLI tests at the
end check only the wiring (exit codes, formats, one-line errors).

``UPDATE_GOLDEN=1 pytest tests/catalog/test_graph.py`` rewrites graph/demo.mmd (and passes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from olmtool.actions import GraphView, catalog_graph
from olmtool.catalog import declcfg as dc
from olmtool.catalog.graph import mermaid, package_views, upgrade_paths
from olmtool.catalog.load import load_catalog_strict
from olmtool.catalog.model import Edge, distances_to_head, successors, upgrade_edges
from olmtool.errors import ArgumentError, InputError
from tests.catalog.test_cli_validate import cli
from tests.test_cli import olmtool

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent / "graph"
DEMO = HERE / "demo"
GOLDEN = HERE / "demo.mmd"


def entry(version: str, replaces: str = "", skips: tuple[str, ...] = (), skip_range: str = ""):
    """A channel entry of package ``op`` named ``op.v<version>``."""
    return dc.ChannelEntry(
        name=f"op.v{version}",
        replaces=f"op.v{replaces}" if replaces else "",
        skips=[f"op.v{s}" for s in skips],
        skip_range=skip_range,
    )


def config(*entries: dc.ChannelEntry, channel: str = "stable") -> dc.DeclarativeConfig:
    """Package ``op`` with one channel and a bundle per entry (version from the name)."""
    bundles = [
        dc.Bundle(
            name=e.name,
            package="op",
            image=f"example.com/op-bundle:{e.name}",
            properties=[
                dc.Property(
                    dc.PROP_PACKAGE, {"packageName": "op", "version": e.name.removeprefix("op.v")}
                )
            ],
        )
        for e in entries
    ]
    return dc.DeclarativeConfig(
        packages=[dc.Package("op", default_channel=channel)],
        channels=[dc.Channel(channel, "op", list(entries))],
        bundles=bundles,
    )


def paths_by_bundle(cfg: dc.DeclarativeConfig) -> dict[str, tuple[str, list[str], str]]:
    """op.v<x> -> (v0 status, v0 path as versions, v1 next as a version)."""

    def short(name: str) -> str:
        return name.removeprefix("op.v")

    return {
        short(p.bundle): (p.v0_status, [short(n) for n in p.v0_path], short(p.v1_next))
        for p in upgrade_paths(cfg)
    }


# --- model: edges and distances ---------------------------------------------------------------


def test_upgrade_edges_kinds_and_order() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("1.2.0", replaces="1.1.0", skips=("1.0.0",), skip_range=">=1.0.0 <1.3.0"),
        entry("1.3.0", replaces="1.2.0", skip_range="not a range"),
    )
    edges = upgrade_edges(cfg.channels[0], cfg.bundles)
    assert edges == [
        Edge("op.v1.0.0", "op.v1.1.0", "replace"),
        Edge("op.v1.1.0", "op.v1.2.0", "replace"),
        Edge("op.v1.0.0", "op.v1.2.0", "skip"),
        # the range also holds 1.2.0 itself: no self edge
        Edge("op.v1.0.0", "op.v1.2.0", "skipRange", ">=1.0.0 <1.3.0"),
        Edge("op.v1.1.0", "op.v1.2.0", "skipRange", ">=1.0.0 <1.3.0"),
        Edge("op.v1.2.0", "op.v1.3.0", "replace"),
    ]
    assert [(e.to, e.kind) for e in successors(edges, "op.v1.0.0")] == [
        ("op.v1.1.0", "replace"),
        ("op.v1.2.0", "skip"),
        ("op.v1.2.0", "skipRange"),
    ]
    assert distances_to_head(edges, "op.v1.3.0") == {
        "op.v1.3.0": 0,
        "op.v1.2.0": 1,
        "op.v1.1.0": 2,
        "op.v1.0.0": 2,
    }


def test_upgrade_edges_keep_a_tail_replacing_a_missing_bundle() -> None:
    cfg = config(entry("1.1.0", replaces="1.0.0"))
    assert upgrade_edges(cfg.channels[0], {b.name: b for b in cfg.bundles}) == [
        Edge("op.v1.0.0", "op.v1.1.0", "replace")
    ]


# --- upgrade paths ------------------------------------------------------------------------------


def test_linear_replaces_chain_is_one_hop_at_a_time() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("1.2.0", replaces="1.1.0"),
        entry("1.3.0", replaces="1.2.0"),
    )
    paths = paths_by_bundle(cfg)
    assert paths["1.0.0"] == ("reaches-head", ["1.1.0", "1.2.0", "1.3.0"], "1.1.0")
    assert paths["1.2.0"] == ("reaches-head", ["1.3.0"], "1.3.0")
    assert paths["1.3.0"] == ("at-head", [], "")
    first = upgrade_paths(cfg)[-1]
    assert (first.bundle, first.version, first.head, first.v0_hops) == (
        "op.v1.0.0",
        "1.0.0",
        "op.v1.3.0",
        3,
    )


def test_skip_range_on_the_head_makes_both_jump_straight_there() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("1.2.0", replaces="1.1.0"),
        entry("1.3.0", replaces="1.2.0", skip_range=">=1.0.0 <1.3.0"),
    )
    paths = paths_by_bundle(cfg)
    assert paths["1.0.0"] == ("reaches-head", ["1.3.0"], "1.3.0")
    assert paths["1.1.0"] == ("reaches-head", ["1.3.0"], "1.3.0")


def test_v0_hops_through_a_mid_chain_skip_range_while_v1_jumps_once() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("1.2.0", replaces="1.1.0"),
        entry("1.3.0", replaces="1.2.0", skip_range=">=1.0.0 <1.3.0"),
        entry("1.4.0", replaces="1.3.0"),
    )
    paths = paths_by_bundle(cfg)
    # v0: 1.3.0 (one edge from the head) beats 1.1.0 (three), then 1.4.0
    assert paths["1.0.0"] == ("reaches-head", ["1.3.0", "1.4.0"], "1.3.0")
    assert upgrade_paths(cfg)[-1].v0_hops == 2


def test_v0_prefers_nearest_head_where_v1_prefers_highest_version() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("1.5.0", skips=("1.0.0",)),
        entry("1.6.0", replaces="1.5.0"),
        entry("2.0.0", replaces="1.1.0", skips=("1.6.0",)),
    )
    paths = paths_by_bundle(cfg)
    assert paths["1.0.0"] == ("reaches-head", ["1.1.0", "2.0.0"], "1.5.0")
    assert paths["1.5.0"] == ("reaches-head", ["1.6.0", "2.0.0"], "1.6.0")


def test_skips_reach_the_head_directly() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("2.0.0", replaces="1.0.0", skips=("1.1.0",)),
    )
    paths = paths_by_bundle(cfg)
    assert paths["1.0.0"] == ("reaches-head", ["2.0.0"], "2.0.0")
    assert paths["1.1.0"] == ("reaches-head", ["2.0.0"], "2.0.0")


def test_equal_distance_to_head_goes_to_the_higher_version() -> None:
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("1.2.0", skips=("1.0.0",)),
        entry("2.0.0", replaces="1.1.0", skips=("1.2.0",)),
    )
    assert paths_by_bundle(cfg)["1.0.0"] == ("reaches-head", ["1.2.0", "2.0.0"], "1.2.0")


def test_a_stranded_bundle_is_stuck() -> None:
    # 1.1.0 is replaced by nothing: a second head; paths aim at the newest head, 2.0.0.
    cfg = config(
        entry("1.0.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("2.0.0"),
    )
    paths = paths_by_bundle(cfg)
    assert paths["1.0.0"] == ("stuck", ["1.1.0"], "1.1.0")
    assert paths["1.1.0"] == ("stuck", [], "")
    assert paths["2.0.0"] == ("at-head", [], "")
    assert {p.head for p in upgrade_paths(cfg)} == {"op.v2.0.0"}


def test_a_replaces_loop_is_reported_as_a_cycle() -> None:
    cfg = config(
        entry("1.0.0", replaces="1.1.0"),
        entry("1.1.0", replaces="1.0.0"),
        entry("2.0.0"),
    )
    paths = paths_by_bundle(cfg)
    assert paths["1.0.0"] == ("cycle", ["1.1.0"], "1.1.0")


def test_paths_of_the_demo_catalog_per_channel() -> None:
    paths = upgrade_paths(load_catalog_strict(DEMO), package="demo")
    assert [(p.channel, p.bundle) for p in paths] == [
        ("fast", "demo.v2.0.0"),
        ("fast", "demo.v1.3.0"),
        ("fast", "demo.v1.2.0"),
        ("stable", "demo.v1.3.0"),
        ("stable", "demo.v1.2.0"),
        ("stable", "demo.v1.1.0"),
        ("stable", "demo.v1.0.0"),
    ]
    stable_100 = paths[-1]
    assert (stable_100.v0_path, stable_100.v1_next) == (["demo.v1.3.0"], "demo.v1.3.0")


# --- Mermaid -------------------------------------------------------------------------------------


def test_mermaid_golden() -> None:
    text = mermaid(load_catalog_strict(DEMO))
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert GOLDEN.exists(), f"missing {GOLDEN}; run with UPDATE_GOLDEN=1"
    assert text == GOLDEN.read_text()


def test_mermaid_structure_follows_opm() -> None:
    text = mermaid(load_catalog_strict(DEMO))
    lines = text.splitlines()
    assert lines[0] == "graph LR"
    assert "  classDef deprecated fill:#E8960F" in lines
    assert '  subgraph "demo"' in lines
    assert '    subgraph demo-stable["stable"]' in lines
    assert (
        '      demo-stable-demo.v1.2.0["demo.v1.2.0"]-- replace --> '
        'demo-stable-demo.v1.3.0["demo.v1.3.0"]'
    ) in lines
    assert (
        '      demo-stable-demo.v1.1.0["demo.v1.1.0"]-- skip --> '
        'demo-stable-demo.v1.3.0["demo.v1.3.0"]'
    ) in lines
    assert (
        '      demo-stable-demo.v1.0.0["demo.v1.0.0"]-- "skipRange(>=1.0.0 <1.1.0)" --> '
        'demo-stable-demo.v1.3.0["demo.v1.3.0"]'
    ) in lines
    assert "style legacy fill:#989695" in lines
    assert "style legacy-alpha fill:#DCD0FF" in lines
    assert "class demo-fast-demo.v1.2.0 deprecatedskipped" in lines
    assert "class demo-stable-demo.v1.2.0 deprecated" in lines
    assert "class demo-stable-demo.v1.1.0 skipped" in lines
    # link 9 is stable's replace into 1.1.0, which 1.3.0 skips
    assert lines[-1] == "linkStyle 9 stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;"


def test_mermaid_is_deterministic_whatever_the_blob_order() -> None:
    cfg = load_catalog_strict(DEMO)
    shuffled = dc.DeclarativeConfig(
        packages=cfg.packages[::-1],
        channels=cfg.channels[::-1],
        bundles=cfg.bundles[::-1],
        deprecations=cfg.deprecations[::-1],
    )
    assert mermaid(shuffled) == mermaid(cfg)


def test_mermaid_package_filter() -> None:
    text = mermaid(load_catalog_strict(DEMO), package="legacy")
    assert '  subgraph "legacy"' in text
    assert "demo" not in text
    with pytest.raises(InputError, match='no package "nope"'):
        mermaid(load_catalog_strict(DEMO), package="nope")


def test_mermaid_minimum_version() -> None:
    cfg = load_catalog_strict(DEMO)
    text = mermaid(cfg, minimum_version="1.2.0")
    assert "demo.v1.1.0" not in text
    assert "demo.v1.0.0" not in text
    assert "legacy" not in text  # every legacy bundle is below 1.2.0
    assert (
        '      demo-stable-demo.v1.2.0["demo.v1.2.0"]-- replace --> '
        'demo-stable-demo.v1.3.0["demo.v1.3.0"]'
    ) in text.splitlines()
    # a version floor keeps other packages' bundles at or above it
    assert '      legacy-alpha-legacy.v0.2.0["legacy.v0.2.0"]' in mermaid(
        cfg, minimum_version="0.2.0"
    )
    # a bundle name (opm's --minimum-edge) also limits the graph to its package
    by_name = mermaid(cfg, minimum_version="legacy.v0.2.0")
    assert "demo" not in by_name
    assert "legacy.v0.1.0" not in by_name
    with pytest.raises(InputError, match="neither a semantic version nor a bundle"):
        mermaid(cfg, minimum_version="no.such.bundle")


# --- tree data ---------------------------------------------------------------------------------


def test_package_views_mark_default_head_and_deprecations() -> None:
    views = {v.name: v for v in package_views(load_catalog_strict(DEMO))}
    demo, legacy = views["demo"], views["legacy"]
    assert [c.name for c in demo.channels] == ["fast", "stable"]
    stable = demo.channels[1]
    assert (stable.default, stable.heads) == (True, ["demo.v1.3.0"])
    assert [e.version for e in stable.entries] == ["1.3.0", "1.2.0", "1.1.0", "1.0.0"]
    assert stable.entries[0].head and not stable.entries[1].head
    assert stable.entries[0].skips == ["demo.v1.1.0"]
    assert "loses data" in stable.entries[1].deprecated
    assert legacy.deprecated == "legacy is no longer maintained."
    assert legacy.channels[0].deprecated == "alpha has ended."


# --- the action -----------------------------------------------------------------------------


def test_tree_of_the_repository_catalog() -> None:
    graph = catalog_graph(REPO / "catalog")
    assert graph.view is GraphView.tree
    (package,) = graph.packages
    assert (package.name, package.default_channel) == ("etcd-operator", "stable")
    (stable,) = package.channels
    assert (stable.name, stable.default, stable.heads) == ("stable", True, ["etcd-operator.v0.5.0"])
    # newest first, with the edges of each entry
    assert [(e.name, e.version, e.head) for e in stable.entries] == [
        ("etcd-operator.v0.5.0", "0.5.0", True),
        ("etcd-operator.v0.4.0", "0.4.0", False),
        ("etcd-operator.v0.3.0", "0.3.0", False),
        ("etcd-operator.v0.2.0", "0.2.0", False),
        ("etcd-operator.v0.1.0", "0.1.0", False),
    ]
    head, fourth, third, middle, oldest = stable.entries
    assert (head.replaces, head.skip_range) == ("etcd-operator.v0.4.0", ">=0.1.0 <0.5.0")
    assert (fourth.replaces, fourth.skip_range) == ("etcd-operator.v0.3.0", ">=0.1.0 <0.4.0")
    assert (third.replaces, third.skip_range) == ("etcd-operator.v0.2.0", ">=0.1.0 <0.3.0")
    assert middle.replaces == "etcd-operator.v0.1.0"
    assert oldest.deprecated and not head.deprecated


def test_paths_of_the_repository_catalog() -> None:
    graph = catalog_graph(REPO / "catalog", view=GraphView.paths)
    rows = {row["bundle"]: row for row in (p.as_dict() for p in graph.paths)}
    assert set(rows) == {f"etcd-operator.v0.{n}.0" for n in (1, 2, 3, 4, 5)}
    oldest = rows["etcd-operator.v0.1.0"]
    assert oldest == {
        "package": "etcd-operator",
        "channel": "stable",
        "bundle": "etcd-operator.v0.1.0",
        "version": "0.1.0",
        "head": "etcd-operator.v0.5.0",
        "v0_status": "reaches-head",
        "v0_path": ["etcd-operator.v0.5.0"],  # the head's skipRange holds 0.1.0
        "v0_hops": 1,
        "v1_next": "etcd-operator.v0.5.0",
    }
    assert rows["etcd-operator.v0.3.0"]["v0_path"] == ["etcd-operator.v0.5.0"]  # skipRange
    assert rows["etcd-operator.v0.4.0"]["v0_path"] == ["etcd-operator.v0.5.0"]  # replaced
    assert rows["etcd-operator.v0.5.0"]["v0_status"] == "at-head"


def test_mermaid_and_paths_of_one_package() -> None:
    assert catalog_graph(DEMO, view=GraphView.mermaid).mermaid == GOLDEN.read_text()
    paths = catalog_graph(DEMO, view=GraphView.paths, package="demo").paths
    assert {p.package for p in paths} == {"demo"}
    stable = [p for p in paths if p.channel == "stable"]
    assert {p.head for p in stable} == {"demo.v1.3.0"}
    assert [p.bundle for p in stable if p.v0_status == "at-head"] == ["demo.v1.3.0"]
    legacy = catalog_graph(DEMO, view=GraphView.mermaid, package="legacy", minimum_version="0.2.0")
    assert "legacy.v0.1.0" not in legacy.mermaid and "demo" not in legacy.mermaid


def test_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "catalog.yaml").write_text("schema: olm.package\nname: [unclosed\n")
    with pytest.raises(InputError) as broken:
        catalog_graph(tmp_path)
    assert str(broken.value).startswith("catalog.yaml:")
    assert "\n" not in str(broken.value)
    with pytest.raises(InputError) as missing:
        catalog_graph("nope/")
    assert str(missing.value) == "nope: no such catalog directory"
    with pytest.raises(ArgumentError, match="needs the mermaid view") as floor:
        catalog_graph(DEMO, minimum_version="1.2.0")
    assert floor.value.argument == "minimum_version"


# --- the command: wiring only -----------------------------------------------------------------


def test_cli_tree_of_the_repository_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = cli("catalog", "graph", "catalog/")
    assert result.returncode == 0, result.exception
    out = result.stdout
    assert out.startswith("etcd-operator\n")
    assert "stable  (default)  head etcd-operator.v0.5.0" in out
    assert out.index("etcd-operator.v0.5.0  0.5.0  head") < out.index("etcd-operator.v0.4.0  0.4.0")
    assert out.index("etcd-operator.v0.4.0  0.4.0") < out.index("etcd-operator.v0.1.0  0.1.0")
    assert "replaces etcd-operator.v0.1.0" in out and "replaces etcd-operator.v0.3.0" in out
    assert "replaces etcd-operator.v0.4.0" in out
    assert "'>=0.1.0 <0.5.0'" in out and "'>=0.1.0 <0.4.0'" in out
    assert "deprecated:" in out


def test_cli_formats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    machine = cli("catalog", "graph", "catalog/", "--format", "paths", "-o", "json")
    assert machine.returncode == 0, machine.exception
    rows = json.loads(machine.stdout)
    assert {row["bundle"] for row in rows} == {f"etcd-operator.v0.{n}.0" for n in (1, 2, 3, 4, 5)}
    mmd = cli("catalog", "graph", str(DEMO), "-f", "mermaid")
    assert mmd.returncode == 0, mmd.exception
    assert mmd.stdout == GOLDEN.read_text()
    text = cli("catalog", "graph", str(DEMO), "-f", "paths", "-p", "demo")
    assert text.returncode == 0, text.exception
    assert "demo / stable  (head demo.v1.3.0)" in text.stdout
    assert "at head" in text.stdout
    assert "legacy" not in text.stdout


def test_cli_load_error_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "catalog.yaml").write_text("schema: olm.package\nname: [unclosed\n")
    broken = olmtool("catalog", "graph", str(tmp_path), cwd=tmp_path)
    assert broken.returncode == 1
    assert broken.stderr.startswith("error: catalog.yaml:")
    assert len(broken.stderr.strip().splitlines()) == 1
    assert "Traceback" not in broken.stderr


def test_cli_user_and_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = cli("catalog", "graph", "nope/")
    assert (missing.returncode, missing.error) == (1, "nope: no such catalog directory")
    assert cli("catalog", "graph", str(DEMO), "-o", "json").returncode == 2
    assert cli("catalog", "graph", str(DEMO), "--minimum-version", "1.2.0").returncode == 2


def test_cli_help_has_examples() -> None:
    result = cli("catalog", "graph", "--help")
    assert result.returncode == 0
    assert "olmtool catalog graph catalog/ --format mermaid > graph.mmd" in result.stdout
