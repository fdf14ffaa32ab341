"""``bundle.releases``: one package described once, four releases built from it
(tests/bundle/project-releases), the rules that keep an older release's bundle as it
shipped, and the catalog published from them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from olmtool import yamlwrite
from olmtool.actions import bundle_build, catalog_publish
from olmtool.bundle import BundleSettings
from olmtool.bundle.settings import Release
from olmtool.config import load_project
from olmtool.errors import ArgumentError, InputError, InputErrors
from olmtool.fsutil import read_tree
from olmtool.images import ImageTarget, expand_image, read_oci_layout
from tests.catalog.opm_peer import OPM, requires_opm
from tests.catalog.test_cli_validate import cli

GOLDEN = Path(__file__).parent / "golden" / "gizmo-operator"
VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]
CSV = "manifests/gizmo-operator.clusterserviceversion.yaml"
CRD = "manifests/example.com_gizmos.yaml"


def _bundle(project: Path, version: str) -> Path:
    return project / "out" / "gizmo-operator" / version


def _csv(project: Path, version: str) -> dict:
    return yamlwrite.plain(yamlwrite.loads((_bundle(project, version) / CSV).read_text()))


def _releases(project: Path) -> dict:
    settings = load_project(project / "olmtool.yaml").settings.bundle
    return {r.version: r for r in settings.resolved_releases()}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


# --- settings: what a release inherits and what it changes -------------------------------


def test_a_release_keys_are_the_bundle_keys_it_may_change() -> None:
    bundle_keys = {info.alias for info in BundleSettings.model_fields.values()}
    release_keys = {info.alias for info in Release.model_fields.values()}
    own = {"version", "frozen", "replaces", "skips", "skipRange", "image"}
    assert release_keys == (bundle_keys - {"package", "output", "releases"}) | own


def test_releases_resolve_oldest_first_with_overrides(releases_project: Path) -> None:
    releases = _releases(releases_project)
    assert list(releases) == VERSIONS
    first, third, fourth = (releases[v] for v in ("0.1.0", "0.3.0", "0.4.0"))
    assert (first.frozen, first.own_crds, first.newest) == (True, True, False)
    assert (third.frozen, third.own_crds, third.newest) == (False, False, False)
    assert fourth.newest and not fourth.own_crds
    # channels: the release's own, else the shared ones; the shared default only where listed
    assert [r.settings.channels for r in releases.values()] == [
        ["alpha"],
        ["alpha"],
        ["alpha", "stable"],
        ["alpha", "stable"],
    ]
    assert [r.settings.default_channel for r in releases.values()] == [
        None,
        None,
        "stable",
        "stable",
    ]
    # upgrade edges are each release's own
    assert [r.settings.csv.replaces for r in releases.values()] == [
        None,
        "gizmo-operator.v0.1.0",
        "gizmo-operator.v0.2.0",
        "gizmo-operator.v0.3.0",
    ]
    assert third.settings.csv.skip_range == ">=0.1.0 <0.3.0"
    assert fourth.settings.csv.skips == ["gizmo-operator.v0.2.0"]
    # csv merges key by key: 0.4.0 changes minKubeVersion and keeps the shared maturity
    assert (fourth.settings.csv.min_kube_version, fourth.settings.csv.maturity) == (
        "1.21.0",
        "stable",
    )
    assert (first.settings.csv.min_kube_version, first.settings.csv.maturity) == (
        "1.20.0",
        "alpha",
    )
    assert first.settings.crds == "releases/0.1.0/crd" and fourth.settings.crds == "crd"


def test_version_expands_in_every_image(releases_project: Path) -> None:
    releases = _releases(releases_project)
    assert releases["0.1.0"].settings.deployment.image == "example.com/gizmo:v0.1.0"
    assert releases["0.3.0"].settings.deployment.image == "example.com/gizmo-operator:0.3.0"
    agent = releases["0.2.0"].settings.csv.related_images[0]
    assert agent.image == "example.com/gizmo-agent:0.2.0"
    assert expand_image("r/{package}:v{version}", package="p", version="1.0.0") == "r/p:v1.0.0"
    with pytest.raises(InputError, match=r"unknown placeholder \{tag\}"):
        expand_image("r/p:{tag}", package="p", version="1.0.0")


def test_the_one_release_form_expands_images_too(project: Path) -> None:
    _edit(project / "olmtool.yaml", "example.com/widget-operator:1.2.0", "x.io/w:v{version}")
    (release,) = load_project(project / "olmtool.yaml").settings.bundle.resolved_releases()
    assert release.settings.deployment.image == "x.io/w:v1.2.0"
    assert release.newest and not release.frozen


def _config_error(project: Path, old: str, new: str) -> InputError:
    _edit(project / "olmtool.yaml", old, new)
    with pytest.raises(InputError) as caught:
        load_project(project / "olmtool.yaml")
    return caught.value


def _line_of(project: Path, text: str) -> int:
    """The last line that is ``text`` (indentation and comments aside)."""
    lines = (project / "olmtool.yaml").read_text().splitlines()
    return max(i for i, line in enumerate(lines, 1) if line.partition(" #")[0].strip() == text)


@pytest.mark.parametrize(
    ("old", "new", "at", "message"),
    [
        (  # a model-level rule reported at the key's own line, not at bundle:
            "  defaultChannel: stable\n",
            "  defaultChannel: beta\n",
            "defaultChannel: beta",
            "bundle.defaultChannel: 'beta' is not one of channels (alpha, stable)",
        ),
        (
            "      channels: [alpha]\n      frozen",
            "      channels: [alpha]\n      defaultChannel: stable\n      frozen",
            "defaultChannel: stable",
            "bundle.releases[0].defaultChannel: 'stable' is not one of channels (alpha)",
        ),
        (
            "    - version: 0.2.0",
            "    - version: 0.1.0",
            "- version: 0.1.0",
            "bundle.releases[1].version: 0.1.0 is listed twice (also releases[0])",
        ),
        (
            "      crds: releases/0.2.0/crd",
            "      crd: releases/0.2.0/crd",
            "crd: releases/0.2.0/crd",
            "bundle.releases[1].crd: unknown key",
        ),
        (
            "    - version: 0.3.0",
            "    - version: 0.3.x",
            "- version: 0.3.x",
            "bundle.releases[2].version: '0.3.x' is not a semantic version",
        ),
        (
            "      csv: {maturity: alpha}",
            "      csv: {maturity: alpha, displayName: ''}",
            "csv: {maturity: alpha, displayName: ''}",
            "bundle.releases[0].csv.displayName: String should have at least 1 character",
        ),
        (
            'image: "example.com/gizmo:v{version}"',
            'image: "example.com/gizmo:{tag}"',
            'image: "example.com/gizmo:{tag}"',
            "bundle.releases[0].image: 'example.com/gizmo:{tag}': unknown placeholder {tag}",
        ),
        (  # a shared key's problem is reported at the shared key
            'image: "example.com/gizmo-operator:{version}"',
            'image: "example.com/gizmo-operator:{tag}"',
            'image: "example.com/gizmo-operator:{tag}"',
            "bundle.deployment.image: 'example.com/gizmo-operator:{tag}': unknown placeholder",
        ),
        (
            "      replaces: gizmo-operator.v0.1.0\n",
            "      replaces: gizmo-operator.v0.1.0\n      csv: {replaces: x}\n",
            "replaces: gizmo-operator.v0.1.0",
            "bundle.releases[1].replaces: give replaces once: here or as csv.replaces",
        ),
        (  # checked as the config loads, not first by bundle validate
            'skipRange: ">=0.1.0 <0.3.0"',
            'skipRange: ">=0.1.0 <0.3.0 ||"',
            'skipRange: ">=0.1.0 <0.3.0 ||"',
            "bundle.releases[2].skipRange: ",
        ),
        (
            "    maturity: stable\n",
            "    maturity: stable\n    replaces: gizmo-operator.v0.0.1\n",
            "replaces: gizmo-operator.v0.0.1",
            "bundle.csv.replaces: with releases, each release names its own replaces",
        ),
        (
            "  channels: [alpha, stable]\n",
            "  channels: [alpha, stable]\n  version: 0.4.0\n",
            "version: 0.4.0",
            "bundle.version: with releases, each release has its own version",
        ),
        (
            "  channels: [alpha, stable]\n  defaultChannel: stable\n",
            "",
            "- version: 0.3.0",
            "bundle.releases[2]: no channels: give the release channels, or bundle channels",
        ),
    ],
)
def test_config_errors_name_the_key_and_its_line(
    releases_project: Path, old: str, new: str, at: str, message: str
) -> None:
    error = _config_error(releases_project, old, new)
    assert error.message.startswith(message), error.message
    assert error.line == _line_of(releases_project, at), error


def test_every_release_problem_is_reported_a_line_each(releases_project: Path) -> None:
    _edit(releases_project / "olmtool.yaml", "    - version: 0.2.0", "    - version: 0.1.0")
    error = _config_error(
        releases_project,
        'image: "example.com/gizmo:v{version}"',
        'image: "example.com/gizmo:{tag}"',
    )
    assert isinstance(error, InputErrors)
    assert [problem.message for problem in error.problems] == [
        "bundle.releases[0].image: 'example.com/gizmo:{tag}': unknown placeholder {tag}"
        " (known: {package}, {version})",
        "bundle.releases[1].version: 0.1.0 is listed twice (also releases[0])",
    ]
    assert [problem.line for problem in error.problems] == [
        _line_of(releases_project, 'image: "example.com/gizmo:{tag}"'),
        _line_of(releases_project, "- version: 0.1.0"),
    ]


def test_a_bad_skip_range_is_a_config_error_in_the_one_release_form(project: Path) -> None:
    error = _config_error(project, 'skipRange: ">=1.0.0 <1.2.0"', 'skipRange: ">=1.0 <1.2.0"')
    assert error.message.startswith("bundle.csv.skipRange: "), error.message
    assert error.line == _line_of(project, 'skipRange: ">=1.0 <1.2.0"')


def test_default_channel_error_points_at_its_line_in_the_one_release_form(
    project: Path,
) -> None:
    error = _config_error(project, "defaultChannel: stable", "defaultChannel: beta")
    assert str(error).endswith(
        "olmtool.yaml:6: bundle.defaultChannel: 'beta' is not one of channels (stable, fast)"
    )


# --- building -----------------------------------------------------------------------------


def test_build_defaults_to_the_newest_release(releases_project: Path) -> None:
    result = bundle_build(config=releases_project / "olmtool.yaml")
    assert [r.version for r in result.releases] == ["0.4.0"]
    assert sorted(p.name for p in (releases_project / "out/gizmo-operator").iterdir()) == ["0.4.0"]
    data = result.as_dict()
    assert data["version"] == "0.4.0" and data["status"] == "written"  # one release: flat too
    assert [r["version"] for r in data["releases"]] == ["0.4.0"]


def test_build_one_release_by_version(releases_project: Path) -> None:
    result = bundle_build(config=releases_project / "olmtool.yaml", version="0.2.0")
    assert [r.version for r in result.releases] == ["0.2.0"]
    assert _csv(releases_project, "0.2.0")["spec"]["replaces"] == "gizmo-operator.v0.1.0"
    with pytest.raises(ArgumentError, match=r"0\.9\.0: no such release \(releases: 0\.1\.0"):
        bundle_build(config=releases_project / "olmtool.yaml", version="0.9.0")
    with pytest.raises(ArgumentError, match="pick one release or all, not both"):
        bundle_build(config=releases_project / "olmtool.yaml", version="0.2.0", all_releases=True)


def test_build_all_matches_golden_files(releases_project: Path) -> None:
    result = bundle_build(config=releases_project / "olmtool.yaml", all_releases=True)
    assert not result.failed
    assert [(r.version, r.status(False)) for r in result.releases] == [
        (v, "written") for v in VERSIONS
    ]
    for version in VERSIONS:
        golden = GOLDEN / version
        built = read_tree(_bundle(releases_project, version))
        if os.environ.get("UPDATE_GOLDEN"):
            shutil.rmtree(golden, ignore_errors=True)
            shutil.copytree(_bundle(releases_project, version), golden)
        assert built == read_tree(golden), version
    # each older release keeps its own CRDs; the newest has the shared ones
    crds = {v: yamlwrite.loads((_bundle(releases_project, v) / CRD).read_text()) for v in VERSIONS}
    assert [len(crds[v]["spec"]["versions"]) for v in VERSIONS] == [1, 2, 2, 2]
    fields = crds["0.2.0"]["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]
    assert "shape" not in fields["spec"]["properties"]


def test_check_all_reports_each_release(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    fresh = bundle_build(config=config, all_releases=True, check=True)
    assert fresh.failed and [r.status(True) for r in fresh.releases] == ["stale"] * 4
    assert not (releases_project / "out").exists(), "check writes nothing"
    bundle_build(config=config, all_releases=True)
    again = bundle_build(config=config, all_releases=True, check=True)
    assert not again.failed and [r.status(True) for r in again.releases] == ["unchanged"] * 4


def test_a_frozen_release_is_built_once_then_never_rewritten(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    bundle_build(config=config, all_releases=True)
    shipped = read_tree(_bundle(releases_project, "0.1.0"))
    unchanged = bundle_build(config=config, all_releases=True)
    assert not unchanged.failed
    first = unchanged.releases[0]
    assert (first.version, first.status(False), first.frozen) == (
        "0.1.0",
        "unchanged",
        True,
    )
    # A shared change would alter 0.1.0's CSV: it is refused, the others are written.
    _edit(config, "description: Makes gizmos.", "description: Makes better gizmos.")
    result = bundle_build(config=config, all_releases=True)
    assert result.failed
    statuses = {r.version: r.status(False) for r in result.releases}
    assert statuses == {
        "0.1.0": "refused",
        "0.2.0": "written",
        "0.3.0": "written",
        "0.4.0": "written",
    }
    refused = result.releases[0]
    assert refused.refused == f"frozen, differs ({CSV}): not rewritten"
    assert read_tree(_bundle(releases_project, "0.1.0")) == shipped
    data = result.as_dict()
    assert data["failed"] and data["releases"][0]["status"] == "refused"
    assert data["releases"][0]["refused"] == refused.refused
    assert "Makes better gizmos." in (_bundle(releases_project, "0.4.0") / CSV).read_text()


def test_an_older_release_never_ships_changed_shared_crds(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    bundle_build(config=config, all_releases=True)
    before = read_tree(_bundle(releases_project, "0.3.0"))
    _edit(releases_project / "crd/gizmos.yaml", "                shape:", "                weight:")
    result = bundle_build(config=config, all_releases=True)
    statuses = {r.version: r.status(False) for r in result.releases}
    assert statuses == {
        "0.1.0": "unchanged",  # its own CRD folder
        "0.2.0": "unchanged",
        "0.3.0": "refused",  # not the newest, takes the shared CRDs: keeps its own
        "0.4.0": "written",  # the newest takes them
    }
    assert result.failed
    assert result.releases[2].refused == (
        f"not the newest release, and its CRDs would change to the shared ones ({CRD}): "
        "give it its own crds: folder, or freeze it"
    )
    assert read_tree(_bundle(releases_project, "0.3.0")) == before
    assert "weight:" in (_bundle(releases_project, "0.4.0") / CRD).read_text()
    alone = bundle_build(config=config, version="0.3.0")
    assert alone.failed and alone.releases[0].status(False) == "refused"
    # Copying its CRDs into a folder of its own and naming it lets it build again.
    own = releases_project / "releases/0.3.0/crd"
    own.mkdir(parents=True)
    (own / "gizmos.yaml").write_text(before[CRD])
    _edit(config, "      skipRange:", "      crds: releases/0.3.0/crd\n      skipRange:")
    assert not bundle_build(config=config, version="0.3.0").failed


def test_image_per_release_needs_version_in_the_reference(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    with pytest.raises(ArgumentError, match=r"needs \{version\}") as caught:
        bundle_build(config=config, all_releases=True, image=ImageTarget("r.io/g-bundle:1"))
    assert caught.value.argument == "image"
    layout = releases_project / "oci/{version}"
    target = ImageTarget("r.io/{package}-bundle:v{version}", layout=layout)
    result = bundle_build(config=config, all_releases=True, image=target)
    saved = [r.image for r in result.releases]
    assert [s.reference for s in saved if s] == [
        f"r.io/gizmo-operator-bundle:v{v}" for v in VERSIONS
    ]
    image = read_oci_layout(releases_project / "oci/0.2.0", "v0.2.0")
    assert image.labels["operators.operatorframework.io.bundle.channels.v1"] == "alpha"


# --- publishing the built releases --------------------------------------------------------


def test_catalog_publish_gives_the_channels_and_edges(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    bundle_build(config=config, all_releases=True)
    result = catalog_publish(config=config)
    assert not result.failed and not result.publish.warnings
    written = releases_project / "catalog/gizmo-operator/catalog.yaml"
    golden = GOLDEN / "catalog.yaml"
    if os.environ.get("UPDATE_GOLDEN"):
        shutil.copyfile(written, golden)
    assert written.read_text() == golden.read_text()
    blobs = yamlwrite.plain(yamlwrite.loads_all(written.read_text()))
    package = next(b for b in blobs if b["schema"] == "olm.package")
    assert package["defaultChannel"] == "stable"
    channels = {
        b["name"]: {e["name"].rpartition(".v")[2]: e for e in b["entries"]}
        for b in blobs
        if b["schema"] == "olm.channel"
    }
    assert list(channels["alpha"]) == VERSIONS
    assert list(channels["stable"]) == ["0.3.0", "0.4.0"]
    assert channels["stable"]["0.3.0"]["skipRange"] == ">=0.1.0 <0.3.0"
    assert channels["alpha"]["0.4.0"] == {
        "name": "gizmo-operator.v0.4.0",
        "replaces": "gizmo-operator.v0.3.0",
        "skips": ["gizmo-operator.v0.2.0"],
    }
    images = [b["image"] for b in blobs if b["schema"] == "olm.bundle"]
    assert images == [f"example.com/gizmo-operator-bundle:{v}" for v in VERSIONS]


@requires_opm
def test_opm_accepts_the_published_catalog(releases_project: Path) -> None:
    config = releases_project / "olmtool.yaml"
    bundle_build(config=config, all_releases=True)
    catalog_publish(config=config)
    done = subprocess.run(
        [str(OPM), "validate", str(releases_project / "catalog")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


# --- the command: wiring only -------------------------------------------------------------


def test_build_command_with_releases(
    releases_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(releases_project)
    built = cli("bundle", "build", "--all")
    assert built.returncode == 0, built.exception
    assert "bundle out/gizmo-operator/0.1.0: 4 files, 4 changed (frozen)\n" in built.stdout
    again = cli("bundle", "build", "--all")
    assert again.stdout.splitlines() == [
        "bundle out/gizmo-operator/0.1.0: unchanged (frozen), 4 files",
        "bundle out/gizmo-operator/0.2.0: unchanged, 4 files",
        "bundle out/gizmo-operator/0.3.0: unchanged, 4 files",
        "bundle out/gizmo-operator/0.4.0: unchanged, 4 files",
    ]
    _edit(releases_project / "olmtool.yaml", "Makes gizmos.", "Makes better gizmos.")
    refused = cli("bundle", "build", "--version", "0.1.0", "-o", "json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["status"] == "refused"
    text = cli("bundle", "build", "--version", "0.1.0")
    assert (
        text.stdout
        == f"bundle out/gizmo-operator/0.1.0: refused: frozen, differs ({CSV}): not rewritten\n"
    )
    both = cli("bundle", "build", "--all", "--version", "0.1.0")
    assert (
        both.returncode == 1 and both.error == "--version 0.1.0: pick one release or all, not both"
    )


def test_operator_image_tag_and_catalog_image_use_the_newest_release(
    releases_project: Path,
) -> None:
    from olmtool.actions.image_build import _default_tag

    config = releases_project / "olmtool.yaml"
    with config.open("a") as file:
        file.write('image:\n  name: example.com/gizmo-operator\n  tag: "v{version}"\n')
        file.write("  packages: [gizmo]\n  entrypoint: [gizmo-operator]\n")
    project = load_project(config)
    assert _default_tag(project, project.settings.image) == "v0.4.0"
    error = _config_error(releases_project, "bundle:{version}", "bundle:{tag}")
    assert error.message.startswith("catalog.packages[0].image: 'example.com/gizmo-operator")
    assert "unknown placeholder {tag}" in error.message
    assert error.line == _line_of(
        releases_project, 'image: "example.com/gizmo-operator-bundle:{tag}"'
    )
