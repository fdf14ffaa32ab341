"""Catalog templates: basic, semver (ported from operator-registry's semver_test.go) and
substitutes, with a fake bundle renderer instead of image pulls."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from olmtool.catalog import declcfg as dc
from olmtool.catalog.templates import (
    BasicTemplate,
    SemverTemplate,
    SubstitutesTemplate,
    load_template,
    render_template,
    semver_channels,
    single_bundle_renderer,
)
from olmtool.errors import InputError
from olmtool.versions import parse_version

_REF = re.compile(r"^(?P<package>[a-z0-9]+?)[.-]v(?P<version>[0-9].*)$")


def fake_renderer(ref: str) -> dc.Bundle:
    """``repo/origin/a-v1.2.3`` or ``quay.io/foo/olm:a.v1.2.3`` -> bundle of package a, 1.2.3."""
    last = ref.rsplit("/", 1)[-1].split(":")[-1]
    match = _REF.match(last)
    assert match, ref
    package, version = match.group("package"), match.group("version")
    return dc.Bundle(
        name=last,
        package=package,
        image=ref,
        properties=[dc.Property(dc.PROP_PACKAGE, {"packageName": package, "version": version})],
    )


class CountingRenderer:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, ref: str) -> dc.Bundle:
        self.calls.append(ref)
        return fake_renderer(ref)


def write(tmp_path: Path, text: str, name: str = "template.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def shape(channels: list[dc.Channel]) -> dict[str, list[tuple[str, str, list[str]]]]:
    """Channels as {name: [(entry, replaces, skips)]}, in output order."""
    return {c.name: [(e.name, e.replaces, e.skips) for e in c.entries] for c in channels}


def versions(*names: str) -> dict[str, Any]:
    """bundle name a-vX.Y.Z -> parsed version."""
    return {name: parse_version(name.split("-v", 1)[1]) for name in names}


def error_of(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        render_template(load_template(path), fake_renderer)
    return info.value


# --- semver: upstream TestLinkChannels (major channels), via semver_channels ------------------


def major_only(stable: dict[str, Any], candidate: dict[str, Any] | None = None) -> Any:
    channels, _ = semver_channels(
        "a",
        {"stable": stable, "candidate": candidate or {}},
        major=True,
        minor=False,
        preference="major",
    )
    return shape(channels)


def test_no_edges_between_successive_major_channels() -> None:
    stable = versions(
        "a-v0.1.0",
        "a-v0.1.1",
        "a-v1.1.0",
        "a-v1.2.1",
        "a-v1.3.1",
        "a-v2.1.0",
        "a-v2.1.1",
        "a-v2.3.1",
        "a-v2.3.2",
    )
    assert major_only(stable) == {
        "stable-v0": [("a-v0.1.0", "", []), ("a-v0.1.1", "", ["a-v0.1.0"])],
        "stable-v1": [
            ("a-v1.1.0", "", []),
            ("a-v1.2.1", "a-v1.1.0", []),
            ("a-v1.3.1", "a-v1.2.1", ["a-v1.1.0"]),
        ],
        "stable-v2": [
            ("a-v2.1.0", "", []),
            ("a-v2.1.1", "", ["a-v2.1.0"]),
            ("a-v2.3.1", "", []),
            ("a-v2.3.2", "a-v2.1.1", ["a-v2.1.0", "a-v2.3.1"]),
        ],
    }


def test_no_edges_between_major_channels_when_last_edge_is_x_change() -> None:
    stable = versions("a-v0.1.0", "a-v0.1.1", "a-v1.1.0", "a-v1.2.1", "a-v1.3.1", "a-v2.1.0")
    assert major_only(stable) == {
        "stable-v0": [("a-v0.1.0", "", []), ("a-v0.1.1", "", ["a-v0.1.0"])],
        "stable-v1": [
            ("a-v1.1.0", "", []),
            ("a-v1.2.1", "a-v1.1.0", []),
            ("a-v1.3.1", "a-v1.2.1", ["a-v1.1.0"]),
        ],
        "stable-v2": [("a-v2.1.0", "", [])],
    }


def test_no_edges_between_major_channels_when_last_edge_is_archetype_change() -> None:
    stable = versions("a-v1.1.0", "a-v1.2.1", "a-v1.3.1", "a-v2.1.0", "a-v2.1.1", "a-v2.3.1")
    assert major_only(stable, versions("a-v2.3.2")) == {
        "candidate-v2": [("a-v2.3.2", "", [])],
        "stable-v1": [
            ("a-v1.1.0", "", []),
            ("a-v1.2.1", "a-v1.1.0", []),
            ("a-v1.3.1", "a-v1.2.1", ["a-v1.1.0"]),
        ],
        "stable-v2": [
            ("a-v2.1.0", "", []),
            ("a-v2.1.1", "", ["a-v2.1.0"]),
            ("a-v2.3.1", "a-v2.1.1", ["a-v2.1.0"]),
        ],
    }


def test_minimum_viable_major_channel() -> None:
    assert major_only(versions("a-v0.1.0")) == {"stable-v0": [("a-v0.1.0", "", [])]}


# --- semver: upstream TestGenerateChannels -------------------------------------------------

STABLE = versions(
    "a-v0.1.0",
    "a-v0.1.1",
    "a-v1.1.0",
    "a-v1.2.1",
    "a-v1.3.1",
    "a-v2.1.0",
    "a-v1.3.1-beta",
    "a-v2.1.1",
    "a-v2.3.1",
    "a-v2.3.2",
    "a-v3.1.0",
    "a-v3.1.1",
    "a-v1.3.1-alpha",
    "a-v1.4.1",
    "a-v1.4.1-beta1",
    "a-v1.4.1-beta2",
)

MAJOR_LINKED = {
    "stable-v0": [("a-v0.1.0", "", []), ("a-v0.1.1", "", ["a-v0.1.0"])],
    "stable-v1": [
        ("a-v1.1.0", "", []),
        ("a-v1.2.1", "a-v1.1.0", []),
        ("a-v1.3.1-alpha", "", []),
        ("a-v1.3.1-beta", "", []),
        ("a-v1.3.1", "a-v1.2.1", ["a-v1.1.0", "a-v1.3.1-alpha", "a-v1.3.1-beta"]),
        ("a-v1.4.1-beta1", "", []),
        ("a-v1.4.1-beta2", "", []),
        (
            "a-v1.4.1",
            "a-v1.3.1",
            [
                "a-v1.1.0",
                "a-v1.2.1",
                "a-v1.3.1-alpha",
                "a-v1.3.1-beta",
                "a-v1.4.1-beta1",
                "a-v1.4.1-beta2",
            ],
        ),
    ],
    "stable-v2": [
        ("a-v2.1.0", "", []),
        ("a-v2.1.1", "", ["a-v2.1.0"]),
        ("a-v2.3.1", "", []),
        ("a-v2.3.2", "a-v2.1.1", ["a-v2.1.0", "a-v2.3.1"]),
    ],
    "stable-v3": [("a-v3.1.0", "", []), ("a-v3.1.1", "", ["a-v3.1.0"])],
}

MINOR_LINKED = {
    "stable-v0.1": [("a-v0.1.0", "", []), ("a-v0.1.1", "", ["a-v0.1.0"])],
    "stable-v1.1": [("a-v1.1.0", "", [])],
    "stable-v1.2": [("a-v1.2.1", "a-v1.1.0", [])],
    "stable-v1.3": [
        ("a-v1.3.1-alpha", "", []),
        ("a-v1.3.1-beta", "", []),
        ("a-v1.3.1", "a-v1.2.1", ["a-v1.1.0", "a-v1.3.1-alpha", "a-v1.3.1-beta"]),
    ],
    "stable-v1.4": [
        ("a-v1.4.1-beta1", "", []),
        ("a-v1.4.1-beta2", "", []),
        (
            "a-v1.4.1",
            "a-v1.3.1",
            [
                "a-v1.1.0",
                "a-v1.2.1",
                "a-v1.3.1-alpha",
                "a-v1.3.1-beta",
                "a-v1.4.1-beta1",
                "a-v1.4.1-beta2",
            ],
        ),
    ],
    "stable-v2.1": [("a-v2.1.0", "", []), ("a-v2.1.1", "", ["a-v2.1.0"])],
    "stable-v2.3": [("a-v2.3.1", "", []), ("a-v2.3.2", "a-v2.1.1", ["a-v2.1.0", "a-v2.3.1"])],
    "stable-v3.1": [("a-v3.1.0", "", []), ("a-v3.1.1", "", ["a-v3.1.0"])],
}

COMBINED_LINKED = dict(sorted({**MINOR_LINKED, **MAJOR_LINKED}.items()))


@pytest.mark.parametrize(
    ("minor", "major", "preference", "default", "expected"),
    [
        pytest.param(True, False, "minor", "stable-v3.1", MINOR_LINKED, id="minor channels"),
        pytest.param(False, True, "major", "stable-v3", MAJOR_LINKED, id="major channels"),
        pytest.param(True, True, "minor", "stable-v3.1", COMBINED_LINKED, id="prefer minor"),
        pytest.param(True, True, "major", "stable-v3", COMBINED_LINKED, id="prefer major"),
        pytest.param(True, False, "major", "stable-v3.1", MINOR_LINKED, id="mismatch minor/major"),
        pytest.param(False, True, "minor", "stable-v3", MAJOR_LINKED, id="mismatch major/minor"),
    ],
)
def test_generate_channels(
    minor: bool, major: bool, preference: str, default: str, expected: dict[str, Any]
) -> None:
    channels, default_channel = semver_channels(
        "a", {"stable": STABLE}, major=major, minor=minor, preference=preference
    )
    assert shape(channels) == expected
    assert list(shape(channels)) == list(expected)  # sorted by name, like upstream
    assert default_channel == default
    assert all(c.package == "a" for c in channels)


def test_high_water_compares_channels_at_their_lowest_version() -> None:
    """Upstream's quirk, kept: stable-v3.2 starts at 3.2.0 > stable-v3's 3.1.0."""
    stable = versions("a-v3.1.0", "a-v3.2.0")
    _, default = semver_channels(
        "a", {"stable": stable}, major=True, minor=True, preference="major"
    )
    assert default == "stable-v3.2"
    _, default = semver_channels(
        "a",
        {"stable": versions("a-v3.1.0", "a-v3.1.1")},
        major=True,
        minor=True,
        preference="major",
    )
    assert default == "stable-v3"


def test_high_water_prefers_the_most_stable_archetype() -> None:
    channels, default = semver_channels(
        "a",
        {
            "candidate": versions("a-v2.0.0"),
            "fast": versions("a-v1.5.0"),
            "stable": versions("a-v1.0.0"),
        },
        major=False,
        minor=True,
        preference="minor",
    )
    assert [c.name for c in channels] == ["candidate-v2.0", "fast-v1.5", "stable-v1.0"]
    assert default == "stable-v1.0"


def test_high_water_with_only_zero_prereleases_still_picks_a_channel() -> None:
    """Upstream would leave the default empty here (its phantom start is 0.0.0)."""
    _, default = semver_channels(
        "a",
        {"candidate": versions("a-v0.0.0-alpha")},
        major=False,
        minor=True,
        preference="minor",
    )
    assert default == "candidate-v0.0"


def test_prerelease_precedence_is_semver_not_text() -> None:
    stable = versions("a-v1.0.0-rc.10", "a-v1.0.0-rc.2", "a-v1.0.0-rc.a", "a-v1.0.0")
    channels, _ = semver_channels(
        "a", {"stable": stable}, major=False, minor=True, preference="minor"
    )
    names = [e.name for e in channels[0].entries]
    assert names == ["a-v1.0.0-rc.2", "a-v1.0.0-rc.10", "a-v1.0.0-rc.a", "a-v1.0.0"]


# --- semver: rendering whole templates ----------------------------------------------------

READ_FILE_TEMPLATE = """
---
schema: olm.semver
generateMajorChannels: {major}
generateMinorChannels: {minor}
defaultChannelTypePreference: {preference}
candidate:
    bundles:
        - image: quay.io/foo/olm:testoperator.v0.1.0
        - image: quay.io/foo/olm:testoperator.v0.1.1
        - image: quay.io/foo/olm:testoperator.v0.1.2
        - image: quay.io/foo/olm:testoperator.v0.1.3
        - image: quay.io/foo/olm:testoperator.v0.2.0
        - image: quay.io/foo/olm:testoperator.v0.2.1
        - image: quay.io/foo/olm:testoperator.v0.2.2
        - image: quay.io/foo/olm:testoperator.v0.3.0
        - image: quay.io/foo/olm:testoperator.v1.0.0
        - image: quay.io/foo/olm:testoperator.v1.0.1
        - image: quay.io/foo/olm:testoperator.v1.1.0
