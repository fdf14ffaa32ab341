"""The ``operators.coreos.com`` CRDs as files: rendered from :mod:`olmtool.olm.api` by
olmtool's own CRD generator, shipped as package data in ``olmtool/olm/crds/``.

Regenerate after changing a schema (``--check`` only reports stale files, exit code 1)::

    python -m olmtool.olm.crdfiles [--check]
"""

from __future__ import annotations

import argparse
from functools import cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from olmtool import yamlread

if TYPE_CHECKING:
    from olmtool.crd import GeneratedFile, LoadedResource
    from olmtool.fsutil import TreeDiff

CRD_DIR = Path(__file__).resolve().parent / "crds"


def render_olm_crds() -> list[GeneratedFile]:
    """Every OLM CRD file, rendered in memory (refused if the apiserver would reject it)."""
    # Imported here: loading the packaged files (cluster up) needs neither pydantic nor
    # the schemas, which take a good part of a second to import.
    from olmtool.crd import render_crd
    from olmtool.olm import api

    return [render_crd(_loaded(api, resource)) for resource in api.RESOURCES]


def _loaded(api: ModuleType, resource: Any) -> LoadedResource:
    """The declaration named like a project's (``module:attribute``) in the file header."""
    from olmtool.crd import LoadedResource

    (name,) = [name for name, value in vars(api).items() if value is resource]
    return LoadedResource(resource, f"{api.__name__}:{name}")


def sync_olm_crds(output_dir: Path = CRD_DIR, *, check: bool = False) -> TreeDiff:
    """Write the rendered CRDs into ``output_dir`` (or, with ``check``, only diff them)."""
    from olmtool.crd import sync_files

    output_dir.mkdir(parents=True, exist_ok=True)
    return sync_files(render_olm_crds(), output_dir, check=check)


@cache
def _packaged_texts() -> tuple[str, ...]:
    folder = resources.files("olmtool.olm") / "crds"
    names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".yaml"))
    return tuple((folder / name).read_text(encoding="utf-8") for name in names)


def olm_crds() -> list[dict[str, Any]]:
    """The packaged CRD manifests (fresh dicts each call), in CRD-name order."""
    return [yamlread.load(text) for text in _packaged_texts()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m olmtool.olm.crdfiles")
    parser.add_argument("--check", action="store_true", help="report stale files, write none")
    parser.add_argument("--output", type=Path, default=CRD_DIR)
    args = parser.parse_args(argv)
    diff = sync_olm_crds(args.output, check=args.check)
    stale = [*diff.added, *diff.modified, *diff.removed]
    for name in stale:
        print(f"{'stale' if args.check else 'wrote'}: {name}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
