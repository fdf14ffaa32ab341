"""``test upgrade``: can every version of a package reach the channel head through OLM v0?

>>> plan = upgrade_test("catalog", "etcd-operator")
>>> [(p.bundle, p.hops) for p in plan.paths]
[('etcd-operator.v0.3.0', []), ('etcd-operator.v0.2.0', ['etcd-operator.v0.3.0']), ...]

The static check: for each bundle of the channel, the hops OLM v0 takes to the head
(repeated resolution: replaces / skips / skipRange, nearest to the head first), with the
problems that strand users (unreachable head, stranded bundles, cycles, skipRange
mistakes). ``catalog`` is a catalog directory or a registry address (``host:port``).
Installing and upgrading for real, hop by hop, comes with the OLM engine.
"""

from __future__ import annotations

from pathlib import Path

from olmtool.catalog import load_catalog_strict
from olmtool.errors import ArgumentError
from olmtool.olm import UpgradePlan, fetch_config, is_registry_address, upgrade_plan


def upgrade_test(catalog: str | Path, package: str, channel: str | None = None) -> UpgradePlan:
    """The upgrade plan of ``package`` in ``channel`` (the default channel when None)."""
    text = str(catalog)
    if Path(text).is_dir():
        config = load_catalog_strict(Path(text))
    elif is_registry_address(text):
        config = fetch_config(text)
    else:
        raise ArgumentError(
            f'"{text}" is neither a catalog directory nor a registry address', argument="catalog"
        )
    return upgrade_plan(config, package, channel)