fast:
    bundles:
        - image: quay.io/foo/olm:testoperator.v0.2.1
        - image: quay.io/foo/olm:testoperator.v0.2.2
        - image: quay.io/foo/olm:testoperator.v0.3.0
        - image: quay.io/foo/olm:testoperator.v1.0.1
        - image: quay.io/foo/olm:testoperator.v1.1.0
stable:
    bundles:
        - image: quay.io/foo/olm:testoperator.v1.0.1
"""


def t(version: str) -> str:
    return f"testoperator.v{version}"


def test_semver_template_renders_package_channels_and_bundles(tmp_path: Path) -> None:
    path = write(
        tmp_path, READ_FILE_TEMPLATE.format(major="false", minor="true", preference="minor")
    )
    template = load_template(path)
    assert isinstance(template, SemverTemplate)
    renderer = CountingRenderer()
    config = render_template(template, renderer)

    assert len(renderer.calls) == 11  # each distinct image once
    assert [p.name for p in config.packages] == ["testoperator"]
    assert config.packages[0].default_channel == "stable-v1.0"
    assert [b.name for b in config.bundles] == [
        t(v)
        for v in (
            "0.1.0",
            "0.1.1",
            "0.1.2",
            "0.1.3",
            "0.2.0",
            "0.2.1",
            "0.2.2",
            "0.3.0",
            "1.0.0",
            "1.0.1",
            "1.1.0",
        )
    ]
    assert config.bundles[0].origin.line == 8  # the template entry it was rendered from
    assert shape(config.channels) == {
        "candidate-v0.1": [
            (t("0.1.0"), "", []),
            (t("0.1.1"), "", []),
            (t("0.1.2"), "", []),
            (t("0.1.3"), "", [t("0.1.0"), t("0.1.1"), t("0.1.2")]),
        ],
        "candidate-v0.2": [
            (t("0.2.0"), "", []),
            (t("0.2.1"), "", []),
            (t("0.2.2"), t("0.1.3"), [t("0.1.0"), t("0.1.1"), t("0.1.2"), t("0.2.0"), t("0.2.1")]),
        ],
        "candidate-v0.3": [
            (
                t("0.3.0"),
                t("0.2.2"),
                [t("0.1.0"), t("0.1.1"), t("0.1.2"), t("0.1.3"), t("0.2.0"), t("0.2.1")],
            )
        ],
        "candidate-v1.0": [(t("1.0.0"), "", []), (t("1.0.1"), "", [t("1.0.0")])],
        "candidate-v1.1": [(t("1.1.0"), t("1.0.1"), [t("1.0.0")])],
        "fast-v0.2": [(t("0.2.1"), "", []), (t("0.2.2"), "", [t("0.2.1")])],
        "fast-v0.3": [(t("0.3.0"), t("0.2.2"), [t("0.2.1")])],
        "fast-v1.0": [(t("1.0.1"), "", [])],
        "fast-v1.1": [(t("1.1.0"), t("1.0.1"), [])],
        "stable-v1.0": [(t("1.0.1"), "", [])],
    }
    assert all(c.package == "testoperator" for c in config.channels)


@pytest.mark.parametrize(
    ("major", "minor", "preference", "default"),
    [
        ("true", "true", "minor", "stable-v1.0"),
        ("true", "true", "major", "stable-v1"),
        ("true", "false", '""', "stable-v1"),
        ("false", "false", '""', "stable-v1.0"),
    ],
)
def test_semver_default_channel(
    tmp_path: Path, major: str, minor: str, preference: str, default: str
) -> None:
    text = READ_FILE_TEMPLATE.format(major=major, minor=minor, preference=preference)
    config = render_template(load_template(write(tmp_path, text)), fake_renderer)
    assert config.packages[0].default_channel == default


def test_semver_defaults_to_minor_channels(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.semver
        stable:
          bundles:
            - image: repo/origin/a-v1.0.0
            - image: repo/origin/a-v1.1.0
        """,
    )
    template = load_template(path)
    assert isinstance(template, SemverTemplate)
    assert template.generate_minor_channels and not template.generate_major_channels
    assert template.default_channel_type_preference == "minor"
    config = render_template(template, fake_renderer)
    assert shape(config.channels) == {
        "stable-v1.0": [("a-v1.0.0", "", [])],
        "stable-v1.1": [("a-v1.1.0", "a-v1.0.0", [])],
    }
    assert config.packages[0].default_channel == "stable-v1.1"


