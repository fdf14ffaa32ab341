"""``--opm-compat 1.26``: the semver template and the Mermaid graph as opm v1.26.0 makes them.

The unit tests pin v1.26's rules (per-channel semver edges, avoidSkipPatch, the high-water
default channel; Mermaid drawn newer -> older between the skipRange notes) with a fake
bundle renderer. The differential tests run the real opm v1.26 from ``../shared/peers``
(skipped without it): ``opm alpha render-veneer semver`` on bundle images served on
loopback (:class:`tests.catalog.opm_peer.ImageServer`) and ``opm alpha render-graph`` on
catalog directories, and compare the bytes with olmtool's.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.actions import GraphView, catalog_graph, catalog_render
from olmtool.bundle.model import load_bundle
from olmtool.catalog import CatalogFormat, OpmCompat, render_config
from olmtool.catalog.load import load_catalog_strict
from olmtool.catalog.mermaid_opm126 import mermaid_v1_26
from olmtool.catalog.templates import load_template, render_template
from olmtool.catalog.templates.semver_opm126 import semver_channels_v1_26
from olmtool.errors import ArgumentError, InputError
from olmtool.images import build_image
from olmtool.versions import parse_version

from .opm_peer import ImageServer, opm, requires_opm
from .render_fixtures import write_release
from .test_render_opm import bundle_image_files
from .test_templates import fake_renderer, shape, write

REPO = Path(__file__).resolve().parents[2]
DEMO = Path(__file__).parent / "graph" / "demo"
DEMO_126 = Path(__file__).parent / "graph" / "demo-opm126.mmd"


def versions_of(*names: str) -> dict[str, object]:
    return {f"a.v{n}": parse_version(n) for n in names}


# --- semver: v1.26's rules ------------------------------------------------------------------


def test_v1_26_links_each_channel_on_its_own() -> None:
    stable = versions_of("0.1.0", "0.1.1", "0.2.0", "0.2.1", "0.2.2", "1.0.0")
    channels, default = semver_channels_v1_26("a", {"stable": stable}, major=True, minor=True)
    assert shape(channels) == {
        "stable-v0": [
            ("a.v0.1.0", "", []),
            ("a.v0.1.1", "", ["a.v0.1.0"]),
            ("a.v0.2.0", "", []),
            ("a.v0.2.1", "", []),
            ("a.v0.2.2", "a.v0.1.1", ["a.v0.2.0", "a.v0.2.1"]),
        ],
        "stable-v0.1": [("a.v0.1.0", "", []), ("a.v0.1.1", "", ["a.v0.1.0"])],
        # unlike newer opm, no edge leaves a minor channel
        "stable-v0.2": [
            ("a.v0.2.0", "", []),
            ("a.v0.2.1", "", []),
            ("a.v0.2.2", "", ["a.v0.2.0", "a.v0.2.1"]),
        ],
        "stable-v1": [("a.v1.0.0", "", [])],
        "stable-v1.0": [("a.v1.0.0", "", [])],
    }
    assert default == "stable-v1"  # the major channel comes first at the same version


def test_v1_26_avoid_skip_patch_chains_replaces() -> None:
    stable = versions_of("0.1.0", "0.1.1", "0.2.0")
    channels, _ = semver_channels_v1_26(
        "a", {"stable": stable}, major=True, minor=False, avoid_skip_patch=True
    )
    assert shape(channels) == {
        "stable-v0": [
            ("a.v0.1.0", "", []),
            ("a.v0.1.1", "a.v0.1.0", []),
            ("a.v0.2.0", "a.v0.1.1", []),
        ]
    }


def test_v1_26_high_water_channel_is_more_stable_or_higher() -> None:
    versions = {
        "candidate": versions_of("2.0.0", "2.1.0-rc.1"),
        "fast": versions_of("1.0.0", "1.1.0"),
    }
    _, default = semver_channels_v1_26("a", versions, major=False, minor=True)
    assert default == "fast-v1.1"
    # a higher version in a less stable archetype does not win back
    versions["stable"] = versions_of("0.9.0")
    _, default = semver_channels_v1_26("a", versions, major=False, minor=True)
    assert default == "stable-v0.9"
    # v1.26 starts from candidate 0.0.0: nothing at or below it becomes the default
    _, default = semver_channels_v1_26(
        "a", {"candidate": versions_of("0.0.0-rc.1")}, major=False, minor=True
    )
    assert default == ""


def test_v1_26_template_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.semver
        generateMinorChannels: false
        avoidSkipPatch: true
        defaultChannelTypePreference: major
        stable:
          bundles: [{image: x/a-v1.0.0}, {image: x/a-v1.0.1}]
        """,
    )
    with pytest.raises(InputError, match='unknown key "avoidSkipPatch"'):
        load_template(path)
    template = load_template(path, OpmCompat.v1_26)
    # v1.26 ignores what it does not know, and generates nothing when told so
    assert template.ignored == [("olm.semver: defaultChannelTypePreference", 4)]
    config = render_template(template, fake_renderer)
    assert config.channels == []
    assert config.packages[0].default_channel == ""
    assert [b.name for b in config.bundles] == ["a-v1.0.0", "a-v1.0.1"]


