"""OLM v0 resolution of one namespace, on synthetic catalogs (no cluster).

Expected wording is OLM's (operator-lifecycle-manager ``pkg/controller/registry/resolver``:
``resolver.go``, ``installables.go``, ``cache/predicates.go``).
"""

from __future__ import annotations

import pytest

from olmtool.olm.resolver import (
    CONSTRAINTS_NOT_SATISFIABLE,
    ERROR_PREVENTED_RESOLUTION,
    CatalogSource,
    InstalledCSV,
    Resolution,
    Subscription,
    resolve_namespace,
)
from tests.olm.catalogs import chain, config, entry, model, package, source

ETCD = ("etcd.database.coreos.com", "v1beta2", "EtcdCluster")
VAULT_API = ("vault.security.coreos.com", "v1alpha1", "VaultService")


def sub(package: str = "op", **fields: str) -> Subscription:
    values = {"name": package, "package": package, "source": "cat", "source_namespace": "ns"}
    return Subscription(**{**values, **fields})


def ops_catalog() -> CatalogSource:
    """op: 0.1.1 -> 0.1.2 -> 0.1.3, each replacing the one before."""
    return source("cat", config(entry("0.1.1"), entry("0.1.2", "0.1.1"), entry("0.1.3", "0.1.2")))


def resolve(
    catalogs: list[CatalogSource],
    *subs: Subscription,
    installed: list[InstalledCSV] | None = None,
    apis=(),
) -> Resolution:
    return resolve_namespace("ns", catalogs, list(subs), installed or [], apis)


def next_name(resolution: Resolution, subscription: str = "op") -> str | None:
    assert resolution.failure is None, resolution.failure
    bundle = resolution.next_for(subscription)
    return bundle.name if bundle is not None else None


def upgrade(catalog: CatalogSource, installed: str, version: str, **fields: str) -> Resolution:
    current = InstalledCSV(installed, version=version, package="op")
    return resolve([catalog], sub(installed_csv=installed, **fields), installed=[current])


# --- fresh installs ---------------------------------------------------------------------------


def test_fresh_install_takes_the_channel_head() -> None:
    resolution = resolve([ops_catalog()], sub(channel="stable"))
    bundle = resolution.next_for("op")
    assert bundle is not None
    assert (bundle.name, bundle.channel, bundle.catalog, bundle.replaces) == (
        "op.v0.1.3",
        "stable",
        "cat",
        "",
    )
    assert bundle.identifier == "cat/ns/stable/op.v0.1.3"
    assert resolution.subscriptions[0].state == "UpgradePending"
    assert resolution.dependencies == []


def test_fresh_install_takes_the_starting_csv() -> None:
    assert next_name(resolve([ops_catalog()], sub(starting_csv="op.v0.1.1"))) == "op.v0.1.1"


def test_starting_csv_is_ignored_once_a_csv_is_installed() -> None:
    resolution = upgrade(ops_catalog(), "op.v0.1.1", "0.1.1", starting_csv="op.v0.1.1")
    assert next_name(resolution) == "op.v0.1.2"


def test_empty_channel_means_the_default_channel_first() -> None:
    cfg = package(
        "op",
        {"alpha": chain("op", "0.2.0", "0.3.0"), "stable": chain("op", "0.1.0", "0.2.0")},
        default="stable",
    )
    assert next_name(resolve([source("cat", cfg)], sub())) == "op.v0.2.0"
    assert next_name(resolve([source("cat", cfg)], sub(channel="alpha"))) == "op.v0.3.0"


# --- upgrades -------------------------------------------------------------------------------


def test_replaces_chain_upgrades_one_hop_per_resolution() -> None:
    catalog = ops_catalog()
    first = upgrade(catalog, "op.v0.1.1", "0.1.1").next_for("op")
    assert first is not None and (first.name, first.replaces) == ("op.v0.1.2", "op.v0.1.1")
    second = upgrade(catalog, "op.v0.1.2", "0.1.2").next_for("op")
    assert second is not None and (second.name, second.replaces) == ("op.v0.1.3", "op.v0.1.2")
    latest = upgrade(catalog, "op.v0.1.3", "0.1.3")
    assert next_name(latest) is None
    assert latest.subscriptions[0].state == "AtLatestKnown"
    assert latest.bundles == []


def test_skips_lead_straight_to_the_skipping_entry() -> None:
    catalog = source(
        "cat", config(entry("1.0.0"), entry("1.1.0"), entry("1.2.0", "1.0.0", skips=("1.1.0",)))
    )
    assert next_name(upgrade(catalog, "op.v1.1.0", "1.1.0")) == "op.v1.2.0"
    assert next_name(upgrade(catalog, "op.v1.0.0", "1.0.0")) == "op.v1.2.0"