def test_semver_output_does_not_depend_on_listing_order(tmp_path: Path) -> None:
    images = [f"repo/origin/a-v{v}" for v in ("1.0.0", "1.0.1", "1.1.0", "2.0.0", "1.1.0-rc.1")]

    def render(order: list[str]) -> dict[str, Any]:
        lines = "\n".join(f"    - image: {i}" for i in order)
        text = f"schema: olm.semver\ngenerateMajorChannels: true\nstable:\n  bundles:\n{lines}\n"
        config = render_template(load_template(write(tmp_path, text)), fake_renderer)
        return {"channels": shape(config.channels), "default": config.packages[0].default_channel}

    assert render(images) == render(list(reversed(images)))


def test_semver_same_bundle_in_several_archetypes_is_rendered_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.semver
        candidate: {bundles: [{image: repo/origin/a-v1.0.0}]}
        stable: {bundles: [{image: repo/origin/a-v1.0.0}]}
        """,
    )
    renderer = CountingRenderer()
    config = render_template(load_template(path), renderer)
    assert renderer.calls == ["repo/origin/a-v1.0.0"]
    assert [b.name for b in config.bundles] == ["a-v1.0.0"]
    assert [c.name for c in config.channels] == ["candidate-v1.0", "stable-v1.0"]


def test_semver_json_template(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"schema": "olm.semver", "generateMajorChannels": true, "generateMinorChannels": false,\n'
        ' "stable": {"bundles": [{"image": "repo/origin/a-v1.0.0"}]}}\n',
        "template.json",
    )
    config = render_template(load_template(path), fake_renderer)
    assert config.packages[0].default_channel == "stable-v1"


# --- semver: upstream TestReadFile and TestBailOnVersionBuildMetadata, and other errors ----


def test_semver_unknown_key_names_file_and_line(tmp_path: Path) -> None:
    text = READ_FILE_TEMPLATE.format(major="true", minor="true", preference="minor")
    text += "invalid:\n    bundles:\n        - image: quay.io/foo/olm:testoperator.v1.0.1\n"
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_template(path)
    assert info.value.line == 29
    assert str(info.value).startswith(f"{info.value.path}:29: ")
    assert 'unknown key "invalid"' in str(info.value)


@pytest.mark.parametrize(
    ("major", "minor", "preference", "message", "line"),
    [
        ("true", "false", "minor", 'defaultChannelTypePreference "minor" needs', 5),
        ("false", "true", "major", 'defaultChannelTypePreference "major" needs', 5),
        ("false", "true", "foo", 'unknown defaultChannelTypePreference "foo"', 5),
        ('"yes"', "true", "minor", "generateMajorChannels must be true or false", 3),
    ],
)
def test_semver_bad_settings(
    tmp_path: Path, major: str, minor: str, preference: str, message: str, line: int
) -> None:
    text = READ_FILE_TEMPLATE.format(major=major, minor=minor, preference=preference)
    with pytest.raises(InputError, match=message) as info:
        load_template(write(tmp_path, text))
    assert info.value.line == line


def test_semver_bails_on_versions_differing_only_in_build_metadata(tmp_path: Path) -> None:
    images = [
        "a-v0.1.0",
        "a-v0.1.1",
        "a-v1.1.0",
        "a-v1.2.1",
        "a-v1.3.1",
        "a-v2.1.0",
        "a-v2.1.1",
        "a-v2.3.1",
        "a-v2.3.2",
        "a-v1.3.1-alpha",
        "a-v1.3.1-alpha+2001Jan21",
        "a-v1.3.1-alpha+2003May06",
    ]
    lines = "\n".join(f"    - image: repo/origin/{i}" for i in images)
    path = write(tmp_path, f"schema: olm.semver\nstable:\n  bundles:\n{lines}\n")
    error = error_of(path)
    assert "differ only in build metadata" in str(error)
    assert error.line == 14  # a-v1.3.1-alpha+2001Jan21 clashes with a-v1.3.1-alpha


def test_semver_build_metadata_in_different_archetypes_is_allowed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.semver
        candidate: {bundles: [{image: repo/origin/a-v1.0.0+1}]}
        stable: {bundles: [{image: repo/origin/a-v1.0.0+2}]}
        """,
    )
    config = render_template(load_template(path), fake_renderer)
    assert [c.name for c in config.channels] == ["candidate-v1.0", "stable-v1.0"]


