"""``bundle release NEXT``: the next release appended to olmtool.yaml with its upgrade
edges, every other line kept as written; a one-release file turned into the releases form
without changing what its release builds."""

from __future__ import annotations

import difflib
import json
import os
import shutil
from pathlib import Path

import pytest

from olmtool.actions import bundle_build, bundle_release
from olmtool.config import load_project
from olmtool.errors import ArgumentError, InputError
from olmtool.fsutil import read_tree
from tests.catalog.test_cli_validate import cli

GOLDEN = Path(__file__).parent / "golden" / "releases"
REPO = Path(__file__).resolve().parents[2]


def _check_golden(written: Path, name: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        shutil.copyfile(written, golden)
    assert written.read_text() == golden.read_text()


def _changes(before: str, after: str) -> list[str]:
    """The lines removed (``-``) and added (``+``)."""
    diff = difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True))
    return [line.rstrip("\n") for line in diff if line[:1] in "+-"]


def test_next_release_replaces_the_head_of_its_channel(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    before = config.read_text()
    result = bundle_release(
        "0.5.0", config=config, channels=["stable"], skip_range=">=0.3.0 <0.5.0"
    )
    assert (result.replaces, result.skips, result.skip_range) == (
        "gizmo-operator.v0.4.0",
        [],
        ">=0.3.0 <0.5.0",
    )
    assert result.channels == ["stable"] and not result.converted and not result.notes
    # only the new entry is added, after the last release and before the blank line
    assert _changes(before, config.read_text()) == [
        "+     - version: 0.5.0",
        "+       channels: [stable]",
        "+       replaces: gizmo-operator.v0.4.0",
        "+       skipRange: '>=0.3.0 <0.5.0'",
    ]
    assert config.read_text().index("skipRange: '>=0.3.0") < config.read_text().index("\ncatalog:")
    _check_golden(config, "gizmo-0.5.0.olmtool.yaml")
    (added,) = [
        r for r in load_project(config).settings.bundle.resolved_releases() if r.version == "0.5.0"
    ]
    assert added.newest and added.settings.deployment.image == "example.com/gizmo-operator:0.5.0"


@pytest.mark.parametrize(
    ("skip_range", "skips"),
    [(None, ["gizmo-operator.v0.4.0"]), (">=0.4.0 <0.6.0", [])],
)
def test_heads_of_other_channels_are_skipped_unless_in_the_range(
    releases_project: Path, skip_range: str | None, skips: list[str]
) -> None:
    config = releases_project / "olmtool.yaml"
    bundle_release("0.5.0", config=config, channels=["stable"])
    # alpha's head is 0.4.0, stable's 0.5.0: replaces the newer, skips the other
    result = bundle_release("0.6.0", config=config, skip_range=skip_range)
    assert (result.channels, result.replaces, result.skips) == (
        ["alpha", "stable"],
        "gizmo-operator.v0.5.0",
        skips,
    )


def test_replaces_none_or_named(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    none = bundle_release("0.5.0", config=config, replaces="none", skip_range=">=0.1.0 <0.5.0")
    assert none.replaces is None and none.skips == []
    named = bundle_release("0.6.0", config=config, replaces="0.4.0")
    assert named.replaces == "gizmo-operator.v0.4.0"
    other = bundle_release("0.7.0", config=config, replaces="gizmo-operator.v0.6.0")
    assert other.replaces == "gizmo-operator.v0.6.0"


@pytest.mark.parametrize(
    ("version", "arguments", "argument", "message"),
    [
        ("0.4.0", {}, "next_version", "0.4.0 is already a release"),
        (
            "0.3.5",
            {"channels": ["stable"]},
            "next_version",
            "0.3.5 is not newer than 0.4.0, the head of channel stable",
        ),
        ("0.5", {}, "next_version", "'0.5' is not a semantic version"),
        ("0.5.0", {"skip_range": "~>1"}, "skip_range", "'~>1' is not a version range"),
    ],
)
def test_refusals_leave_the_file_alone(
    releases_project: Path, version: str, arguments: dict, argument: str, message: str
) -> None:
    config = releases_project / "olmtool.yaml"
    before = config.read_text()
    with pytest.raises(ArgumentError) as refused:
        bundle_release(version, config=config, **arguments)
    assert refused.value.argument == argument
    assert refused.value.message.startswith(message), refused.value.message
    assert config.read_text() == before


def test_a_new_channel_has_no_head(releases_project: Path) -> None:
    result = bundle_release("0.4.1", config=releases_project / "olmtool.yaml", channels=["fast"])
    assert result.replaces is None and result.channels == ["fast"]


def test_build_right_away(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    result = bundle_release("0.5.0", config=config, build=True)
    assert result.build is not None and not result.failed
    assert [r.version for r in result.build.releases] == ["0.5.0"]
    csv = releases_project / "out/gizmo-operator/0.5.0/manifests"
    assert (
        "replaces: gizmo-operator.v0.4.0"
        in (csv / "gizmo-operator.clusterserviceversion.yaml").read_text()
    )
    assert result.as_dict()["build"]["status"] == "written"


def test_flow_style_releases_are_refused_with_their_line(tmp_path: Path) -> None:
    config = tmp_path / "olmtool.yaml"
    config.write_text(
        "bundle:\n  package: p\n  channels: [a]\n  csv: {displayName: P}\n"
        "  deployment: {name: p, image: 'x.io/p:{version}'}\n"
        "  releases: [{version: 1.0.0}]\n"
    )
    with pytest.raises(InputError, match="flow-style list") as refused:
        bundle_release("1.1.0", config=config)
    assert refused.value.line == 6


# --- the one-release form -------------------------------------------------------------------


def test_one_release_file_is_converted_keeping_its_release(project: Path) -> None:
    config = project / "olmtool.yaml"
    before_build = bundle_build(config=config, check=True).bundle.files
    result = bundle_release("1.3.0", config=config)
    assert result.converted
    assert (result.replaces, result.channels) == ("widget-operator.v1.2.0", ["stable", "fast"])
    assert result.notes == [
        "deployment.image now ends in :{version} (was :1.2.0)",
        "csv.relatedImages widget-agent is example.com/widget-agent:1.2.0 in 1.3.0 too: "
        "write its tag as {version} if it follows the release",
    ]
    _check_golden(config, "widget-converted.olmtool.yaml")
    # 1.2.0 builds byte for byte as before; 1.3.0 is the newest and the default build
    assert bundle_build(config=config, version="1.2.0", check=True).bundle.files == before_build
    newest = bundle_build(config=config)
    assert newest.releases[0].version == "1.3.0"
    csv = read_tree(newest.bundle.directory)["manifests/widget-operator.clusterserviceversion.yaml"]
    assert "image: example.com/widget-operator:1.3.0" in csv
    assert "replaces: widget-operator.v1.2.0" in csv


def test_the_repository_project_file_takes_the_next_release_as_written(tmp_path: Path) -> None:
    """olmtool.yaml lists its releases (0.3.0 and 0.4.0 frozen as published, 0.5.0 from
    the shared keys): the next one is appended after them, no other line changes, the
    existing releases resolve as before, and the new one inherits 0.5.0's Deployment."""
    config = tmp_path / "olmtool.yaml"
    shutil.copyfile(REPO / "olmtool.yaml", config)
    before = config.read_text()

    def resolved() -> dict[str, dict]:
        releases = load_project(config).settings.bundle.resolved_releases()
        return {r.version: r.settings.model_dump() for r in releases}

    old = resolved()
    assert list(old) == ["0.3.0", "0.4.0", "0.5.0"]
    result = bundle_release("9.0.0", config=config)
    assert not result.converted and not result.notes
    changes = _changes(before, config.read_text())
    assert [line for line in changes if line.startswith("-")] == []
    assert [line[2:] for line in changes if line.startswith("+")] == [
        "    - version: 9.0.0",
        "      replaces: etcd-operator.v0.5.0",
    ]
    new = resolved()
    assert {version: new[version] for version in old} == old
    head, added = old["0.5.0"]["deployment"], new["9.0.0"]["deployment"]
    assert added["image"] == "localhost:5000/olmtool/etcd-operator:9.0.0"
    assert {k: v for k, v in added.items() if k != "image"} == {
        k: v for k, v in head.items() if k != "image"
    }


# --- the command: wiring only -------------------------------------------------------------


def test_release_command_output_and_errors(
    releases_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(releases_project)
    text = cli(
        "bundle", "release", "0.5.0", "--channel", "stable", "--skip-range", ">=0.3.0 <0.5.0"
    )
    assert text.returncode == 0, text.exception
    assert text.stdout == (
        "olmtool.yaml: added release 0.5.0 (channels stable; replaces gizmo-operator.v0.4.0; "
        "skipRange >=0.3.0 <0.5.0)\n"
    )
    data = cli("bundle", "release", "0.6.0", "--replaces", "none", "-o", "json")
    assert data.returncode == 0 and json.loads(data.stdout)["replaces"] is None
    refused = cli("bundle", "release", "0.6.0")
    assert refused.returncode == 1
    assert refused.error == "NEXT 0.6.0 is already a release"
    wrong = cli("bundle", "release", "0.7.0", "--skip-range", "~>1")
    assert wrong.returncode == 1 and (wrong.error or "").startswith("--skip-range '~>1'")


# --- the text edit ------------------------------------------------------------------------

HEAD = "bundle:\n  package: p\n  csv: {displayName: P}\n  deployment: {name: p, image: x}\n"


@pytest.mark.parametrize(
    ("releases", "expected"),
    [
        (  # indentless list, a comment inside the last entry, no newline at the end
            "  releases:\n  - version: 1.0.0\n    # the first\n    channels: [a]",
            "  releases:\n  - version: 1.0.0\n    # the first\n    channels: [a]\n"
            "  - version: 1.1.0\n    channels: [a]\n    replaces: p.v1.0.0\n",
        ),
        (  # comments and blank lines after the list belong to what follows
            "  releases:\n      - version: 1.0.0\n        channels: [a]\n\n# next\ncatalog: {packages: [{name: p, bundles: [b]}]}\n",
            "  releases:\n      - version: 1.0.0\n        channels: [a]\n"
            "      - version: 1.1.0\n        channels: [a]\n        replaces: p.v1.0.0\n"
            "\n# next\ncatalog: {packages: [{name: p, bundles: [b]}]}\n",
        ),
    ],
)
def test_the_entry_goes_after_the_last_release(
    tmp_path: Path, releases: str, expected: str
) -> None:
    config = tmp_path / "olmtool.yaml"
    config.write_text(HEAD + releases)
    bundle_release("1.1.0", config=config)
    assert config.read_text() == HEAD + expected
