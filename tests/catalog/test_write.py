"""Writing catalogs like ``opm migrate``: blob order, JSON/YAML text, per-package files."""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any

import pytest

from olmtool import fsutil
from olmtool.catalog import declcfg as dc
from olmtool.catalog.load import load_catalog, load_texts, parse_blobs
from olmtool.catalog.write import CatalogFormat, render_catalog, render_config, write_package

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_CATALOG = REPO_ROOT / "catalog"
CORPUS = Path(__file__).parent / "corpus"


def package_v(name: str, version: str) -> dc.Property:
    return dc.Property("olm.package", {"packageName": name, "version": version})


def bundle(package: str, version: str) -> dc.Bundle:
    return dc.Bundle(
        f"{package}.v{version}",
        package,
        f"quay.io/example/{package}-bundle:v{version}",
        [package_v(package, version)],
    )


def meta(schema: str, package: str, name: str) -> dc.Meta:
    blob = {"schema": schema, "package": package, "name": name}
    return dc.Meta(schema, package, name, {k: v for k, v in blob.items() if v})


def shuffled_config() -> dc.DeclarativeConfig:
    """Two packages and a package-less blob, every list out of order."""
    return dc.DeclarativeConfig(
        packages=[dc.Package("b-op", "stable"), dc.Package("a-op", "stable")],
        channels=[
            dc.Channel("stable", "b-op", [dc.ChannelEntry("b-op.v1.0.0")]),
            dc.Channel("stable", "a-op", [dc.ChannelEntry("a-op.v1.0.0")]),
            dc.Channel("alpha", "a-op", [dc.ChannelEntry("a-op.v2.0.0")]),
            dc.Channel("beta", "a-op", [dc.ChannelEntry("a-op.v10.0.0")]),
        ],
        bundles=[
            bundle("a-op", "2.0.0"),
            bundle("b-op", "1.0.0"),
            bundle("a-op", "10.0.0"),
            bundle("a-op", "1.0.0"),
        ],
        deprecations=[
            dc.Deprecation(
                "a-op",
                [dc.DeprecationEntry(dc.DeprecationReference("olm.bundle", "a-op.v1.0.0"), "old")],
            )
        ],
        others=[
            meta("com.example.z", "a-op", "n"),
            meta("com.example.a", "a-op", "y"),
            meta("com.example.a", "a-op", "x"),
            meta("com.example.global", "", "g"),
        ],
    )


def order(text: str, file: str) -> list[tuple[str, str]]:
    blobs, problems = parse_blobs(text, file)
    assert problems == []
    return [(b.data["schema"], b.data.get("name") or b.data.get("package") or "") for b in blobs]


def plain(config: dc.DeclarativeConfig) -> list[dict[str, Any]]:
    """The config's blobs without origins, for comparing two loads."""
    return dc.blobs(config)


# --- order ----------------------------------------------------------------------------------


A_OP_ORDER = [
    ("olm.package", "a-op"),
    ("olm.channel", "alpha"),
    ("olm.channel", "beta"),
    ("olm.channel", "stable"),
    ("olm.bundle", "a-op.v1.0.0"),
    ("olm.bundle", "a-op.v10.0.0"),  # by name, as opm sorts: not by version
    ("olm.bundle", "a-op.v2.0.0"),
    ("com.example.a", "x"),
    ("com.example.a", "y"),
    ("com.example.z", "n"),
    ("olm.deprecations", "a-op"),
]


@pytest.mark.parametrize("fmt", list(CatalogFormat))
def test_package_file_in_opm_order(fmt: CatalogFormat) -> None:
    files = render_catalog(shuffled_config(), fmt)
    name = f"a-op/catalog.{fmt.value}"
    assert order(files[name], name) == A_OP_ORDER


def test_multi_package_stream_is_grouped_by_package() -> None:
    config = shuffled_config()
    config.others = [m for m in config.others if m.package]
    got = order(render_config(config), "all.json")
    assert got == [
        *A_OP_ORDER,
        ("olm.package", "b-op"),
        ("olm.channel", "stable"),
        ("olm.bundle", "b-op.v1.0.0"),
    ]