def test_v1_26_template_defaults_to_minor_channels(tmp_path: Path) -> None:
    path = write(tmp_path, "schema: olm.semver\nstable: {bundles: [{image: x/a-v1.2.0}]}\n")
    config = render_template(load_template(path, OpmCompat.v1_26), fake_renderer)
    assert [c.name for c in config.channels] == ["stable-v1.2"]
    assert config.packages[0].default_channel == "stable-v1.2"


def test_publish_reads_opm_compat_from_the_catalog_settings(tmp_path: Path) -> None:
    from .test_publish import _project, _publish

    project = _project(tmp_path)
    (project / "template.yaml").write_text(
        "schema: olm.semver\n"
        "generateMajorChannels: true\n"
        "defaultChannelTypePreference: minor\n"
        "stable:\n"
        "  bundles: [{image: bundles/0.1.0}, {image: bundles/0.2.0}, {image: bundles/0.3.0}]\n"
    )
    (project / "olmtool.yaml").write_text(
        "catalog:\n  opmCompat: '1.26'\n"
        "  packages:\n    - name: etcd-operator\n      template: template.yaml\n"
        "      image: example.com/etcd-operator-bundle:{version}\n"
    )
    result = _publish(project)
    assert not result.failed
    warning = result.publish.warnings[0]
    assert (warning.check, warning.line) == ("publish-template-key", 3)
    channels = shape(load_catalog_strict(project / "catalog").channels)
    # v1.26: minor channels have no edges out; the major channel chains the Y-streams
    assert channels["stable-v0.3"] == [("etcd-operator.v0.3.0", "", [])]
    assert channels["stable-v0"][-1] == ("etcd-operator.v0.3.0", "etcd-operator.v0.2.0", [])


# --- Mermaid: v1.26's writer ----------------------------------------------------------------


def test_v1_26_mermaid_golden() -> None:
    """demo-opm126.mmd is what opm v1.26 printed for the demo catalog."""
    assert mermaid_v1_26(load_catalog_strict(DEMO)) == DEMO_126.read_text()


def test_v1_26_mermaid_minimum_edge_and_package() -> None:
    config = load_catalog_strict(DEMO)
    text = mermaid_v1_26(config, minimum_edge="demo.v1.2.0")
    assert "demo.v1.1.0" not in text and '  subgraph "legacy"' not in text
    assert mermaid_v1_26(config, package="legacy").count("subgraph") == 2
    with pytest.raises(InputError, match=re.escape('unknown minimum edge name: "1.2.0"')):
        mermaid_v1_26(config, minimum_edge="1.2.0")
    with pytest.raises(InputError, match='no package "nope"'):
        mermaid_v1_26(config, package="nope")


def test_v1_26_mermaid_needs_a_version_per_bundle(tmp_path: Path) -> None:
    catalog = tmp_path / "c"
    catalog.mkdir()
    (catalog / "c.yaml").write_text(
        "schema: olm.bundle\nname: x.v1\npackage: x\nimage: i\n"
        "properties: [{type: olm.package, value: {packageName: x, version: v1}}]\n"
    )
    with pytest.raises(InputError, match=re.escape('bundle "x.v1" has invalid version "v1"')):
        mermaid_v1_26(load_catalog_strict(catalog))


def test_graph_action_applies_opm_compat_to_mermaid_only() -> None:
    graph = catalog_graph(DEMO, view=GraphView.mermaid, opm_compat=OpmCompat.v1_26)
    assert graph.mermaid == DEMO_126.read_text()
    with pytest.raises(ArgumentError) as caught:
        catalog_graph(DEMO, view=GraphView.tree, opm_compat=OpmCompat.v1_26)
    assert caught.value.argument == "opm_compat"


