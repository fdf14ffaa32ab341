"""The resolved catalog model: links, origins, versions, and what resolution reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.catalog import declcfg as dc
from olmtool.catalog.load import load_catalog_strict
from olmtool.catalog.model import Edge, build_model
from olmtool.catalog.validate import validate_config
from olmtool.errors import InputError
from olmtool.serve import InvalidCatalogError, build_index

CORPUS = Path(__file__).parent / "corpus"


def bundle(version: str, package: str = "op", name: str = "") -> dc.Bundle:
    value = {"packageName": package, "version": version}
    return dc.Bundle(
        name=name or f"{package}.v{version}",
        package=package,
        image=f"example.com/{package}-bundle:v{version}",
        properties=[dc.Property(dc.PROP_PACKAGE, value)],
        origin=dc.Origin("op.yaml", 10),
    )


def config() -> dc.DeclarativeConfig:
    entries = [
        dc.ChannelEntry("op.v1.0.0"),
        dc.ChannelEntry("op.v1.1.0", replaces="op.v1.0.0", skip_range="<1.1.0"),
    ]
    return dc.DeclarativeConfig(
        packages=[dc.Package("op", "stable", origin=dc.Origin("op.yaml", 1))],
        channels=[
            dc.Channel("stable", "op", entries, origin=dc.Origin("op.yaml", 5)),
            dc.Channel(
                "fast", "op", [dc.ChannelEntry("op.v1.1.0")], origin=dc.Origin("op.yaml", 7)
            ),
        ],
        bundles=[bundle("1.0.0"), bundle("1.1.0")],
        deprecations=[
            dc.Deprecation(
                "op",
                [dc.DeprecationEntry(dc.DeprecationReference(dc.SCHEMA_CHANNEL, "fast"), "old")],
            )
        ],
    )


def test_model_links_packages_channels_entries_and_bundles() -> None:
    catalog = build_model(config())
    assert catalog.findings == []
    op = catalog.packages["op"]
    stable, fast = op.channels["stable"], op.channels["fast"]
    assert op.default_channel is stable and op.origin == dc.Origin("op.yaml", 1)
    assert [e.bundle for e in stable.entries] == [op.bundles["op.v1.0.0"], op.bundles["op.v1.1.0"]]
    assert op.bundles["op.v1.1.0"].channels == [stable, fast]
    assert op.bundles["op.v1.0.0"].channels == [stable]
    assert stable.head == "op.v1.1.0" and stable.origin == dc.Origin("op.yaml", 5)
    assert str(op.bundles["op.v1.0.0"].parsed_version) == "1.0.0"
    assert stable.edges == [
        Edge("op.v1.0.0", "op.v1.1.0", "replace"),
        Edge("op.v1.0.0", "op.v1.1.0", "skipRange", "<1.1.0"),
    ]
    assert fast.deprecation == "old" and stable.deprecation is None


def test_resolution_findings_name_check_object_and_origin() -> None:
    cfg = config()
    cfg.channels.append(
        dc.Channel("stable", "op", [dc.ChannelEntry("x")], origin=dc.Origin("b", 3))
    )
    cfg.channels.append(dc.Channel("beta", "nope", [], origin=dc.Origin("c", 4)))
    cfg.channels[1].entries.append(dc.ChannelEntry("op.v9"))
    cfg.bundles.append(bundle("1.1.0"))
    cfg.bundles.append(bundle("2.0.0"))
    cfg.packages[0].default_channel = "gone"
    found = {(f.check, f.scope, f.file, f.line) for f in build_model(cfg).findings}
    assert found == {
        ("channel-duplicate", 'channel "stable"', "b", 3),
        ("package-missing", 'channel "beta"', "c", 4),
        ("channel-entry-bundle", 'channel "fast"', "op.yaml", 7),
        ("bundle-duplicate", 'bundle "op.v1.1.0"', "op.yaml", 10),
        ("bundle-not-in-channel", 'bundle "op.v2.0.0"', "op.yaml", 10),
        ("default-channel", None, "op.yaml", 1),
    }


def test_unknown_packages_still_link_for_graphs() -> None:
    cfg = config()
    cfg.packages.clear()
    catalog = build_model(cfg)
    op = catalog.packages["op"]
    assert not op.declared and op.channels["stable"].head == "op.v1.1.0"
    assert {f.check for f in catalog.findings} == {"package-missing"}


def test_validate_reports_resolution_and_checks_once() -> None:
    cfg = config()
    cfg.channels[1].entries.append(dc.ChannelEntry("op.v1.1.0"))
    report = validate_config(cfg)
    assert [f.check for f in report.findings] == ["channel-entry-duplicate"]


@pytest.mark.parametrize("case", ["channel-cycle", "package-missing-bundle", "version-duplicate"])
def test_serve_refuses_with_validates_first_error(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CORPUS / case)
    expected = validate_config(load_catalog_strict(".")).errors[0]
    with pytest.raises(InvalidCatalogError) as caught:
        build_index(".")
    assert isinstance(caught.value, InputError)
    assert expected.message in caught.value.message
    assert f"[{expected.check}]" in caught.value.message
    assert (caught.value.path, caught.value.line) == (expected.file, expected.line)
    assert caught.value.report.errors[0] == expected


def test_serve_accepts_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS / "skips-unknown")
    index = build_index(".")
    try:
        assert "widget-operator" in index.packages
    finally:
        index.close()


def test_valid_corpus_catalog_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS / "valid-json")
    index = build_index(".")
    try:
        package = index.package("widget-operator")
        assert package.channels["stable"].head == "widget-operator.v1.2.0"
        assert index.read_blob(package.blob)["name"] == "widget-operator"
    finally:
        index.close()
