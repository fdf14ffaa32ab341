"""Whether ``bundle build`` may (re)write a release's bundle directory.

An older release rebuilt from today's inputs would silently ship today's CRDs. Two rules
stop that, for a release whose bundle directory exists and differs from its rendering:

1. a ``frozen`` release is never rewritten (its first build writes it; later builds
   compare and say "unchanged", or refuse when it would differ);
2. a release that is not the newest and takes the shared CRD folder (no ``crds:`` of its
   own) is refused when its bundle's CRDs differ from those: give it its own ``crds:``
   (copy its CRDs there) or freeze it. The newest release always takes the shared CRDs:
   that is where they are developed. Other differences (the CSV) are written.

A release without a bundle directory is written (a first build); the one-release form
has only the newest release, so it is always written as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from olmtool import yamlread
from olmtool.bundle import format as fmt
from olmtool.bundle.build import BuiltBundle
from olmtool.bundle.releases import ResolvedRelease
from olmtool.errors import InputError
from olmtool.fsutil import TreeDiff, diff_files, read_tree


@dataclass(frozen=True)
class RebuildCheck:
    """How a release's bundle on disk differs from its rendering, and why (if so) it must
    not be written."""

    difference: TreeDiff
    refused: str = ""


def check_rebuild(release: ResolvedRelease, bundle: BuiltBundle) -> RebuildCheck:
    """Compare ``bundle`` with its directory and apply the two rules above."""
    current = read_tree(bundle.directory)
    difference = diff_files(bundle.directory, bundle.files, current)
    if not bundle.directory.is_dir() or not difference.stale:
        return RebuildCheck(difference)
    if release.frozen:
        changed = ", ".join(difference.changed)
        return RebuildCheck(difference, f"frozen, differs ({changed}): not rewritten")
    if not release.newest and not release.own_crds:
        crds = [
            name
            for name in difference.changed
            if _is_crd(bundle.files.get(name)) or _is_crd(current.get(name))
        ]
        if crds:
            return RebuildCheck(
                difference,
                f"not the newest release, and its CRDs would change to the shared ones "
                f"({', '.join(crds)}): give it its own crds: folder, or freeze it",
            )
    return RebuildCheck(difference)


def _is_crd(text: str | None) -> bool:
    if not text or fmt.CRD_KIND not in text:
        return False
    try:
        documents = yamlread.parse(text).documents
    except InputError:
        return False
    return any(isinstance(d, dict) and d.get("kind") == fmt.CRD_KIND for d in documents)