def test_cli_graph_opm_compat() -> None:
    from tests.test_cli import cli

    done = cli("catalog", "graph", str(DEMO), "-f", "mermaid", "--opm-compat", "1.26")
    assert done.returncode == 0, done.exception
    assert done.stdout == DEMO_126.read_text()
    assert cli("catalog", "graph", str(DEMO), "--opm-compat", "1.26").returncode == 2
    assert cli("catalog", "graph", str(DEMO), "-f", "mermaid", "--opm-compat", "9").returncode == 2


# --- differential: the real opm v1.26 -------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ImageServer]:
    with ImageServer().running() as running:
        yield running


SEMVER_CASES = {
    "minor-and-major": """
        schema: olm.semver
        generateMajorChannels: true
        candidate:
          bundles: [{image: "{0.1.0}"}, {image: "{0.1.1}"}]
        stable:
          bundles: [{image: "{0.1.0}"}, {image: "{0.1.1}"}, {image: "{0.2.0}"},
                    {image: "{0.2.1}"}, {image: "{1.0.0}"}]
        """,
    "avoid-skip-patch": """
        schema: olm.semver
        avoidSkipPatch: true
        generateMajorChannels: true
        stable:
          bundles: [{image: "{0.2.0}"}, {image: "{0.1.0}"}, {image: "{0.1.1}"}]
        """,
    "prereleases-and-unknown-keys": """
        schema: olm.semver
        defaultChannelTypePreference: major
        candidate:
          bundles: [{image: "{2.0.0}"}, {image: "{2.1.0-rc.1}"}, {image: "{2.1.0-rc.10}"}]
        fast:
          bundles: [{image: "{1.0.0}"}, {image: "{1.1.0}"}]
        """,
}


def random_semver_case(seed: int) -> str:
    """A template of random versions spread over the archetypes, with random flags."""
    rng = random.Random(seed)
    versions = sorted(
        {
            f"{rng.randint(0, 2)}.{rng.randint(0, 3)}.{rng.randint(0, 3)}"
            + (f"-rc.{rng.randint(1, 3)}" if rng.random() < 0.15 else "")
            for _ in range(rng.randint(3, 10))
        }
    )
    lines = ["schema: olm.semver"]
    for flag in ("generateMajorChannels", "generateMinorChannels", "avoidSkipPatch"):
        if rng.random() < 0.6:
            lines.append(f"{flag}: {str(rng.random() < 0.5).lower()}")
    for archetype in ("candidate", "fast", "stable"):
        chosen = [v for v in versions if rng.random() < 0.6]
        rng.shuffle(chosen)
        if chosen:
            refs = ", ".join(f'{{image: "{{{v}}}"}}' for v in chosen)
            lines.append(f"{archetype}:\n  bundles: [{refs}]")
    return "\n".join(lines) + "\n"


for _seed in range(8):
    SEMVER_CASES[f"random-{_seed}"] = random_semver_case(_seed)


def render_template_both(
    text: str,
    server: ImageServer,
    work: Path,
    cache: dict[str, tuple[str, Path]],
    kind: str = "semver",
) -> tuple[str, str]:
    """(opm v1.26's JSON, olmtool's JSON with --opm-compat 1.26) for a template whose
    ``"{X.Y.Z}"`` placeholders name gadget-operator releases (built and served once)."""
    for version in sorted(set(re.findall(r'"\{([^}"]+)\}"', text))):
        if version not in cache:
            root = write_release(work / "bundles", version)
            image = build_image(bundle_image_files(root), dict(load_bundle(root).annotations or {}))
            cache[version] = (server.add("gadget/bundle", version, image), root)
        text = text.replace(f'"{{{version}}}"', f'"{cache[version][0]}"')
    path = write(work, text)
    done = opm("alpha", "render-veneer", kind, str(path), "--use-http", "-o", "json", cwd=work)
    assert done.returncode == 0, done.stderr
    directories = {ref: root for ref, root in cache.values()}
    template = load_template(path, OpmCompat.v1_26)
    config = render_template(
        template, lambda ref: catalog_render([directories[ref]], image=ref).bundles[0]
    )
    return done.stdout, render_config(config, CatalogFormat.json, raw_values=True)


