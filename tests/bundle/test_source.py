"""One rule for what a bundle source is (directory, OCI layout, image), and cleanup."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from olmtool.bundle import BuiltBundle, build_bundle, write_bundle
from olmtool.bundle.image import bundle_image
from olmtool.bundle.source import bundle_directory, open_bundle, resolve_source
from olmtool.config import load_project
from olmtool.errors import InputError
from olmtool.images import SourceKind, looks_like_path, names_registry, write_oci_layout

BUNDLE = "out/widget-operator/1.2.0"


def _built(project: Path) -> BuiltBundle:
    settings = load_project(project / "olmtool.yaml").settings.bundle
    assert settings is not None
    return build_bundle(settings, project)


@pytest.mark.parametrize(
    ("text", "registry"),
    [
        ("quay.io/org/bundle:1.0", True),
        ("localhost:5000/b:1", True),
        ("localhost/b", True),
        ("127.0.0.1:5000/etcd/bundle@sha256:" + "0" * 64, True),
        ("org/bundle:1.0", False),  # a Docker Hub path, or a directory that is missing
        ("bundle/etcd-operator/*", False),
        ("etcd:3.4", False),
        ("nothing-here", False),
    ],
)
def test_a_registry_host_makes_an_image_reference(text: str, registry: bool) -> None:
    assert names_registry(text) is registry


def test_existing_paths_win_over_reference_syntax(tmp_path: Path) -> None:
    odd = tmp_path / "localhost:5000" / "bundle"
    odd.mkdir(parents=True)
    source = resolve_source("localhost:5000/bundle", base=tmp_path)
    assert source.kind is SourceKind.directory and source.path == odd


def test_a_directory_with_oci_layout_is_a_layout(project: Path, tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    write_oci_layout(bundle_image(_built(project)), layout, "1.2.0")
    assert resolve_source(layout).kind is SourceKind.layout
    prefixed = resolve_source(f"oci:{layout}:1.2.0")
    assert (prefixed.kind, prefixed.path, prefixed.tag) == (SourceKind.layout, layout, "1.2.0")


def test_anything_else_is_refused_with_the_source_named() -> None:
    with pytest.raises(InputError, match=r"^nothing-here: no such bundle directory"):
        resolve_source("nothing-here")
    with pytest.raises(InputError, match="org/missing"):
        resolve_source("org/missing")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/nonexistent", "/nonexistent: no such bundle directory"),
        ("./nosuchdir", "nosuchdir: no such bundle directory"),
        ("../nosuchdir", "../nosuchdir: no such bundle directory"),
        ("~/no-such-bundle-dir", "~/no-such-bundle-dir: no such bundle directory"),
        # a mistyped version or package: the folder that exists says what it holds
        (
            "bundle/etcd-operator/0.9.0",
            "bundle/etcd-operator/0.9.0: no such bundle directory (bundle/etcd-operator holds 0.1.0, 0.3.0)",
        ),
        (
            "bundle/etcd-operatr/0.3.0",
            "bundle/etcd-operatr/0.3.0: no such bundle directory (bundle holds etcd-operator)",
        ),
        # a first part with a dot that exists here is a folder, not a registry host
        ("v1.0/bundle", "v1.0/bundle: no such bundle directory (v1.0 holds other)"),
    ],
)
def test_a_missing_path_is_a_missing_directory_never_an_image(
    text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("bundle/etcd-operator/0.1.0", "bundle/etcd-operator/0.3.0", "v1.0/other"):
        (tmp_path / folder).mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert looks_like_path(text)
    with pytest.raises(InputError) as exc:
        resolve_source(text)
    assert str(exc.value) == message
    with pytest.raises(InputError) as exc:  # bundle image's directory: the same words
        bundle_directory(text)
    assert str(exc.value) == message


def test_registry_hosts_stay_images_unless_a_folder_of_that_name_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for text in ("quay.io/org/bundle:1.0", "localhost:5000/b:1", "docker.io/org/b:1"):
        assert not looks_like_path(text)
        assert resolve_source(text).kind is SourceKind.image
    with pytest.raises(InputError, match=r"^org/missing: no such bundle directory, OCI layout"):
        resolve_source("org/missing")  # neither written as a path nor naming a registry


def test_every_command_taking_a_bundle_says_the_same(tmp_path: Path) -> None:
    from tests.test_cli import olmtool

    for command in (
        ["bundle", "validate", "./nosuchdir"],
        ["catalog", "render", "./nosuchdir"],
        ["catalog", "add", "./nosuchdir"],
        ["bundle", "image", "./nosuchdir", "--image", "quay.io/x/y:1"],
    ):
        run = olmtool(*command, cwd=tmp_path)
        assert run.returncode == 1, command
        assert run.stderr == "error: nosuchdir: no such bundle directory\n", command


def test_open_bundle_reads_a_layout_like_a_directory_without_unpacking_it(
    project: Path, tmp_path: Path
) -> None:
    built = _built(project)
    layout = tmp_path / "layout"
    write_oci_layout(bundle_image(built), layout, "1.2.0")
    before = set(Path(tempfile.gettempdir()).glob("olmtool-image-*"))
    with open_bundle(f"oci:{layout}") as from_layout:
        assert from_layout.image_labels == built.labels
        assert from_layout.csv is not None
        assert from_layout.display("manifests") == f"oci:{layout}:/manifests"
        assert set(Path(tempfile.gettempdir()).glob("olmtool-image-*")) == before


def test_open_bundle_of_a_directory_reads_it_in_place(project: Path) -> None:
    built = _built(project)
    write_bundle(built)
    directory = built.directory
    with open_bundle(BUNDLE, base=project) as bundle:
        assert bundle.root == directory
        assert bundle.image_labels is None
