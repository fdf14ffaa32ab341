"""``catalog validate`` reduces a catalog file by file, in worker processes when it is big
(:mod:`olmtool.catalog.reduce`): the verdict must be the one validating the whole loaded
catalog gives, finding for finding, whichever way the files are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.catalog import reduce
from olmtool.catalog.load import load_catalog
from olmtool.catalog.validate import validate_catalog, validate_config

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir())
REPO_CATALOG = Path(__file__).resolve().parents[2] / "catalog"


def _whole(root: Path) -> list[tuple[object, ...]]:
    loaded = load_catalog(root)
    report = validate_config(loaded.config, load_findings=loaded.findings)
    return [_key(f) for f in report.findings]


def _key(finding: object) -> tuple[object, ...]:
    return tuple(
        getattr(finding, name)
        for name in ("check", "severity", "message", "file", "line", "package", "scope")
    )


def test_every_corpus_case_gets_the_whole_catalogs_verdict_in_one_process() -> None:
    for case in CASES:
        assert [_key(f) for f in validate_catalog(case).findings] == _whole(case), case.name


def test_worker_processes_give_the_same_findings_in_the_same_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reduce, "PARALLEL_FROM_BYTES", 0)
    for case in [*CASES[:: max(1, len(CASES) // 12)], REPO_CATALOG]:
        assert [_key(f) for f in validate_catalog(case).findings] == _whole(case), case.name


def test_small_catalogs_are_read_in_process_and_big_ones_by_workers(tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    small.write_text("{}")
    with reduce._mapper([small]) as mapper:
        assert mapper is map
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate(reduce.PARALLEL_FROM_BYTES)
    cpus = len(reduce.os.sched_getaffinity(0))
    with reduce._mapper([big]) as mapper:
        assert (mapper is map) == (cpus < 2)
