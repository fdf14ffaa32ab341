"""Checking CRD files on disk, with findings pointing at file and line."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from olmtool import yamlio
from olmtool.crd.structural import Severity, check_crd
from olmtool.errors import InputError, display_path

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Finding:
    """A violation located in a file: ``file:line: path: message``."""

    file: str
    line: int | None
    path: str
    message: str
    severity: Severity

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class LintResult:
    findings: list[Finding]
    crds_checked: int

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]


def check_crd_files(paths: Sequence[Path]) -> LintResult:
    """Check every CustomResourceDefinition in the given files and directories."""
    findings: list[Finding] = []
    checked = 0
    for file, explicit in _manifest_files(paths):
        documents = yamlio.load_all(file)
        crds = [
            d
            for d in documents
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        ]
        if explicit and not crds:
            findings.append(
                Finding(
                    display_path(file),
                    1,
                    "kind",
                    "no CustomResourceDefinition in this file",
                    "error",
                )
            )
        for crd in crds:
            checked += 1
            for violation in check_crd(crd):
                line = yamlio.line_at(crd, violation.path)
                findings.append(
                    Finding(
                        display_path(file),
                        line,
                        violation.path,
                        violation.message,
                        violation.severity,
                    )
                )
    return LintResult(findings, checked)


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
