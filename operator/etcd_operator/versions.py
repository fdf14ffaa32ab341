"""etcd versions the operator runs, and which version changes are safe.

etcd supports upgrading one minor version at a time (3.4 -> 3.5) with members of both
versions in one cluster during the roll, and does not support downgrades through member
restarts. Patch releases within a minor version are interchangeable. The known releases
are the real ones: a typo such as 3.5.99 is refused instead of pulled forever.
"""

from __future__ import annotations

from dataclasses import dataclass

# The newest patch release of each minor version the operator knows how to run.
LATEST_PATCH = {(3, 4): 37, (3, 5): 21}


@dataclass(frozen=True, order=True)
class EtcdVersion:
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def minor_line(self) -> tuple[int, int]:
        return (self.major, self.minor)


class VersionRefused(ValueError):
    """A spec.version the operator will not run or roll to (the message says why)."""


def parse(text: str) -> EtcdVersion:
    parts = text.strip().removeprefix("v").split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise VersionRefused(f'"{text}" is not an etcd version (MAJOR.MINOR.PATCH)')
    major, minor, patch = (int(p) for p in parts)
    return EtcdVersion(major, minor, patch)


def known(version: EtcdVersion) -> bool:
    latest = LATEST_PATCH.get(version.minor_line)
    return latest is not None and version.patch <= latest


def check_known(text: str) -> EtcdVersion:
    version = parse(text)
    if not known(version):
        lines = ", ".join(f"{a}.{b}.0-{a}.{b}.{p}" for (a, b), p in sorted(LATEST_PATCH.items()))
        raise VersionRefused(f"etcd {version} is not a known release (known: {lines})")
    return version


def check_change(current: str | None, target: str) -> EtcdVersion:
    """The target version if moving the cluster from ``current`` to it is safe, else
    :class:`VersionRefused`."""
    wanted = check_known(target)
    if current is None:
        return wanted
    running = parse(current)
    if wanted < running:
        raise VersionRefused(f"downgrade from {running} to {wanted} is not supported by etcd")
    if wanted.major != running.major or wanted.minor > running.minor + 1:
        step = f"{running.major}.{running.minor + 1}"
        raise VersionRefused(
            f"upgrade one minor version at a time: {running} -> {step}.x first, then {wanted}"
        )
    return wanted