@pytest.mark.parametrize(
    ("bundles", "message", "line"),
    [
        (["a-v1.0.0", "b-v1.1.0"], 'belongs to package "b", but the template\'s first', 5),
        (["a-v1.0.0", "a-v1.0.0"], 'bundle "a-v1.0.0" (repo/origin/a-v1.0.0) is listed twice', 5),
        (["a-v1.0.0", "a-v1.0"], "'1.0', which is not a semantic version", 5),
        (["a-v1.0.0", "a-v1.0.0+build"], "differ only in build metadata", 5),
    ],
)
def test_semver_bad_bundles(tmp_path: Path, bundles: list[str], message: str, line: int) -> None:
    lines = "\n".join(f"    - image: repo/origin/{b}" for b in bundles)
    path = write(tmp_path, f"schema: olm.semver\nstable:\n  bundles:\n{lines}\n")
    error = error_of(path)
    assert message in str(error)
    assert error.line == line
    assert str(error).startswith(f"{error.path}:{line}: ")


def test_semver_same_version_under_two_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.semver
        stable:
          bundles:
            - image: repo/origin/a-v1.0.0
            - image: other/a-v1.0.0-copy
        """,
    )

    def renderer(ref: str) -> dc.Bundle:
        bundle = fake_renderer(ref.replace("-copy", ""))
        return dc.Bundle("a-copy", "a", ref, bundle.properties) if "copy" in ref else bundle

    with pytest.raises(InputError, match="have the same version") as info:
        render_template(load_template(path), renderer)
    assert info.value.line == 5


def test_semver_two_references_rendering_to_one_bundle_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.semver
        stable:
          bundles:
            - image: repo/origin/a-v1.0.0
            - image: mirror/origin/a-v1.0.0
        """,
    )
    with pytest.raises(InputError, match=re.escape('both render to bundle "a-v1.0.0"')) as info:
        render_template(load_template(path), fake_renderer)
    assert info.value.line == 5


