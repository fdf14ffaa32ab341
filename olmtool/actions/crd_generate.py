"""``crd generate``: a CRD per ``CustomResource`` declared in Python schemas.

>>> result = crd_generate(["api.py"], output_dir=Path("config/crd"))
>>> result.written
[PosixPath('config/crd/etcd.example.com_etcdclusters.yaml')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool.actions._project import project_section
from olmtool.crd import GeneratedFile, generate_crds, load_resources, sync_files
from olmtool.errors import display_path
from olmtool.fsutil import TreeDiff

DEFAULT_OUTPUT = Path("config/crd")


@dataclass
class CrdGenerateResult:
    output_dir: Path
    files: list[GeneratedFile]
    difference: TreeDiff
    check: bool

    @property
    def written(self) -> list[Path]:
        """Files written (or, with ``check``, stale), in generation order."""
        stale = {*self.difference.added, *self.difference.modified}
        return [self.output_dir / f.name for f in self.files if f.name in stale]

    @property
    def unchanged(self) -> list[Path]:
        return [self.output_dir / name for name in self.difference.unchanged]

    @property
    def removed(self) -> list[Path]:
        return [self.output_dir / name for name in self.difference.removed]

    @property
    def failed(self) -> bool:
        """Only a ``check`` fails, when the files on disk are stale."""
        return self.check and self.difference.stale

    def as_dict(self) -> dict[str, object]:
        return {
            "outputDir": display_path(self.output_dir),
            "check": self.check,
            "stale": self.difference.stale,
            "written": [display_path(p) for p in self.written],
            "unchanged": [display_path(p) for p in self.unchanged],
            "removed": [display_path(p) for p in self.removed],
        }


@dataclass(frozen=True)
class _Inputs:
    modules: list[str]
    search_path: list[Path]
    base_dir: Path
    output_dir: Path


def crd_generate(
    sources: Sequence[str] = (),
    *,
    paths: Sequence[Path] = (),
    output_dir: Path | None = None,
    config: Path | None = None,
    check: bool = False,
) -> CrdGenerateResult:
    """Import ``sources`` (modules or .py files; none: the project's ``crd:`` section),
    render their CRDs and sync ``output_dir`` (or, with ``check``, only compare)."""
    inputs = _inputs(sources, paths, output_dir, config)
    resources = load_resources(
        inputs.modules, search_path=inputs.search_path, base_dir=inputs.base_dir
    )
    files = generate_crds(resources)
    difference = sync_files(files, inputs.output_dir, check=check)
    return CrdGenerateResult(inputs.output_dir, files, difference, check)


def _inputs(
    sources: Sequence[str], paths: Sequence[Path], output_dir: Path | None, config: Path | None
) -> _Inputs:
    """Modules, import path, base directory and output directory, from the arguments or
    the project file."""
    if sources:
        cwd = Path.cwd()
        return _Inputs(list(sources), [*paths, cwd], cwd, output_dir or DEFAULT_OUTPUT)
    project, settings = project_section(config, "crd")
    search = [*paths, *(project.path(p) for p in settings.paths)]
    return _Inputs(
        settings.modules, search, project.root, output_dir or project.path(settings.output)
    )
