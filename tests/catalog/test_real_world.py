"""Real-world catalogs and histories that opm accepts and olmtool must accept too (issue 14).

Fixtures written for olmtool, one per class of false failure: a blang wildcard in a
skipRange (``>=2.1.x``), olm.gvk versions that are valid Kubernetes versions but not
``vN(alpha|beta)M`` (``v1alpha``), bundles whose CSVs have no ``replaces``, a newest
bundle without a default channel annotation, a basic template with a key opm ignores.
Where ``../shared/peers/opm`` exists, opm's own verdict is checked on the same input.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.actions import catalog_publish
from olmtool.catalog import declcfg as dc
from olmtool.catalog.load import load_catalog_strict
from olmtool.catalog.model import build_model
from olmtool.catalog.validate import validate_catalog
from olmtool.errors import InputError

from .opm_peer import ImageServer, opm, requires_opm
from .render_fixtures import write_release
from .test_render_opm import bundle_image_files

PACKAGE = "gadget-operator"


def _bundle(version: str, *gvks: dict[str, str]) -> dict[str, Any]:
    return {
        "schema": "olm.bundle",
        "name": f"{PACKAGE}.v{version}",
        "package": PACKAGE,
        "image": f"quay.example.dev/gadgets/bundle:v{version}",
        "properties": [
            {"type": "olm.package", "value": {"packageName": PACKAGE, "version": version}},
            *({"type": "olm.gvk", "value": gvk} for gvk in gvks),
        ],
    }


def _catalog(root: Path, entries: list[dict[str, Any]], bundles: list[dict[str, Any]]) -> Path:
    blobs = [
        {"schema": "olm.package", "name": PACKAGE, "defaultChannel": "stable"},
        {"schema": "olm.channel", "name": "stable", "package": PACKAGE, "entries": entries},
        *bundles,
    ]
    (root / PACKAGE).mkdir(parents=True)
    (root / PACKAGE / "catalog.json").write_text("".join(json.dumps(b) + "\n" for b in blobs))
    return root


# --- a blang wildcard in a skipRange (infinispan) -----------------------------------------


def _wildcard_catalog(root: Path) -> Path:
    versions = ["2.0.9", "2.1.0", "2.1.7", "2.2.0"]
    entries: list[dict[str, Any]] = [{"name": f"{PACKAGE}.v{v}"} for v in versions[:-1]]
    for previous, entry in itertools.pairwise(entries):
        entry["replaces"] = previous["name"]
    entries.append(
        {
            "name": f"{PACKAGE}.v2.2.0",
            "replaces": f"{PACKAGE}.v2.1.7",
            "skipRange": ">=2.1.x <2.2.0",
        }
    )
    return _catalog(root, entries, [_bundle(v) for v in versions])


def test_skip_range_with_a_wildcard_is_valid_and_expands_like_blang(tmp_path: Path) -> None:
    root = _wildcard_catalog(tmp_path)
    report = validate_catalog(root)
    assert not report.errors and not report.warnings, [str(f) for f in report.findings]
    model = build_model(load_catalog_strict(root))
    channel = model.packages[PACKAGE].channels["stable"]
    skipped = sorted(
        e.from_ for e in channel.edges if e.kind == "skipRange" and e.to.endswith("2.2.0")
    )
    assert skipped == [f"{PACKAGE}.v2.1.0", f"{PACKAGE}.v2.1.7"]  # >=2.1.0: not 2.0.9


@requires_opm
def test_opm_accepts_the_wildcard_skip_range_too(tmp_path: Path) -> None:
    assert opm("validate", str(_wildcard_catalog(tmp_path / "c")), cwd=tmp_path).returncode == 0


# --- olm.gvk versions Kubernetes accepts (opendatahub's v1alpha) ---------------------------


def _gvk_catalog(root: Path, version: str) -> Path:
    gvk = {"group": "gadgets.example.dev", "kind": "Gadget", "version": version}
    return _catalog(root, [{"name": f"{PACKAGE}.v1.0.0"}], [_bundle("1.0.0", gvk)])


@pytest.mark.parametrize("version", ["v1alpha", "v1beta", "v2beta0", "v1-preview", "edge"])
def test_gvk_versions_kubernetes_serves_are_valid(tmp_path: Path, version: str) -> None:
    report = validate_catalog(_gvk_catalog(tmp_path, version))
    assert not report.findings, [str(f) for f in report.findings]


@pytest.mark.parametrize("version", ["V1", "1", "v1.2", "v1_alpha", "v" + "a" * 63])
def test_gvk_versions_no_apiserver_serves_stay_findings(tmp_path: Path, version: str) -> None:
    report = validate_catalog(_gvk_catalog(tmp_path, version))
    assert [f.check for f in report.findings] == ["gvk"]
    assert "is not a Kubernetes API version" in report.findings[0].message


@requires_opm
def test_opm_accepts_the_odd_gvk_versions(tmp_path: Path) -> None:
    for version in ("v1alpha", "V1"):
        root = _gvk_catalog(tmp_path / version, version)
        assert opm("validate", str(root), cwd=tmp_path).returncode == 0


# --- publishing a history whose CSVs have no replaces ---------------------------------------


def _project(root: Path, releases: dict[str, dict[str, Any]]) -> Path:
    for version, options in releases.items():
        write_release(root / "bundles", version, **options)
    package = (
        f"    - name: {PACKAGE}\n      bundles: [bundles/*]\n"
        '      image: "example.com/{package}-bundle:{version}"\n'
    )
    (root / "olmtool.yaml").write_text(
        f"catalog:\n  output: catalog\n  format: json\n  packages:\n{package}"
    )
    return root


def _published(root: Path) -> tuple[dc.DeclarativeConfig, list[str]]:
    result = catalog_publish(config=root / "olmtool.yaml")
    assert not result.failed, result.as_dict()
    warnings = [f"[{w.check}] {w.message}" for w in result.publish.warnings]
    return load_catalog_strict(root / "catalog"), warnings


def test_no_replaces_makes_the_newest_the_head_and_chains_by_version(tmp_path: Path) -> None:
    project = _project(tmp_path, {"1.0.0": {}, "1.1.0": {}, "2.0.0": {}})
    config, warnings = _published(project)
    (channel,) = config.channels
    edges = {e.name: (e.replaces, e.skips) for e in channel.entries}
    assert edges == {
        f"{PACKAGE}.v1.0.0": ("", []),
        f"{PACKAGE}.v1.1.0": (f"{PACKAGE}.v1.0.0", []),
        f"{PACKAGE}.v2.0.0": (f"{PACKAGE}.v1.1.0", []),
    }
    (chosen,) = [w for w in warnings if w.startswith("[publish-channel-head]")]
    assert f"{PACKAGE}.v2.0.0, the newest, is the head" in chosen
    assert f"drop the 2 bundle(s) it cannot reach ({PACKAGE}.v1.0.0, {PACKAGE}.v1.1.0)" in chosen


def test_a_partial_history_is_joined_to_the_newest(tmp_path: Path) -> None:
    # 1.1.0 replaces 1.0.0, 2.0.0 replaces nothing; 2.1.0 replaces 2.0.0
    project = _project(
        tmp_path,
        {
            "1.0.0": {},
            "1.1.0": {"replaces": f"{PACKAGE}.v1.0.0"},
            "2.0.0": {},
            "2.1.0": {"replaces": f"{PACKAGE}.v2.0.0"},
        },
    )
    config, warnings = _published(project)
    edges = {e.name: (e.replaces, e.skips) for e in config.channels[0].entries}
    # 2.0.0 (no replaces) now replaces 1.1.0, the other head
    assert edges[f"{PACKAGE}.v2.0.0"] == (f"{PACKAGE}.v1.1.0", [])
    assert edges[f"{PACKAGE}.v2.1.0"] == (f"{PACKAGE}.v2.0.0", [])
    assert any("publish-channel-head" in w and "v2.1.0, the newest" in w for w in warnings)


def test_adding_a_release_without_replaces_makes_it_the_head(tmp_path: Path) -> None:
    from olmtool.actions import catalog_add

    project = _project(tmp_path, {"1.0.0": {}})
    _published(project)
    release = write_release(tmp_path / "later", "1.1.0")
    result = catalog_add(release, catalog=project / "catalog", image="r.example/b:1.1.0")
    (channel,) = result.config.channels
    assert {e.name: e.replaces for e in channel.entries} == {
        f"{PACKAGE}.v1.0.0": "",
        f"{PACKAGE}.v1.1.0": f"{PACKAGE}.v1.0.0",
    }
    assert [w.check for w in result.warnings] == ["publish-channel-head"]
    assert result.as_dict()["warnings"]


def test_a_replaces_naming_no_bundle_is_still_refused(tmp_path: Path) -> None:
    from olmtool.errors import InputError

    project = _project(tmp_path, {"1.0.0": {}, "2.0.0": {"replaces": f"{PACKAGE}.v0.9.0"}})
    with pytest.raises(InputError, match="multiple channel heads"):
        catalog_publish(config=project / "olmtool.yaml")


# --- a skipRange that strands a release: publishing adds no edge no CSV declares --------


def _edit_csv(release: Path, change: Any) -> None:
    path = release / "manifests" / f"{PACKAGE}.clusterserviceversion.yaml"
    csv = yaml.safe_load(path.read_text())
    change(csv)
    path.write_text(yaml.safe_dump(csv))


def _skip_range(text: str) -> Any:
    return lambda csv: csv["metadata"].setdefault("annotations", {}).update({"olm.skipRange": text})


@pytest.mark.parametrize(
    ("skip_range", "because"),
    [
        (">=1.0.0 <1.1.0", "no newer bundle's olm.skipRange contains it either"),
        (
            ">=1.0.0 <2.0.0",
            f"an olm.skipRange of {PACKAGE}.v2.0.0 contains it, but opm counts only replaces "
            "and skips as edges",
        ),
    ],
)
def test_a_stranded_release_is_refused_with_the_csv_to_fix_and_no_skips_is_made_up(
    tmp_path: Path, skip_range: str, because: str
) -> None:
    # 1.1.0 replaces 1.0.0; so does 2.0.0, skipping 1.1.0 in no CSV: 1.1.0 is stranded.
    # publish once wrote `skips: [1.1.0]` into 2.0.0's entry itself, and only warned.
    project = _project(
        tmp_path,
        {
            "1.0.0": {},
            "1.1.0": {"replaces": f"{PACKAGE}.v1.0.0"},
            "2.0.0": {"replaces": f"{PACKAGE}.v1.0.0"},
        },
    )
    _edit_csv(project / "bundles" / "2.0.0", _skip_range(skip_range))
    with pytest.raises(InputError) as refused:
        catalog_publish(config=project / "olmtool.yaml")
    message = str(refused.value)
    assert "would be invalid, nothing written" in message
    assert f"{PACKAGE}.v1.1.0 is stranded (unreachable)" in message
    assert because in message
    assert f"list {PACKAGE}.v1.1.0 in spec.skips of {PACKAGE}.v2.0.0's CSV" in message
    assert not (project / "catalog").exists()

    # the user fixes the CSV: exactly its edges are published, with no warning
    _edit_csv(
        project / "bundles" / "2.0.0",
        lambda csv: csv["spec"].update({"skips": [f"{PACKAGE}.v1.1.0"]}),
    )
    config, warnings = _published(project)
    assert warnings == []
    edges = {e.name: (e.replaces, e.skips) for e in config.channels[0].entries}
    assert edges[f"{PACKAGE}.v2.0.0"] == (f"{PACKAGE}.v1.0.0", [f"{PACKAGE}.v1.1.0"])


def test_catalog_add_makes_up_no_skips_either(tmp_path: Path) -> None:
    from olmtool.actions import catalog_add

    project = _project(tmp_path, {"1.0.0": {}, "1.1.0": {"replaces": f"{PACKAGE}.v1.0.0"}})
    _published(project)
    before = (project / "catalog" / PACKAGE / "catalog.json").read_text()
    release = write_release(tmp_path / "later", "2.0.0", replaces=f"{PACKAGE}.v1.0.0")
    with pytest.raises(InputError) as refused:
        catalog_add(release, catalog=project / "catalog", image="r.example/b:2.0.0")
    assert f"{PACKAGE}.v1.1.0 is stranded (unreachable)" in str(refused.value)
    assert (project / "catalog" / PACKAGE / "catalog.json").read_text() == before


def test_default_channel_falls_back_to_the_newest_bundle_declaring_one(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {
            "1.0.0": {"channels": "stable,fast", "default": "stable"},
            "1.1.0": {"channels": "stable,fast", "default": None, "replaces": f"{PACKAGE}.v1.0.0"},
        },
    )
    config, warnings = _published(project)
    assert config.packages[0].default_channel == "stable"
    (note,) = [w for w in warnings if w.startswith("[publish-default-channel]")]
    assert f"{PACKAGE}.v1.1.0, declares no default channel" in note
    assert f"taken from {PACKAGE}.v1.0.0" in note


def test_a_single_channel_is_the_default_whatever_the_annotation(tmp_path: Path) -> None:
    project = _project(tmp_path, {"1.0.0": {"channels": "alpha", "default": "stable"}})
    config, _ = _published(project)
    assert config.packages[0].default_channel == "alpha"


def _opm_replaces_mode(
    project: Path, versions: list[str], work: Path
) -> list[dict[str, Any]] | str:
    """The project's bundles, served as images, added to an index one release at a time
    in ascending version order (``opm registry add``, replaces mode: how a release
    pipeline grows an index), then rendered: the blobs, or opm's error."""
    from olmtool.bundle.model import load_bundle
    from olmtool.images import build_image

    work.mkdir()
    with ImageServer().running() as server:
        for version in versions:
            root = project / "bundles" / version
            image = build_image(bundle_image_files(root), dict(load_bundle(root).annotations or {}))
            reference = server.add(f"gadgets/bundle-{version}", "v1", image)
            added = opm(
                "registry", "add", "-b", reference, "-d", "index.db", "--use-http", cwd=work
            )
            if added.returncode != 0:
                return "\n".join(x for x in added.stderr.splitlines() if "level=error" in x)
    rendered = opm("render", str(work / "index.db"), "-o", "json", cwd=work)
    assert rendered.returncode == 0, rendered.stderr
    decoder, text, index, blobs = json.JSONDecoder(), rendered.stdout, 0, []
    while text[index:].strip():
        blob, index = decoder.raw_decode(text, len(text) - len(text[index:].lstrip()))
        blobs.append(blob)
    return blobs