def test_skip_range_jumps_to_the_head() -> None:
    catalog = source(
        "cat",
        config(
            entry("0.1.0"),
            entry("0.2.0", "0.1.0"),
            entry("0.3.0", "0.2.0", skip_range=">=0.1.0 <0.3.0"),
        ),
    )
    assert next_name(upgrade(catalog, "op.v0.1.0", "0.1.0")) == "op.v0.3.0"


def test_nearest_to_head_wins_among_several_candidates() -> None:
    # 1.0.0 is replaced by 1.1.0 and inside 1.2.0's and 1.3.0's skipRanges: the head wins
    catalog = source(
        "cat",
        config(
            entry("1.0.0"),
            entry("1.1.0", "1.0.0"),
            entry("1.2.0", "1.1.0", skip_range="<1.2.0"),
            entry("1.3.0", "1.2.0", skip_range=">=1.0.0 <1.1.0"),
        ),
    )
    assert next_name(upgrade(catalog, "op.v1.0.0", "1.0.0")) == "op.v1.3.0"
    assert next_name(upgrade(catalog, "op.v1.1.0", "1.1.0")) == "op.v1.2.0"


def test_skip_range_needs_the_installed_version() -> None:
    catalog = source(
        "cat",
        config(
            entry("0.1.0"), entry("0.1.5", "0.1.0"), entry("0.2.0", "0.1.5", skip_range="<0.2.0")
        ),
    )
    # no spec.version on the CSV: taken from the catalog bundle of that name
    assert next_name(upgrade(catalog, "op.v0.1.0", "")) == "op.v0.2.0"
    # a CSV the catalog does not know, with a version in range
    assert next_name(upgrade(catalog, "op.v0.0.9-custom", "0.1.7")) == "op.v0.2.0"
    # neither: only replaces and skips count
    assert next_name(upgrade(catalog, "op.v0.1.0-custom", "")) is None


def test_installed_csv_not_in_the_namespace_is_a_fresh_install() -> None:
    resolution = resolve([ops_catalog()], sub(installed_csv="op.v0.1.1"))
    bundle = resolution.next_for("op")
    assert bundle is not None and (bundle.name, bundle.replaces) == ("op.v0.1.3", "")


# --- subscription failures ------------------------------------------------------------------


def failure_of(resolution: Resolution) -> tuple[str, str]:
    assert resolution.failure is not None
    assert resolution.bundles == []
    return resolution.failure.reason, resolution.failure.message


def test_missing_catalog() -> None:
    reason, message = failure_of(resolve([ops_catalog()], sub(source="other")))
    assert reason == CONSTRAINTS_NOT_SATISFIABLE
    assert message == (
        "constraints not satisfiable: no operators found from catalog other in namespace ns "
        "referenced by subscription op, subscription op exists"
    )


def test_catalog_in_another_namespace_is_invisible() -> None:
    elsewhere = source("cat", config(entry("1.0.0")), namespace="team-b")
    _, message = failure_of(resolve([elsewhere], sub(source_namespace="team-b")))
    assert "no operators found from catalog cat in namespace team-b" in message
    visible = source("cat", config(entry("1.0.0")), namespace="olm")
    assert next_name(resolve([visible], sub(source_namespace="olm"))) == "op.v1.0.0"


def test_missing_package() -> None:
    reason, message = failure_of(resolve([ops_catalog()], sub("etcd")))
    assert reason == CONSTRAINTS_NOT_SATISFIABLE
    assert message == (
        "constraints not satisfiable: no operators found in package etcd in the catalog "
        "referenced by subscription etcd, subscription etcd exists"
    )


def test_missing_channel() -> None:
    _, message = failure_of(resolve([ops_catalog()], sub(channel="beta")))
    assert message == (
        "constraints not satisfiable: no operators found in channel beta of package op in the "
        "catalog referenced by subscription op, subscription op exists"
    )


def test_missing_starting_csv() -> None:
    _, message = failure_of(
        resolve([ops_catalog()], sub(channel="stable", starting_csv="op.v9.9.9"))
    )
    assert message == (
        "constraints not satisfiable: no operators found with name op.v9.9.9 in channel stable "
        "of package op in the catalog referenced by subscription op, subscription op exists"
    )


def test_channel_with_two_replaces_chains_prevents_resolution() -> None:
    # skipRange-only links do not order a channel: two heads, two chains
    catalog = source("cat", config(entry("0.1.0"), entry("0.2.0", skip_range="<0.2.0")))
    reason, message = failure_of(resolve([catalog], sub()))
    assert reason == ERROR_PREVENTED_RESOLUTION
    assert message == (
        "a unique replacement chain within a channel is required to determine the relative order "
        'between channel entries, but 2 replacement chains were found in channel "stable" of '
        'package "op": op.v0.1.0, op.v0.2.0'
    )