def test_render_catalog_one_file_per_package_and_global() -> None:
    config = shuffled_config()
    files = render_catalog(config)
    assert sorted(files) == ["__global/catalog.json", "a-op/catalog.json", "b-op/catalog.json"]
    assert order(files["b-op/catalog.json"], "b") == [
        ("olm.package", "b-op"),
        ("olm.channel", "stable"),
        ("olm.bundle", "b-op.v1.0.0"),
    ]
    assert order(files["__global/catalog.json"], "g") == [("com.example.global", "g")]
    assert sorted(render_catalog(config, CatalogFormat.yaml)) == [
        "__global/catalog.yaml",
        "a-op/catalog.yaml",
        "b-op/catalog.yaml",
    ]


def test_package_without_olm_package_blob_still_gets_a_directory() -> None:
    config = dc.DeclarativeConfig(bundles=[bundle("loose", "1.0.0")])
    assert list(render_catalog(config)) == ["loose/catalog.json"]


# --- text ----------------------------------------------------------------------------------


def small_config() -> dc.DeclarativeConfig:
    return dc.DeclarativeConfig(
        packages=[
            dc.Package(
                "widget",
                "stable",
                icon=dc.Icon("PHN2Zy8+", "image/svg+xml"),
                description="Wïdgets <b>&</b> “more”\u2028",
            )
        ],
        channels=[
            dc.Channel(
                "stable",
                "widget",
                [
                    dc.ChannelEntry("widget.v1.0.0"),
                    dc.ChannelEntry("widget.v1.1.0", "widget.v1.0.0", [], ">=1.0.0 <1.1.0"),
                ],
            )
        ],
        bundles=[
            dc.Bundle(
                "widget.v1.1.0",
                "widget",
                "quay.io/example/widget-bundle:v1.1.0",
                [package_v("widget", "1.1.0")],
                [dc.RelatedImage("", "quay.io/example/widget-bundle:v1.1.0")],
            )
        ],
    )


JSON_TEXT = """\
{
    "schema": "olm.package",
    "name": "widget",
    "defaultChannel": "stable",
    "icon": {
        "base64data": "PHN2Zy8+",
        "mediatype": "image/svg+xml"
    },
    "description": "Wïdgets <b>&</b> “more”\\u2028"
}
{
    "schema": "olm.channel",
    "name": "stable",
    "package": "widget",
    "entries": [
        {
            "name": "widget.v1.0.0"
        },
        {
            "name": "widget.v1.1.0",
            "replaces": "widget.v1.0.0",
            "skipRange": ">=1.0.0 <1.1.0"
        }
    ]
}
{
    "schema": "olm.bundle",
    "name": "widget.v1.1.0",
    "package": "widget",
    "image": "quay.io/example/widget-bundle:v1.1.0",
    "properties": [
        {
            "type": "olm.package",
            "value": {
                "packageName": "widget",
                "version": "1.1.0"
            }
        }
    ],
    "relatedImages": [
        {
            "name": "",
            "image": "quay.io/example/widget-bundle:v1.1.0"
        }
    ]
}
"""


def test_json_text_like_opm() -> None:
    # 4-space indent, Go struct field order, non-ASCII kept, <>& not escaped, U+2028 escaped
    assert render_config(small_config()) == JSON_TEXT


def test_yaml_text_like_opm() -> None:
    # go-yaml's layout (sigs.k8s.io/yaml): sorted keys, sequences not indented
    config = small_config()
    config.packages[0].description = "Widgets."
    text = render_config(config, CatalogFormat.yaml)
    assert text.count("---\n") == 3  # one before every document, none after the last
    assert text.startswith(
        "---\n"
        "defaultChannel: stable\n"
        "description: Widgets.\n"
        "icon:\n"
        "  base64data: PHN2Zy8+\n"
        "  mediatype: image/svg+xml\n"
        "name: widget\n"
        "schema: olm.package\n"
        "---\n"
        "entries:\n"
        "- name: widget.v1.0.0\n"
        "- name: widget.v1.1.0\n"
        "  replaces: widget.v1.0.0\n"
        "  skipRange: '>=1.0.0 <1.1.0'\n"
        "name: stable\n"
        "package: widget\n"
        "schema: olm.channel\n"
        "---\n"
    )
    assert text.endswith("schema: olm.bundle\n")