def test_semver_bundle_without_package_property(tmp_path: Path) -> None:
    path = write(tmp_path, "schema: olm.semver\nstable: {bundles: [{image: x/a-v1.0.0}]}\n")
    with pytest.raises(InputError, match=re.escape("0 olm.package properties, expected exactly 1")):
        render_template(load_template(path), lambda ref: dc.Bundle("a.v1", "a", ref))


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("schema: olm.semver\n", "lists no bundles", 1),
        ("schema: olm.semver\nstable: {bundles: []}\n", "lists no bundles", 1),
        ("schema: olm.semver\nstable: []\n", "stable must be an object, found a list", 2),
        ("schema: olm.semver\nstable:\n  bundle: []\n", 'stable: unknown key "bundle"', 3),
        (
            "schema: olm.semver\nstable:\n  bundles:\n    - image: x\n      name: y\n",
            'stable.bundles[0]: unknown key "name"',
            5,
        ),
        ("schema: olm.semver\nstable:\n  bundles:\n    - {}\n", 'needs an "image"', 4),
        ("schema: olm.semver\nstable:\n  bundles:\n    - image: 3\n", "must be a string", 4),
        (
            "schema: olm.semver\nstable: {bundles: [{image: x/a-v1.0.0}]}\n---\nschema: olm.package\n",
            "single document",
            4,
        ),
    ],
)
def test_semver_bad_template(tmp_path: Path, text: str, message: str, line: int) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as info:
        load_template(write(tmp_path, text))
    assert info.value.line == line


