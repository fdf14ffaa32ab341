"""One rule for what a bundle source is (directory, OCI layout, image), and cleanup."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from olmtool.bundle import BuiltBundle, build_bundle, write_bundle
from olmtool.bundle.image import bundle_image
from olmtool.bundle.source import SourceKind, names_registry, open_bundle, resolve_source
from olmtool.config import load_project
from olmtool.errors import InputError
from olmtool.images import write_oci_layout

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


def test_open_bundle_reads_a_layout_like_a_directory_and_removes_what_it_unpacked(
    project: Path, tmp_path: Path
) -> None:
    built = _built(project)
    layout = tmp_path / "layout"
    write_oci_layout(bundle_image(built), layout, "1.2.0")
    before = set(Path(tempfile.gettempdir()).glob("olmtool-image-*"))
    with open_bundle(f"oci:{layout}") as from_layout:
        unpacked = from_layout.root
        assert unpacked.is_dir()
        assert from_layout.image_labels == built.labels
        assert from_layout.csv is not None
    assert not unpacked.exists()
    assert set(Path(tempfile.gettempdir()).glob("olmtool-image-*")) == before


def test_open_bundle_cleans_up_when_the_block_fails(project: Path, tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    write_oci_layout(bundle_image(_built(project)), layout, "1.2.0")
    with pytest.raises(RuntimeError), open_bundle(layout) as bundle:
        unpacked = bundle.root
        raise RuntimeError("boom")
    assert not unpacked.exists()


def test_open_bundle_of_a_directory_reads_it_in_place(project: Path) -> None:
    built = _built(project)
    write_bundle(built)
    directory = built.directory
    with open_bundle(BUNDLE, base=project) as bundle:
        assert bundle.root == directory
        assert bundle.image_labels is None