@requires_opm
def test_semver_template_is_byte_identical_to_opm_v1_26(
    server: ImageServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("semver")
    cache: dict[str, tuple[str, Path]] = {}
    for name, text in SEMVER_CASES.items():
        case = work / name
        case.mkdir()
        theirs, ours = render_template_both(text, server, case, cache)
        assert ours == theirs, name


BASIC_V1_26 = """
---
schema: olm.package
name: gadget-operator
defaultChannel: stable
description: "Gadgets <b>fast</b> & cheap \\u2028"
---
schema: olm.channel
package: gadget-operator
name: stable
entries:
- name: gadget-operator.v1.0.0
- name: gadget-operator.v1.1.0
  replaces: gadget-operator.v1.0.0
  skipRange: "<1.1.0"
---
schema: olm.bundle
image: "{1.1.0}"
---
schema: olm.bundle
image: "{1.0.0}"
"""


@requires_opm
def test_basic_template_is_byte_identical_to_opm_v1_26(server: ImageServer, tmp_path: Path) -> None:
    """v1.26's basic veneer is the stream form (no olm.template.basic wrapper yet)."""
    theirs, ours = render_template_both(BASIC_V1_26, server, tmp_path, {}, kind="basic")
    assert ours == theirs


def graph_catalogs() -> list[Path]:
    return [DEMO, REPO / "catalog", *sorted((Path(__file__).parent / "corpus").iterdir())]


@requires_opm
def test_mermaid_is_byte_identical_to_opm_v1_26(tmp_path: Path) -> None:
    compared = 0
    for catalog in graph_catalogs():
        done = opm("alpha", "render-graph", str(catalog), cwd=tmp_path)
        try:
            config = load_catalog_strict(catalog)
        except InputError:  # olmtool's loader knows olm.deprecations, v1.26 did not
            continue
        try:
            ours = mermaid_v1_26(config)
        except InputError:
            assert done.returncode != 0, f"{catalog.name}: opm drew it"
            continue
        if done.returncode != 0:  # opm refuses some broken catalogs olmtool loads
            continue
        assert ours == done.stdout, catalog.name
        compared += 1
    assert compared >= 40


@requires_opm
@pytest.mark.parametrize("edge", ["demo.v1.1.0", "demo.v1.2.0", "demo.v1.3.0", "legacy.v0.1.0"])
def test_mermaid_minimum_edge_is_byte_identical_to_opm_v1_26(edge: str, tmp_path: Path) -> None:
    done = opm("alpha", "render-graph", str(DEMO), "--minimum-edge", edge, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert mermaid_v1_26(load_catalog_strict(DEMO), minimum_edge=edge) == done.stdout


# --- validate: olmtool's verdicts are newer opm's ------------------------------------------

# Checks operator-registry added after v1.26 (deprecations, property and name validation,
# release naming, skipRange syntax, unique versions, ...): corpus catalogs failing only
# these pass opm v1.26's validate.
# what opm validate lets through but OLM refuses when the upgrade runs
OLM_RUNTIME_CHECKS = {"crd-upgrade/stored-versions"}
NEWER_OPM_CHECKS = {
    "csv-metadata-multiple",
    "decode",  # of olm.deprecations, a schema v1.26 did not know
    "deprecation-duplicate",
    "deprecation-message",
    "deprecation-reference",
    "duplicate-key",
    "image-reference",
    "package-missing",
    "package-name",
    "property-decode",
    "release-name",
    "skip-range",
    "version-duplicate",
}
# Where olmtool is more lenient than every opm: an icon that is not base64 fails opm's
# decoding of the package (Go's []byte); olmtool warns ("icon", an olmtool check).
LENIENT = {"icon-base64"}


@requires_opm
def test_validate_verdicts_against_opm_v1_26(tmp_path: Path) -> None:
    from olmtool.catalog import validate_catalog

    newer, lenient, agree = [], [], 0
    for case in sorted((Path(__file__).parent / "corpus").iterdir()):
        if not case.is_dir():
            continue
        opm_passes = opm("validate", str(case), cwd=tmp_path).returncode == 0
        errors = {f.check for f in validate_catalog(case).errors}
        if opm_passes == (not errors):
            agree += 1
        elif opm_passes:
            assert errors <= NEWER_OPM_CHECKS | OLM_RUNTIME_CHECKS, (case.name, errors)
            newer.append(case.name)
        else:
            lenient.append(case.name)
    assert set(lenient) == LENIENT
    assert agree >= 50 and len(newer) >= 25
