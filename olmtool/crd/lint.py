"""Checking CRD files on disk, with findings pointing at file and line."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool import yamlread
from olmtool.crd.structural import check_crd
from olmtool.errors import InputError, display_path
from olmtool.findings import Finding, Findings

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
CHECK = "crd/schema"  # the name bundle validation gives the same checks


@dataclass
class LintResult(Findings):
    """The findings of :func:`check_crd_files` and how many CRDs they cover."""

    crds_checked: int = 0


def check_crd_files(paths: Sequence[Path]) -> LintResult:
    """Check every CustomResourceDefinition in the given files and directories."""
    result = LintResult()
    for file, explicit in _manifest_files(paths):
        where = display_path(file)
        source = yamlread.read(file)
        crds = [
            (index, d)
            for index, d in enumerate(source.documents)
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        ]
        if explicit and not crds:
            result.findings.append(
                Finding(
                    CHECK, "error", "no CustomResourceDefinition in this file", where, 1, "kind"
                )
            )
        for index, crd in crds:
            result.crds_checked += 1
            result.findings.extend(
                Finding(
                    CHECK,
                    violation.severity,
                    violation.message,
                    where,
                    source.line_at(index, violation.path),
                    violation.path,
                )
                for violation in check_crd(crd)
            )
    return result


def _manifest_files(paths: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix in MANIFEST_SUFFIXES:
                    yield child, False
        elif path.is_file():
            yield path, True
        else:
            raise InputError("no such file or directory", path=path)
