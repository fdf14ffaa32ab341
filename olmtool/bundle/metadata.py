"""What a build does with the ``metadata/`` files already in the bundle directory.

A build rewrites the whole bundle directory, and says so for every file: ``wrote``,
``removed`` (a file of the previous bundle that olmtool no longer writes, listed by the
``TreeDiff``) and the two cases decided here:

- **kept**: a file in ``metadata/`` that olmtool does not own (a hand-added README, a
  vendor's metadata file) is carried into the new bundle unchanged. olmtool owns
  ``annotations.yaml``, and ``dependencies.yaml`` / ``properties.yaml`` when it writes
  them or when an earlier build wrote them (they carry :data:`GENERATED_MARK`).
- **replaced**: a hand-written ``dependencies.yaml`` / ``properties.yaml`` (no mark) is
  replaced when ``bundle.dependencies`` / ``bundle.properties`` now generate it.

opm reads *every* file of ``metadata/`` and takes the first (by name) with a
``dependencies`` list and the first with a ``properties`` list, so a kept file declaring
what olmtool now writes would silently win or lose: the build refuses it instead.
Files that are not UTF-8 text, or not regular files, cannot be carried faithfully and are
refused too (move them out of the bundle directory).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmtool import yamlread
from olmtool.bundle import format as fmt
from olmtool.bundle.dependencies import DEPENDENCIES_FILE, GENERATED_MARK, PROPERTIES_FILE
from olmtool.errors import InputError
from olmtool.fsutil import is_staging
from olmtool.safefiles import read_regular

OWNED = (fmt.ANNOTATIONS_FILE, DEPENDENCIES_FILE, PROPERTIES_FILE)
_LIST_KEYS = {DEPENDENCIES_FILE: "dependencies", PROPERTIES_FILE: "properties"}


@dataclass
class CarriedOver:
    """Files of the previous bundle directory that the new one keeps or replaces."""

    kept: dict[str, str] = field(default_factory=dict)
    replaced: list[str] = field(default_factory=list)


def carry_over(directory: Path, files: dict[str, str]) -> CarriedOver:
    """Decide about the previous ``directory/metadata`` given the new ``files``."""
    result = CarriedOver()
    previous = directory / fmt.METADATA_DIR
    if not previous.is_dir():
        return result
    for path in sorted(previous.rglob("*")):
        relative = path.relative_to(directory).as_posix()
        if any(is_staging(part) for part in path.relative_to(directory).parts):
            continue
        if path.is_dir() and not path.is_symlink():
            continue
        if relative == fmt.ANNOTATIONS_FILE:
            continue
        text = _text(path, relative, directory)
        if relative in files:
            if relative in _LIST_KEYS and GENERATED_MARK not in text:
                result.replaced.append(relative)
            continue
        if relative in _LIST_KEYS and GENERATED_MARK in text:
            continue  # written by an earlier build from settings now gone: removed
        _refuse_competitor(relative, text, files, path)
        result.kept[relative] = text
    return result


def _text(path: Path, relative: str, directory: Path) -> str:
    data = read_regular(path, root=directory)  # a FIFO, a link outside, a huge file: refused
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"{relative} is not UTF-8 text; olmtool keeps hand-added metadata text files "
            "only: move it out of the bundle directory",
            path=path,
        ) from None


def _refuse_competitor(relative: str, text: str, files: dict[str, str], path: Path) -> None:
    for generated, key in _LIST_KEYS.items():
        if generated in files and _declares(text, key):
            raise InputError(
                f"{relative} declares {key} too, and opm reads only the first metadata file "
                f"that does (by name): move them to bundle.{key} in olmtool.yaml, which "
                f"writes {generated}",
                path=path,
            )


def _declares(text: str, key: str) -> bool:
    """opm's reading: a mapping whose ``key`` (any case) is a non-empty list of items."""
    try:
        documents = yamlread.load_all(text)
    except InputError:
        return False  # opm skips what does not parse
    document: Any = documents[0] if documents else None
    if not isinstance(document, dict):
        return False
    value = next((v for k, v in document.items() if str(k).lower() == key), None)
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) for i in value)