@requires_opm
def test_opm_replaces_mode_picks_the_same_head_and_default(tmp_path: Path) -> None:
    releases = {
        "1.0.0": {"channels": "stable,fast", "default": "stable"},
        "1.1.0": {"channels": "stable,fast", "default": None},
        "2.0.0": {"channels": "stable,fast", "default": "fast"},
    }
    project = _project(tmp_path / "project", releases)
    ours, _ = _published(project)
    theirs = _opm_replaces_mode(project, list(releases), tmp_path / "opm")
    assert not isinstance(theirs, str), theirs
    (package,) = [b for b in theirs if b["schema"] == "olm.package"]
    assert package["defaultChannel"] == ours.packages[0].default_channel == "fast"
    their_heads = {
        c["name"]: c["entries"][0]["name"] for c in theirs if c["schema"] == "olm.channel"
    }
    model = build_model(ours)
    our_heads = {name: ch.heads[0] for name, ch in model.packages[PACKAGE].channels.items()}
    assert their_heads == our_heads == {"fast": f"{PACKAGE}.v2.0.0", "stable": f"{PACKAGE}.v2.0.0"}


@requires_opm
def test_opm_falls_back_to_the_same_default_channel(tmp_path: Path) -> None:
    releases = {
        "1.0.0": {"channels": "stable,fast", "default": "stable"},
        "1.1.0": {"channels": "stable,fast", "default": None},
    }
    project = _project(tmp_path / "project", releases)
    ours, _ = _published(project)
    theirs = _opm_replaces_mode(project, list(releases), tmp_path / "opm")
    assert not isinstance(theirs, str), theirs
    (package,) = [b for b in theirs if b["schema"] == "olm.package"]
    assert package["defaultChannel"] == ours.packages[0].default_channel == "stable"