# --- basic template --------------------------------------------------------------------------

BASIC = """
schema: olm.template.basic
entries:
  - schema: olm.package
    name: a
    defaultChannel: stable
  - schema: olm.channel
    package: a
    name: stable
    entries:
      - name: a-v1.0.0
      - name: a-v1.1.0
        replaces: a-v1.0.0
  - schema: olm.bundle
    image: repo/origin/a-v1.0.0
  - schema: olm.bundle
    image: repo/origin/a-v1.1.0
  - schema: olm.deprecations
    package: a
    entries:
      - reference: {schema: olm.bundle, name: a-v1.0.0}
        message: use 1.1
  - schema: example.custom
    package: a
    name: extra
    data: 1
"""


def test_basic_template_renders_bundle_entries_and_keeps_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path, BASIC)
    template = load_template(path)
    assert isinstance(template, BasicTemplate)
    assert [r.image for r in template.bundles] == ["repo/origin/a-v1.0.0", "repo/origin/a-v1.1.0"]
    config = render_template(template, fake_renderer)
    assert [(p.name, p.default_channel) for p in config.packages] == [("a", "stable")]
    assert shape(config.channels) == {
        "stable": [("a-v1.0.0", "", []), ("a-v1.1.0", "a-v1.0.0", [])]
    }
    assert [b.name for b in config.bundles] == ["a-v1.0.0", "a-v1.1.0"]
    assert config.bundles[0].version == "1.0.0"
    assert config.bundles[1].origin.line == 15
    assert config.channels[0].origin.line == 6
    assert config.deprecations[0].entries[0].message == "use 1.1"
    assert [(m.schema, m.name, m.blob["data"]) for m in config.others] == [
        ("example.custom", "extra", 1)
    ]
    # the template is not changed by rendering: rendering again gives the same result
    assert render_template(template, fake_renderer) == config


def test_basic_template_stream_form_yaml(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        ---
        schema: olm.package
        name: a
        defaultChannel: stable
        ---
        schema: olm.channel
        package: a
        name: stable
        entries: [{name: a-v1.0.0}]
        ---
        schema: olm.bundle
        image: repo/origin/a-v1.0.0
        """,
    )
    template = load_template(path)
    assert isinstance(template, BasicTemplate)
    config = render_template(template, fake_renderer)
    assert [p.name for p in config.packages] == ["a"]
    assert [b.name for b in config.bundles] == ["a-v1.0.0"]
    assert config.bundles[0].origin.line == 11


def test_basic_template_stream_form_json(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"schema": "olm.package", "name": "a"}\n'
        '{"schema": "olm.bundle",\n "image": "repo/origin/a-v1.0.0"}\n'
        '{"schema": "olm.bundle", "image": "repo/origin/a-v1.1.0", "name": "x"}\n',
        "template.json",
    )
    # opm decodes a bundle entry's other keys (a name) and ignores them
    template = load_template(path)
    assert [b.image for b in template.bundles] == ["repo/origin/a-v1.0.0", "repo/origin/a-v1.1.0"]
    assert template.ignored == [("blob: name", 4)]  # concatenated JSON: where the blob starts


def test_basic_template_json_wrapper(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "schema": "olm.template.basic",
          "entries": [
            {"schema": "olm.package", "name": "a"},
            {"schema": "olm.bundle", "image": "repo/origin/a-v1.0.0"},
            {"schema": "olm.bundle", "image": "repo/origin/a-v2.0.0", "package": "a"}
          ]
        }
        """,
        "template.json",
    )
    with pytest.raises(InputError, match='found "package"') as info:
        load_template(path)
    assert info.value.line == 6


