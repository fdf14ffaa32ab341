"""The indexed upgrade edges (``VersionIndex``: bisection, one match per distinct skipRange)
against the naive definition (every skipRange tested against every entry), on seeded
random channels: versions with prereleases and build metadata, entries without a version
or named twice, ranges with every operator, wildcards, ``||`` and parse errors."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
import semver

from olmtool.catalog.model import Edge, entry_edges
from olmtool.versions import VersionIndex, parse_range, parse_version

SEED = 15
CASES = 300


@dataclass(frozen=True)
class E:
    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""


def naive_edges(entries: list[E], versions: dict[str, semver.Version]) -> list[Edge]:
    """What ``entry_edges`` computed before the index: the definition."""
    entry_versions = [(e.name, versions.get(e.name)) for e in entries]
    edges: list[Edge] = []
    seen: set[tuple[str, str, str]] = set()

    def add(edge: Edge) -> None:
        key = (edge.from_, edge.to, edge.kind)
        if key not in seen and edge.from_ != edge.to:
            seen.add(key)
            edges.append(edge)

    for entry in entries:
        if entry.replaces:
            add(Edge(entry.replaces, entry.name, "replace"))
        for skipped in entry.skips:
            if skipped:
                add(Edge(skipped, entry.name, "skip"))
        if entry.skip_range:
            try:
                skip_range = parse_range(entry.skip_range)
            except ValueError:
                continue
            for name, version in entry_versions:
                if version is not None and skip_range.contains(version):
                    add(Edge(name, entry.name, "skipRange", entry.skip_range))
    return edges


PRERELEASES = ["alpha", "alpha.1", "beta", "beta.2", "rc.1", "1", "2", "0.3.x"]


def random_version(rng: random.Random) -> str:
    text = f"{rng.randint(0, 3)}.{rng.randint(0, 3)}.{rng.randint(0, 3)}"
    if rng.random() < 0.25:
        text += "-" + rng.choice(PRERELEASES)
    if rng.random() < 0.1:
        text += "+build." + str(rng.randint(1, 9))
    return text


def random_comparison(rng: random.Random) -> str:
    op = rng.choice([">=", ">", "<", "<=", "=", "==", "!=", "!", "", ">= "])
    roll = rng.random()
    if roll < 0.15:
        version = rng.choice(["1.x", "2.1.x", "0.x.x", "x", "1.2.x"])
    elif roll < 0.2:
        version = rng.choice(["1.0", "01.2.3", "1.2.3-", "a.b.c"])  # parse errors
    else:
        version = random_version(rng).split("+")[0]
    return op + version


def random_range(rng: random.Random) -> str:
    alternatives = [
        " ".join(random_comparison(rng) for _ in range(rng.randint(1, 3)))
        for _ in range(rng.choice([1, 1, 1, 2, 3]))
    ]
    text = " || ".join(alternatives)
    if rng.random() < 0.03:
        text = rng.choice(["||", "foo", ">=1.0.0 ||", "1"])
    return text


def random_channel(rng: random.Random) -> tuple[list[E], dict[str, semver.Version]]:
    count = rng.randint(0, 40)
    names = [f"op.v{i}" for i in range(count)]
    versions: dict[str, semver.Version] = {}
    for name in names:
        if rng.random() < 0.9:
            versions[name] = parse_version(random_version(rng))
    pool = [random_range(rng) for _ in range(rng.randint(1, 8))]  # shared range texts
    entries = []
    for i, name in enumerate(names):
        if i and rng.random() < 0.05:
            name = rng.choice(names[:i])  # an entry named twice
        replaces = rng.choice(names[:i]) if i and rng.random() < 0.7 else ""
        skips = tuple(rng.choice([*names, "", "missing"]) for _ in range(rng.randint(0, 2)))
        skip_range = rng.choice(pool) if rng.random() < 0.6 else ""
        entries.append(E(name, replaces, skips if count else (), skip_range))
    return entries, versions


@pytest.mark.parametrize("case", range(CASES))
def test_indexed_edges_are_the_naive_edges(case: int) -> None:
    rng = random.Random(f"{SEED}/{case}")
    entries, versions = random_channel(rng)
    assert entry_edges(entries, versions) == naive_edges(entries, versions)


def test_version_index_matches_range_contains() -> None:
    rng = random.Random(SEED)
    for _ in range(200):
        raw = [
            parse_version(random_version(rng)) if rng.random() < 0.9 else None for _ in range(30)
        ]
        index = VersionIndex(raw)
        for _ in range(10):
            try:
                version_range = parse_range(random_range(rng))
            except ValueError:
                continue
            expected = [i for i, v in enumerate(raw) if v is not None and version_range.contains(v)]
            assert index.matching(version_range) == expected
            assert index.any_match(version_range) == bool(expected)


def test_one_distinct_range_is_matched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    original = VersionIndex.matching

    def counting(self: VersionIndex, version_range: object) -> list[int]:
        calls["n"] += 1
        return original(self, version_range)  # type: ignore[arg-type]

    monkeypatch.setattr(VersionIndex, "matching", counting)
    entries = [E(f"op.v1.0.{i}", skip_range=">=1.0.0 <1.0.5") for i in range(50)]
    versions = {e.name: parse_version(e.name.removeprefix("op.v")) for e in entries}
    edges = entry_edges(entries, versions)
    assert calls["n"] == 1
    assert len(edges) == 5 * 50 - 5  # every entry skips 1.0.0-1.0.4 (not itself)
