"""Differential: ``olmtool catalog render`` prints the bytes ``opm render`` v1.26 prints.

opm v1.26 renders bundle images only, so each synthetic bundle directory
(:mod:`tests.catalog.render_fixtures`) is built into an image, served on loopback
(:class:`tests.catalog.opm_peer.ImageServer`) and rendered by opm by reference; olmtool
renders the directory with ``--image`` set to the same reference. Both outputs must be
equal byte for byte: properties (order, values, JSON escaping), the embedded objects
(base64 of Go's JSON), related images. Skipped without ``../shared/peers/opm``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.actions import catalog_render
from olmtool.bundle.model import load_bundle
from olmtool.catalog import render_config
from olmtool.errors import OlmtoolError
from olmtool.images import build_image

from .opm_peer import ImageServer, opm, requires_opm
from .render_fixtures import VARIANTS, write_bundle

REPO = Path(__file__).resolve().parents[2]

pytestmark = requires_opm


@pytest.fixture(scope="module")
def server() -> Iterator[ImageServer]:
    with ImageServer().running() as running:
        yield running


def bundle_image_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "bundle.Dockerfile"
    }


def render_both(root: Path, server: ImageServer, work: Path) -> tuple[str, str]:
    """(opm's output, olmtool's output) for the bundle directory ``root``."""
    annotations = dict(load_bundle(root).annotations or {})
    image = build_image(bundle_image_files(root), annotations)
    reference = server.add(f"fixtures/{root.name}", "v1", image)
    work.mkdir(exist_ok=True)
    done = opm("render", reference, "--use-http", "-o", "json", cwd=work)
    assert done.returncode == 0, done.stderr
    ours = render_config(catalog_render([root], image=reference), raw_values=True)
    return done.stdout, ours


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_render_is_byte_identical_to_opm(variant: str, server: ImageServer, tmp_path: Path) -> None:
    root = write_bundle(tmp_path, variant)
    theirs, ours = render_both(root, server, tmp_path / "opm")
    if ours != theirs:  # a readable first difference before the full comparison
        for number, (a, b) in enumerate(zip(theirs.splitlines(), ours.splitlines(), strict=False)):
            assert b == a, f"line {number + 1} differs"
    assert ours == theirs


def test_etcd_bundles_are_byte_identical_to_opm(server: ImageServer, tmp_path: Path) -> None:
    for root in sorted((REPO / "bundle/etcd-operator").iterdir()):
        theirs, ours = render_both(root, server, tmp_path / "opm")
        assert ours == theirs, root.name


def test_many_images_in_one_render_are_byte_identical_to_opm(
    server: ImageServer, tmp_path: Path
) -> None:
    """Every variant and etcd release as an image, rendered by reference in one command
    (olmtool pulls them a few at a time ahead of rendering): the same bytes as opm, in
    the order given."""
    roots = [write_bundle(tmp_path / "variants", v) for v in sorted(VARIANTS)]
    roots += sorted((REPO / "bundle/etcd-operator").iterdir())
    refs = []
    for index, root in enumerate(roots):
        image = build_image(bundle_image_files(root), dict(load_bundle(root).annotations or {}))
        refs.append(server.add(f"many/{index}-{root.name.lower()}", "v1", image))
    refs.reverse()  # not the order they were pushed in
    done = opm("render", *refs, "--use-http", "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert render_config(catalog_render(refs), raw_values=True) == done.stdout


def fbc_sources(tmp_path: Path) -> list[Path]:
    """Catalog directories: the repository's, the serving tests' (JSON and YAML files,
    HTML characters, U+2028, number spellings, escapes) and the validate corpus."""
    from tests.serve.test_opm_bytes import write_catalog

    here = Path(__file__).parent
    return [
        REPO / "catalog",
        write_catalog(tmp_path / "bytes"),
        here / "graph" / "demo",
        *sorted(p for p in (here / "corpus").iterdir() if p.is_dir()),
    ]


def blob_texts(stream: str) -> list[str]:
    """The text of each blob of ``opm render`` output, olm.deprecations left out: v1.26
    kept those as blobs of an unknown schema (keys sorted); olmtool writes them as newer
    opm does (its struct's field order)."""
    decoder, texts, position = json.JSONDecoder(), [], 0
    while position < len(stream):
        blob, end = decoder.raw_decode(stream, position)
        if blob.get("schema") != "olm.deprecations":
            texts.append(stream[position:end])
        position = end + 1  # the newline after each blob
    return texts


def test_catalog_render_is_byte_identical_to_opm(tmp_path: Path) -> None:
    """``opm render DIR``: property values and other blobs as opm holds them (the text of
    a JSON file, json.Marshal of YAML with keys sorted), the rest as Go's structs."""
    compared = 0
    for source in fbc_sources(tmp_path / "catalogs"):
        done = opm("render", str(source), "-o", "json", cwd=tmp_path)
        try:
            ours = render_config(catalog_render([source]), raw_values=True)
        except OlmtoolError:
            continue  # what olmtool refuses to load (some corpus defects); opm may too
        if done.returncode != 0:
            continue
        assert blob_texts(ours) == blob_texts(done.stdout), source.name
        compared += 1
    assert compared >= 40
