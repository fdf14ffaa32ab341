"""``olmtool test upgrade``: the static upgrade-path check from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from olmtool.cli import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _bundle(name: str, version: str) -> dict:
    return {
        "schema": "olm.bundle",
        "name": name,
        "package": "p",
        "image": f"example.com/p-bundle:{version}",
        "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": version}}],
    }


def test_the_repository_catalog_passes() -> None:
    result = runner.invoke(
        app,
        [
            "test",
            "upgrade",
            "--catalog",
            str(REPO / "catalog"),
            "--package",
            "etcd-operator",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    paths = {p["bundle"]: p["hops"] for p in plan["paths"]}
    assert paths == {
        "etcd-operator.v0.5.0": [],
        "etcd-operator.v0.4.0": ["etcd-operator.v0.5.0"],
        "etcd-operator.v0.3.0": ["etcd-operator.v0.5.0"],
        "etcd-operator.v0.2.0": ["etcd-operator.v0.5.0"],
        "etcd-operator.v0.1.0": ["etcd-operator.v0.5.0"],
    }


def test_a_stranded_bundle_fails(tmp_path: Path) -> None:
    blobs = [
        {"schema": "olm.package", "name": "p", "defaultChannel": "stable"},
        {
            "schema": "olm.channel",
            "package": "p",
            "name": "stable",
            "entries": [
                {"name": "p.v1.0.0"},
                {"name": "p.v1.1.0"},
                {"name": "p.v1.2.0", "replaces": "p.v1.1.0"},
            ],
        },
        _bundle("p.v1.0.0", "1.0.0"),
        _bundle("p.v1.1.0", "1.1.0"),
        _bundle("p.v1.2.0", "1.2.0"),
    ]
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "catalog.json").write_text("\n".join(json.dumps(b) for b in blobs))
    result = runner.invoke(app, ["test", "upgrade", "--catalog", str(tmp_path), "--package", "p"])
    assert result.exit_code == 1, result.output
    assert "upgrade paths: failed" in result.output


def test_a_bad_catalog_argument_is_one_line() -> None:
    result = runner.invoke(app, ["test", "upgrade", "--catalog", "no such", "--package", "p"])
    assert result.exit_code != 0