@requires_opm
def test_opm_makes_the_newest_the_head_of_a_history_without_replaces(tmp_path: Path) -> None:
    """opm's replaces mode prunes the older bundles; olmtool keeps them, chained."""
    releases: dict[str, dict[str, Any]] = {"1.0.0": {}, "1.1.0": {}, "2.0.0": {}}
    project = _project(tmp_path / "project", releases)
    ours, _ = _published(project)
    theirs = _opm_replaces_mode(project, list(releases), tmp_path / "opm")
    assert not isinstance(theirs, str), theirs
    (channel,) = [b for b in theirs if b["schema"] == "olm.channel"]
    assert [e["name"] for e in channel["entries"]] == [f"{PACKAGE}.v2.0.0"]
    assert build_model(ours).packages[PACKAGE].channels["stable"].heads == [f"{PACKAGE}.v2.0.0"]


# --- a basic template with a key opm ignores -----------------------------------------------


def test_basic_template_with_a_name_key_publishes_with_a_warning(tmp_path: Path) -> None:
    write_release(tmp_path / "bundles", "1.0.0")
    (tmp_path / "template.yaml").write_text(
        "schema: olm.template.basic\n"
        "name: gadget-catalog\n"  # opm's json.Unmarshal ignores it
        "entries:\n"
        f"  - schema: olm.package\n    name: {PACKAGE}\n    defaultChannel: stable\n"
        f"  - schema: olm.channel\n    package: {PACKAGE}\n    name: stable\n"
        f"    entries:\n      - name: {PACKAGE}.v1.0.0\n"
        "  - schema: olm.bundle\n    image: bundles/1.0.0\n"
    )
    (tmp_path / "olmtool.yaml").write_text(
        "catalog:\n  output: catalog\n  packages:\n"
        f"    - name: {PACKAGE}\n      template: template.yaml\n"
        '      image: "example.com/{package}-bundle:{version}"\n'
    )
    config, warnings = _published(tmp_path)
    assert [b.name for b in config.bundles] == [f"{PACKAGE}.v1.0.0"]
    assert warnings == [
        "[publish-template-key] olm.template.basic: name: not a key of the template; "
        "ignored, as opm ignores it"
    ]