def test_basic_template_with_no_entries_is_empty(tmp_path: Path) -> None:
    template = load_template(write(tmp_path, "schema: olm.template.basic\nentries: []\n"))
    assert render_template(template, fake_renderer) == dc.DeclarativeConfig()


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            "schema: olm.template.basic\nentries:\n  - schema: olm.bundle\n"
            "    image: x\n    properties: [{type: a, value: 1}]\n",
            'found "properties"',
            5,
        ),
        (
            "schema: olm.template.basic\nentries:\n  - schema: olm.bundle\n"
            "    image: x\n    package: a\n",
            'holds only "schema" and "image"',
            5,
        ),
        (
            "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: a\n"
            "  - schema: olm.bundle\n",
            'olm.bundle entry needs an "image"',
            5,
        ),
        ("schema: olm.template.basic\n", 'needs "entries"', 1),
        ("schema: olm.template.basic\nentries: {}\n", "entries must be a list", 2),
        ("schema: olm.template.basic\nentries:\n  - 3\n", "entries[0] must be an object", 3),
        ("schema: olm.template.basic\nentries:\n  - name: a\n", 'has no "schema" key', 3),
        (
            "schema: olm.template.basic\nentries:\n  - schema: olm.channel\n"
            "    name: stable\n    package: a\n    entries: 5\n",
            'olm.channel "stable": entries: expected a list, found a number',
            3,
        ),
        (
            "schema: olm.template.basic\nentries:\n  - schema: olm.semver\n",
            "cannot contain another template",
            3,
        ),
        (
            "schema: olm.template.basic\nentries: []\n---\nschema: olm.package\nname: a\n",
            "single document",
            4,
        ),
        ("", "the template is empty", None),
        ("# nothing here\n", "the template is empty", None),
        ("name: a\n", 'the template has no "schema" key', 1),
        ("schema: olm.unknown\n", 'unknown template schema "olm.unknown"', 1),
        ("schema: olm.template.basic\nentries: [\n", "invalid YAML", 3),
        ("schema: olm.template.basic\nSchema: x\n", 'duplicate key "schema"', 1),
        (
            "---\nschema: olm.package\nname: a\n---\nschema: olm.semver\n",
            "cannot contain another template",
            5,
        ),
    ],
)
def test_basic_bad_template(tmp_path: Path, text: str, message: str, line: int | None) -> None:
    path = write(tmp_path, text) if text else tmp_path / "template.yaml"
    if not text:
        path.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as info:
        load_template(path)
    assert info.value.line == line
    assert "template.yaml" in str(info.value)


def test_missing_template_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_template(tmp_path / "absent.yaml")


def test_renderer_errors_propagate(tmp_path: Path) -> None:
    path = write(tmp_path, BASIC)

    def broken(ref: str) -> dc.Bundle:
        raise InputError(f"cannot pull {ref}")

    with pytest.raises(InputError, match=re.escape("cannot pull repo/origin/a-v1.0.0")):
        render_template(load_template(path), broken)


def test_single_bundle_renderer_requires_one_bundle() -> None:
    def source(ref: str) -> dc.DeclarativeConfig:
        bundles = [fake_renderer(r) for r in ref.split(",") if r]
        return dc.DeclarativeConfig(bundles=bundles)

    renderer = single_bundle_renderer(source)
    assert renderer("x/a-v1.0.0").name == "a-v1.0.0"
    with pytest.raises(InputError, match="rendered to 2 bundles, expected exactly 1"):
        renderer("x/a-v1.0.0,x/a-v1.1.0")
    with pytest.raises(InputError, match="rendered to 0 bundles"):
        renderer("")


# --- substitutes template (upstream substitutes_test.go TestRender) ------------------------


def substitutes_renderer(ref: str) -> dc.Bundle:
    """``...:v1.2.0-alpha`` -> testoperator-v1.2.0-alpha (release alpha), as upstream's mock."""
    version = ref.split(":v", 1)[1]
    base, _, release = version.partition("-")
    value = {"packageName": "testoperator", "version": base}
    if release:
        value["release"] = release
    name = f"testoperator-v{base}-{release}" if release else f"testoperator.v{base}"
    return dc.Bundle(name, "testoperator", ref, [dc.Property(dc.PROP_PACKAGE, value)])


