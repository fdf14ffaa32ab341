"""Install modes and catalog arguments of ``olmtool install`` (pure parts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.actions.install import classify_catalog
from olmtool.actions.upgrade_testing import catalog_kind
from olmtool.errors import ArgumentError
from olmtool.olm.subscription import InstallMode, SubscriptionSpec


@pytest.mark.parametrize(
    ("text", "name", "targets"),
    [
        ("OwnNamespace", "OwnNamespace", ("ops",)),
        ("SingleNamespace=apps", "SingleNamespace", ("apps",)),
        ("MultiNamespace=b,a", "MultiNamespace", ("a", "b")),
        ("AllNamespaces", "AllNamespaces", ()),
    ],
)
def test_install_modes_become_operator_group_targets(
    text: str, name: str, targets: tuple[str, ...]
) -> None:
    assert InstallMode.parse(text, "ops") == InstallMode(name, targets)


@pytest.mark.parametrize(
    "text", ["Bogus", "SingleNamespace", "SingleNamespace=a,b", "AllNamespaces=x"]
)
def test_bad_install_modes_name_the_flag(text: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        InstallMode.parse(text, "ops")
    assert caught.value.argument == "install_mode"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("127.0.0.1:50051", "address"),
        ("localhost:5000/olmtool/catalog:latest", "image"),
        ("quay.io/org/catalog@sha256:" + "a" * 64, "image"),
        ("not a catalog", None),
        ("foo/bar", None),  # a mistyped directory, never a Docker Hub image
        ("org/catalog:1", None),
        ("./missing/catalog", None),
    ],
)
def test_install_and_test_upgrade_classify_a_catalog_alike(text: str, kind: str | None) -> None:
    if kind is None:
        for classify in (classify_catalog, catalog_kind):
            with pytest.raises(ArgumentError) as caught:
                classify(text)
            assert caught.value.argument == "catalog" and text.removeprefix("./") in str(
                caught.value
            )
    else:
        assert classify_catalog(text).kind.value == catalog_kind(text) == kind


def test_a_missing_directory_shows_what_its_parent_holds(tmp_path: Path) -> None:
    (tmp_path / "catalogs" / "stable").mkdir(parents=True)
    with pytest.raises(ArgumentError) as caught:
        classify_catalog(str(tmp_path / "catalogs" / "stabel"))
    assert "no such catalog directory" in str(caught.value) and "stable" in str(caught.value)


def test_subscription_body_is_what_olm_reads() -> None:
    body = SubscriptionSpec(
        "etcd-operator", "cat", "ns", "stable", "etcd-operator.v0.2.0", "Manual"
    ).body()
    assert body["spec"] == {
        "name": "etcd-operator",
        "source": "cat",
        "sourceNamespace": "ns",
        "installPlanApproval": "Manual",
        "channel": "stable",
        "startingCSV": "etcd-operator.v0.2.0",
    }
    assert body["metadata"]["labels"] == {"olmtool.dev/created-by": "install"}
