"""A catalog reduced, file by file, to what validation keeps of it.

Validation needs each bundle whole only while it is inspected; the model keeps a lean
record of it. So each file is read, parsed, decoded and its bundles inspected and
reduced on its own, and only the reductions (a few hundred bytes per bundle) meet in
the :class:`~olmtool.catalog.model.ModelBuilder`: the catalog's bundle objects, most of
its bytes, are never all in memory. Files are independent, so on a big catalog worker
processes reduce them in parallel (forked: the work is CPU-bound Python), and the
results are merged in walk order, exactly as one process would.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from olmtool.catalog import declcfg as dc
from olmtool.catalog.bundle_checks import inspect_bundle
from olmtool.catalog.load import load_file, walk_catalog
from olmtool.catalog.model import Bundle, ModelBuilder, ResolvedCatalog, lean_bundle
from olmtool.findings import Finding

PARALLEL_FROM_BYTES = 32 * 1024 * 1024  # below, forking workers costs more than it saves
MAX_WORKERS = 4
Task = tuple[Path, Path | None]  # a file and the catalog directory it must be inside


@dataclass
class ReducedFile:
    """One file: its load findings, its bundles as (lean record, inspection findings),
    and its other blobs whole (packages, channels and deprecations are small)."""

    findings: list[Finding]
    bundles: list[tuple[Bundle, list[Finding]]]
    rest: dc.DeclarativeConfig
    named: bool  # whether any blob names a package


@dataclass
class ReducedCatalog:
    catalog: ResolvedCatalog
    load_findings: list[Finding] = field(default_factory=list)
    named: bool = False  # some blob names a package: the catalog is not empty


def reduce_file(path: Path, inside: Path | None) -> ReducedFile:
    loaded = load_file(path, inside)
    config = loaded.config
    bundles = []
    for bundle in config.bundles:
        record = lean_bundle(bundle)
        found, record.csv_replaces = inspect_bundle(bundle, record)
        bundles.append((record, found))
    named = bool(config.package_names())
    config.bundles = []
    return ReducedFile(loaded.findings, bundles, config, named)


def _reduce_task(task: Task) -> ReducedFile:
    return reduce_file(*task)


def reduce_catalog(root: Path) -> ReducedCatalog:
    """The catalog below ``root`` resolved from its files' reductions."""
    files, problems = walk_catalog(root)
    inside = root if root.is_dir() else None
    builder = ModelBuilder()
    reduced = ReducedCatalog(builder.catalog, list(problems))
    rest = dc.DeclarativeConfig()
    with _mapper(files) as mapper:
        for file in mapper(_reduce_task, [(path, inside) for path in files]):
            reduced.load_findings += file.findings
            reduced.named = reduced.named or file.named
            for record, found in file.bundles:
                builder.add_record(record, found)
            rest.packages += file.rest.packages
            rest.channels += file.rest.channels
            rest.deprecations += file.rest.deprecations
    builder.add_config(rest)
    reduced.catalog = builder.finish()
    return reduced


Mapper = Callable[
    [Callable[[tuple[Path, Path | None]], ReducedFile], Iterable[tuple[Path, Path | None]]],
    Iterator[ReducedFile],
]


@contextmanager
def _mapper(files: list[Path]) -> Iterator[Mapper]:
    """``map`` in this process, or over forked workers when the catalog is big enough
    for them to pay and there is more than one CPU; results come in the files' order."""
    workers = min(len(os.sched_getaffinity(0)), MAX_WORKERS)
    if workers < 2 or _size(files) < PARALLEL_FROM_BYTES:
        yield map
        return
    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        yield lambda function, tasks: pool.map(function, tasks, chunksize=4)


def _size(files: list[Path]) -> int:
    total = 0
    for path in files:
        with suppress(OSError):  # reading it will say what is wrong
            total += path.stat().st_size
    return total