def test_empty_config_renders_nothing() -> None:
    assert render_config(dc.DeclarativeConfig()) == ""
    assert render_config(dc.DeclarativeConfig(), CatalogFormat.yaml) == ""
    assert render_catalog(dc.DeclarativeConfig()) == {}


# --- round trips -----------------------------------------------------------------------------


def round_trip(config: dc.DeclarativeConfig, fmt: CatalogFormat) -> dc.DeclarativeConfig:
    result = load_texts(render_catalog(config, fmt))
    assert result.findings == []
    return result.config


@pytest.mark.parametrize("fmt", list(CatalogFormat))
@pytest.mark.parametrize(
    "source", [REPO_CATALOG, CORPUS / "valid-split", CORPUS / "valid-json"], ids=lambda p: p.name
)
def test_load_render_load_gives_the_same_config(source: Path, fmt: CatalogFormat) -> None:
    loaded = load_catalog(source)
    assert loaded.findings == []
    again = round_trip(loaded.config, fmt)
    assert plain(again) == plain(loaded.config)
    # and rendering is stable: a second round gives the same text
    assert render_catalog(again, fmt) == render_catalog(loaded.config, fmt)


def test_round_trip_keeps_odd_values() -> None:
    config = shuffled_config()
    config.others.append(
        dc.Meta(
            "com.example.odd",
            "a-op",
            "odd",
            {
                "schema": "com.example.odd",
                "package": "a-op",
                "name": "odd",
                "values": ["1.0", "0755", "2024-01-31", "null", "~", "", " lead", "a\n b\n", "#x"],
                "numbers": [1, 1.5, 0, -7, 0.0025],
                "nested": {"true": True, "none": None, "empty": {}, "list": []},
            },
        )
    )
    for fmt in CatalogFormat:
        assert plain(round_trip(config, fmt)) == plain(config)


def test_yaml_round_trip_quotes_yaml_1_1_scalars() -> None:
    config = small_config()
    config.bundles[0].properties.append(
        dc.Property(
            "olm.csv.metadata",
            {
                "annotations": {"example.com/supported": "yes", "example.com/tested": "No"},
                "keywords": ["off", "on"],
                "labels": {"maintenance-window": "12:30"},
            },
        )
    )
    assert plain(round_trip(config, CatalogFormat.yaml)) == plain(config)


def test_repository_catalog_is_what_the_writer_writes() -> None:
    loaded = load_catalog(REPO_CATALOG)
    files = render_catalog(loaded.config, CatalogFormat.yaml)
    on_disk = (REPO_CATALOG / "etcd-operator" / "catalog.yaml").read_text(encoding="utf-8")
    assert files == {"etcd-operator/catalog.yaml": on_disk}


# --- write_package ---------------------------------------------------------------------------


def test_write_package_creates_then_reports_no_drift(tmp_path: Path) -> None:
    config = shuffled_config()
    first = write_package(config, tmp_path, "a-op")
    assert (first.added, first.modified, first.removed) == (["catalog.json"], [], [])
    written = (tmp_path / "a-op" / "catalog.json").read_text(encoding="utf-8")
    assert written == render_catalog(config)["a-op/catalog.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-op"]  # no staging leftovers

    again = write_package(config, tmp_path, "a-op")
    assert not again.stale
    assert not write_package(config, tmp_path, "a-op", check=True).stale


def test_write_package_replaces_the_whole_directory(tmp_path: Path) -> None:
    directory = tmp_path / "a-op"
    (directory / "old").mkdir(parents=True)
    (directory / "catalog.yaml").write_text("---\nschema: olm.package\nname: a-op\n")
    (directory / "old" / "bundle.json").write_text("{}")
    inode = os.stat(directory).st_ino

    diff = write_package(shuffled_config(), tmp_path, "a-op", CatalogFormat.yaml)
    assert diff.added == []
    assert diff.modified == ["catalog.yaml"]
    assert diff.removed == ["old/bundle.json"]
    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")) == [
        "catalog.yaml"
    ]
    assert os.stat(directory).st_ino != inode  # a new directory renamed into place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-op"]
    assert oct(directory.stat().st_mode & 0o777) == "0o755"
    assert oct((directory / "catalog.yaml").stat().st_mode & 0o777) == "0o644"