# --- dependencies -----------------------------------------------------------------------------


def app(requires=(), requires_packages=(), versions=("1.0.0",)) -> CatalogSource:
    last = f"app.v{versions[-1]}"
    cfg = package(
        "app",
        {"stable": chain("app", *versions)},
        requires={last: list(requires)},
        requires_packages={last: list(requires_packages)},
    )
    return source("cat", cfg)


def etcd_package(*versions: str) -> object:
    return package(
        "etcd",
        {"stable": chain("etcd", *versions)},
        provides={f"etcd.v{v}": [ETCD] for v in versions},
    )


def test_gvk_dependency_satisfied_by_an_installed_csv() -> None:
    installed = [InstalledCSV("etcd.v0.9.0", "0.9.0", "etcd", provides=(ETCD,))]
    resolution = resolve([app(requires=[ETCD])], sub("app"), installed=installed)
    assert next_name(resolution, "app") == "app.v1.0.0"
    assert resolution.dependencies == []


def test_gvk_dependency_satisfied_by_an_existing_api() -> None:
    resolution = resolve([app(requires=[ETCD])], sub("app"), apis=[ETCD])
    assert next_name(resolution, "app") == "app.v1.0.0"
    assert resolution.dependencies == []


def test_gvk_dependency_pulled_from_the_same_catalog_first() -> None:
    own = CatalogSource(
        "cat",
        "ns",
        model(
            package("app", {"stable": chain("app", "1.0.0")}, requires={"app.v1.0.0": [ETCD]}),
            etcd_package("0.8.0", "0.9.0"),
        ),
    )
    rich = source("rich", etcd_package("1.0.0"), priority=100)
    resolution = resolve([rich, own], sub("app"))
    (dependency,) = resolution.dependencies
    assert (dependency.name, dependency.catalog, dependency.required_by) == (
        "etcd.v0.9.0",
        "cat",
        ["app.v1.0.0"],
    )
    assert dependency.subscription == "" and dependency.replaces == ""


def test_gvk_dependency_from_other_catalogs_by_priority() -> None:
    low = source("a-low", etcd_package("0.9.0"), priority=-1)
    high = source("z-high", etcd_package("0.8.0"), priority=10)
    same = source("m-same", etcd_package("0.7.0"))
    resolution = resolve([low, app(requires=[ETCD]), same, high], sub("app"))
    (dependency,) = resolution.dependencies
    assert (dependency.name, dependency.catalog) == ("etcd.v0.8.0", "z-high")
    assert [b.name for b in resolution.bundles] == ["app.v1.0.0", "etcd.v0.8.0"]


def test_gvk_dependency_prefers_the_default_channel_head() -> None:
    cfg = package(
        "etcd",
        {"alpha": chain("etcd", "0.9.0", "1.0.0"), "stable": chain("etcd", "0.8.0", "0.9.0")},
        default="stable",
        provides={f"etcd.v{v}": [ETCD] for v in ("0.8.0", "0.9.0", "1.0.0")},
    )
    resolution = resolve([app(requires=[ETCD]), source("deps", cfg)], sub("app"))
    (dependency,) = resolution.dependencies
    assert (dependency.name, dependency.channel) == ("etcd.v0.9.0", "stable")


def test_unsatisfiable_gvk_dependency() -> None:
    reason, message = failure_of(resolve([app(requires=[VAULT_API])], sub("app")))
    assert reason == CONSTRAINTS_NOT_SATISFIABLE
    assert message == (
        "constraints not satisfiable: subscription app requires cat/ns/stable/app.v1.0.0, "
        "subscription app exists, bundle app.v1.0.0 requires an operator providing an API with "
        "group: vault.security.coreos.com, version: v1alpha1, kind: VaultService"
    )


def test_head_with_unmet_dependency_falls_back_to_an_older_entry() -> None:
    # the solver takes the first candidate whose constraints hold: the head needs an API
    # nobody provides, 1.0.0 does not
    resolution = resolve([app(requires=[VAULT_API], versions=("1.0.0", "1.1.0"))], sub("app"))
    assert next_name(resolution, "app") == "app.v1.0.0"


def test_upgrade_with_unmet_dependency_stays_at_the_installed_csv() -> None:
    catalog = app(requires=[VAULT_API], versions=("1.0.0", "1.1.0"))
    installed = [InstalledCSV("app.v1.0.0", "1.0.0", "app")]
    resolution = resolve([catalog], sub("app", installed_csv="app.v1.0.0"), installed=installed)
    assert next_name(resolution, "app") is None
    assert resolution.subscriptions[0].state == "AtLatestKnown"


