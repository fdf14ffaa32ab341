"""Install modes and catalog arguments of ``olmtool install`` (pure parts)."""

from __future__ import annotations

import pytest

from olmtool.actions.install import _catalog_kind
from olmtool.errors import ArgumentError
from olmtool.olm.subscribe import InstallMode, SubscriptionSpec


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


def test_catalogs_are_addresses_or_images() -> None:
    assert _catalog_kind("127.0.0.1:50051") == ("address", "127.0.0.1:50051")
    assert _catalog_kind("localhost:5000/olmtool/catalog:latest") == (
        "image",
        "localhost:5000/olmtool/catalog:latest",
    )
    with pytest.raises(ArgumentError):
        _catalog_kind("not a catalog")


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