def test_write_package_check_reports_drift_without_writing(tmp_path: Path) -> None:
    config = shuffled_config()
    missing = write_package(config, tmp_path, "b-op", check=True)
    assert missing.stale and missing.added == ["catalog.json"]
    assert not (tmp_path / "b-op").exists()

    write_package(config, tmp_path, "b-op")
    path = tmp_path / "b-op" / "catalog.json"
    path.write_text(path.read_text().replace('"stable"', '"fast"', 1))
    edited = path.read_text()
    drift = write_package(config, tmp_path, "b-op", check=True)
    assert drift.stale and drift.modified == ["catalog.json"]
    (diff,) = drift.diffs
    assert '-    "defaultChannel": "fast"' in diff
    assert '+    "defaultChannel": "stable"' in diff
    assert path.read_text() == edited  # check never writes

    assert write_package(config, tmp_path, "b-op").modified == ["catalog.json"]
    assert not write_package(config, tmp_path, "b-op", check=True).stale


def failing_os(fail: str, after: int = 0) -> types.SimpleNamespace:
    """The os module, except that ``fail`` raises on its call number ``after + 1`` (once)."""
    calls = {"n": 0}
    real = getattr(os, fail)

    def broken(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == after + 1:
            raise OSError(f"injected failure in os.{fail}")
        return real(*args, **kwargs)

    namespace = types.SimpleNamespace(
        **{k: getattr(os, k) for k in dir(os) if not k.startswith("__")}
    )
    setattr(namespace, fail, broken)
    return namespace


def test_write_package_failure_while_staging_keeps_the_old_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = shuffled_config()
    write_package(config, tmp_path, "a-op")
    before = (tmp_path / "a-op" / "catalog.json").read_text()
    config.packages[1].default_channel = "alpha"
    monkeypatch.setattr(fsutil, "os", failing_os("chmod"))
    with pytest.raises(OSError, match="injected"):
        write_package(config, tmp_path, "a-op")
    assert (tmp_path / "a-op" / "catalog.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-op"]


def test_write_package_failure_while_swapping_keeps_the_old_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = shuffled_config()
    write_package(config, tmp_path, "a-op")
    before = (tmp_path / "a-op" / "catalog.json").read_text()
    config.packages[1].default_channel = "alpha"
    # where the filesystem cannot exchange two names: the old tree aside, the new one in
    monkeypatch.setattr(fsutil, "exchange", lambda a, b: False)
    monkeypatch.setattr(fsutil, "os", failing_os("replace", after=1))
    with pytest.raises(OSError, match="injected"):
        write_package(config, tmp_path, "a-op")
    assert (tmp_path / "a-op" / "catalog.json").read_text() == before
    assert not [p for p in tmp_path.parent.iterdir() if fsutil.is_staging(p.name)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-op"]


def test_write_package_failure_of_the_exchange_keeps_the_old_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = shuffled_config()
    write_package(config, tmp_path, "a-op")
    before = (tmp_path / "a-op" / "catalog.json").read_text()
    config.packages[1].default_channel = "alpha"

    def broken(a: Path, b: Path) -> bool:
        raise OSError("injected failure in renameat2")

    monkeypatch.setattr(fsutil, "exchange", broken)
    with pytest.raises(OSError, match="injected"):
        write_package(config, tmp_path, "a-op")
    assert (tmp_path / "a-op" / "catalog.json").read_text() == before
    assert not [p for p in tmp_path.parent.iterdir() if fsutil.is_staging(p.name)]


def test_yaml_quotes_strings_that_yaml_v2_would_read_otherwise() -> None:
    from olmtool import yamlread, yamlwrite

    values = ["y", "N", "0o755", "08", "1e5", "yes", "12:30", "plain", "2024-01-31"]
    text = yamlwrite.dump_as_go({"v": values})
    assert '- "y"' in text and '- "0o755"' in text and "- plain" in text
    assert yamlread.load(text) == {"v": values}
