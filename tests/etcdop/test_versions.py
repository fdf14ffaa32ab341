"""Which etcd versions the operator runs and which changes it makes."""

from __future__ import annotations

import pytest
from etcd_operator.versions import VersionRefused, check_change, check_known


@pytest.mark.parametrize(
    ("current", "target"),
    [(None, "3.5.1"), ("3.4.23", "3.5.1"), ("3.5.1", "3.5.9"), ("3.5.1", "3.5.1")],
)
def test_allowed_changes(current: str | None, target: str) -> None:
    assert str(check_change(current, target)) == target


@pytest.mark.parametrize(
    ("current", "target", "message"),
    [
        ("3.5.1", "3.4.23", "downgrade from 3.5.1 to 3.4.23 is not supported"),
        ("3.5.1", "3.5.0", "downgrade"),
        (None, "3.5.99", "etcd 3.5.99 is not a known release"),
        (None, "3.6.0", "not a known release"),
        (None, "latest", "is not an etcd version"),
    ],
)
def test_refused_changes(current: str | None, target: str, message: str) -> None:
    with pytest.raises(VersionRefused, match=message):
        check_change(current, target)


def test_skipping_a_minor_version_is_refused() -> None:
    from etcd_operator import versions

    versions.LATEST_PATCH[(3, 6)] = 5
    try:
        with pytest.raises(VersionRefused, match=r"one minor version at a time: 3.4.23 -> 3.5.x"):
            check_change("3.4.23", "3.6.1")
    finally:
        del versions.LATEST_PATCH[(3, 6)]
    assert str(check_known("3.4.0")) == "3.4.0"