def test_package_dependency_with_a_version_range() -> None:
    catalog = CatalogSource(
        "cat",
        "ns",
        model(
            package(
                "app",
                {"stable": chain("app", "1.0.0")},
                requires_packages={"app.v1.0.0": [("etcd", ">=0.8.0 <0.9.0")]},
            ),
            etcd_package("0.7.0", "0.8.0", "0.8.5", "0.9.0"),
        ),
    )
    resolution = resolve([catalog], sub("app"))
    (dependency,) = resolution.dependencies
    assert dependency.name == "etcd.v0.8.5"  # nearest the head inside the range


def test_package_dependency_satisfied_by_an_installed_csv() -> None:
    installed = [InstalledCSV("etcd.v0.8.0", "0.8.0", "etcd")]
    resolution = resolve(
        [app(requires_packages=[("etcd", ">=0.8.0")])], sub("app"), installed=installed
    )
    assert next_name(resolution, "app") == "app.v1.0.0"
    assert resolution.dependencies == []


def test_unsatisfiable_package_dependency() -> None:
    installed = [InstalledCSV("etcd.v0.7.0", "0.7.0", "etcd")]
    catalog = CatalogSource(
        "cat",
        "ns",
        model(
            package(
                "app",
                {"stable": chain("app", "1.0.0")},
                requires_packages={"app.v1.0.0": [("etcd", ">=0.8.0")]},
            ),
            etcd_package("0.7.0", "0.8.0"),
        ),
    )
    # etcd 0.8.0 would satisfy it, but etcd 0.7.0 is installed (one operator per package)
    _, message = failure_of(resolve([catalog], sub("app"), installed=installed))
    assert message.endswith(
        "bundle app.v1.0.0 requires an operator with package: etcd and with version in range: >=0.8.0"
    )


def test_transitive_dependencies_are_pulled_in() -> None:
    etcd = package(
        "etcd",
        {"stable": chain("etcd", "0.9.0")},
        provides={"etcd.v0.9.0": [ETCD]},
        requires={"etcd.v0.9.0": [VAULT_API]},
    )
    vault = package(
        "vault", {"stable": chain("vault", "1.0.0")}, provides={"vault.v1.0.0": [VAULT_API]}
    )
    resolution = resolve([app(requires=[ETCD]), source("deps", etcd, vault)], sub("app"))
    assert [(b.name, b.required_by) for b in resolution.dependencies] == [
        ("etcd.v0.9.0", ["app.v1.0.0"]),
        ("vault.v1.0.0", ["etcd.v0.9.0"]),
    ]


def test_two_subscriptions_share_a_dependency() -> None:
    cfg = package(
        "other",
        {"stable": chain("other", "2.0.0")},
        requires={"other.v2.0.0": [ETCD]},
    )
    resolution = resolve(
        [app(requires=[ETCD]), source("more", cfg), source("deps", etcd_package("0.9.0"))],
        sub("app"),
        sub("other", source="more"),
    )
    assert [b.name for b in resolution.bundles] == ["app.v1.0.0", "other.v2.0.0", "etcd.v0.9.0"]


def test_as_dict_is_plain_data() -> None:
    data = resolve([ops_catalog()], sub()).as_dict()
    assert data["ok"] is True and data["failure"] is None
    assert data["subscriptions"][0]["bundle"]["name"] == "op.v0.1.3"
    failed = resolve([ops_catalog()], sub(channel="beta")).as_dict()
    assert failed["failure"]["reason"] == CONSTRAINTS_NOT_SATISFIABLE
    assert failed["failure"]["messages"][1] == "subscription op exists"


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ("0.1.0", "etcd-operator.v0.5.0"),
        ("0.2.0", "etcd-operator.v0.5.0"),
        ("0.3.0", "etcd-operator.v0.5.0"),
        ("0.4.0", "etcd-operator.v0.5.0"),
        ("0.5.0", None),
    ],
)
def test_repository_catalog_upgrades(installed: str, expected: str | None) -> None:
    from olmtool.catalog import load_catalog_strict
    from olmtool.catalog.model import build_model
    from tests.catalog.test_graph import REPO

    catalog = CatalogSource("cat", "ns", build_model(load_catalog_strict(REPO / "catalog")))
    name = f"etcd-operator.v{installed}"
    current = InstalledCSV(name, installed, "etcd-operator")
    resolution = resolve([catalog], sub("etcd-operator", installed_csv=name), installed=[current])
    assert next_name(resolution, "etcd-operator") == expected