SUBSTITUTES = """
schema: olm.template.substitutes
entries:
  - schema: olm.package
    name: testoperator
    defaultChannel: stable
  - schema: olm.channel
    name: stable
    package: testoperator
    entries:
      - name: testoperator.v1.0.0
      - name: testoperator.v1.1.0
        replaces: testoperator.v1.0.0
  - schema: olm.bundle
    image: quay.io/test/testoperator-bundle:v1.0.0
  - schema: olm.bundle
    image: quay.io/test/testoperator-bundle:v1.1.0
substitutions:
{substitutions}
"""


def test_substitutes_single_substitution(tmp_path: Path) -> None:
    text = SUBSTITUTES.format(
        substitutions="  - name: quay.io/test/testoperator-bundle:v1.1.0-alpha\n"
        "    base: testoperator.v1.1.0"
    )
    template = load_template(write(tmp_path, text))
    assert isinstance(template, SubstitutesTemplate)
    config = render_template(template, substitutes_renderer)
    assert shape(config.channels) == {
        "stable": [
            ("testoperator.v1.0.0", "", []),
            ("testoperator.v1.1.0", "", []),
            ("testoperator-v1.1.0-alpha", "testoperator.v1.0.0", ["testoperator.v1.1.0"]),
        ]
    }
    assert [b.name for b in config.bundles][-1] == "testoperator-v1.1.0-alpha"
    assert config.bundles[-1].release == "alpha"


def test_substitutes_chained_substitutions(tmp_path: Path) -> None:
    text = SUBSTITUTES.format(
        substitutions="  - name: quay.io/test/testoperator-bundle:v1.2.0-alpha\n"
        "    base: testoperator.v1.1.0\n"
        "  - name: quay.io/test/testoperator-bundle:v1.3.0-alpha\n"
        "    base: testoperator-v1.2.0-alpha"
    )
    config = render_template(load_template(write(tmp_path, text)), substitutes_renderer)
    assert shape(config.channels) == {
        "stable": [
            ("testoperator.v1.0.0", "", []),
            ("testoperator.v1.1.0", "", []),
            ("testoperator-v1.2.0-alpha", "", []),
            (
                "testoperator-v1.3.0-alpha",
                "testoperator.v1.0.0",
                ["testoperator.v1.1.0", "testoperator-v1.2.0-alpha"],
            ),
        ]
    }


def test_substitutes_rewrites_later_replaces_and_skips(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        schema: olm.template.substitutes
        entries:
          - {schema: olm.package, name: testoperator, defaultChannel: stable}
          - schema: olm.channel
            name: stable
            package: testoperator
            entries:
              - name: testoperator.v1.0.0
              - {name: testoperator.v1.1.0, replaces: testoperator.v1.0.0}
              - {name: testoperator.v1.2.0, replaces: testoperator.v1.1.0}
              - {name: testoperator.v1.3.0, skips: [testoperator.v1.1.0, testoperator.v1.2.0]}
        substitutions:
          - {name: "quay.io/test/testoperator-bundle:v1.1.0-re", base: testoperator.v1.1.0}
        """,
    )
    config = render_template(load_template(path), substitutes_renderer)
    assert shape(config.channels)["stable"] == [
        ("testoperator.v1.0.0", "", []),
        ("testoperator.v1.1.0", "", []),
        ("testoperator.v1.2.0", "testoperator-v1.1.0-re", ["testoperator.v1.1.0"]),
        ("testoperator.v1.3.0", "", ["testoperator.v1.2.0", "testoperator-v1.1.0-re"]),
        ("testoperator-v1.1.0-re", "testoperator.v1.0.0", ["testoperator.v1.1.0"]),
    ]


@pytest.mark.parametrize(
    ("substitutions", "message", "line"),
    [
        (
            "  - {name: 'quay.io/test/testoperator-bundle:v1.1.0-alpha', base: nope}",
            'base bundle "nope" is not an entry of any channel',
            18,
        ),
        (
            "  - {name: 'quay.io/test/testoperator-bundle:v1.1.0', base: testoperator.v1.0.0}",
            'renders to bundle "testoperator.v1.1.0", which already exists',
            18,
        ),
        ("  - {name: a, base: a}", "name and base are the same", 18),
        ("  - {name: a}", 'needs both "name"', 18),
        ("  - {name: a, base: b, extra: c}", 'unknown key "extra"', 18),
    ],
)
def test_substitutes_errors(tmp_path: Path, substitutions: str, message: str, line: int) -> None:
    path = write(tmp_path, SUBSTITUTES.format(substitutions=substitutions))
    with pytest.raises(InputError, match=re.escape(message)) as info:
        render_template(load_template(path), substitutes_renderer)
    assert info.value.line == line
