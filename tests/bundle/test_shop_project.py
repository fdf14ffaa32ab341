"""Issue 16's finish line, as one project (tests/bundle/shopproject): four releases over
alpha and stable (replaces, skips, a skipRange), a validating webhook and a package
dependency declared in olmtool.yaml, one documented waiver. Any release builds, all of
them build, every bundle passes ``bundle validate --strict --select all``, any bundle
directory becomes an image, and the catalog ``catalog publish`` writes from those images'
references holds the very bytes ``opm render`` v1.26 prints for the same images."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.bundle import directory_image
from tests.bundle.conftest import beside_project
from tests.catalog.opm_peer import ImageServer, opm, requires_opm
from tests.catalog.test_cli_validate import cli
from tests.catalog.test_render_opm import blob_texts

HERE = Path(__file__).parent
PACKAGE = "sprocket-operator"
VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project (beside tests/bundle/project, whose CRD and example it uses), built."""
    return beside_project(tmp_path, monkeypatch, "shopproject", "shop")


@pytest.fixture(scope="module")
def server() -> Iterator[ImageServer]:
    with ImageServer().running() as running:
        yield running


def _bundle(version: str) -> Path:
    return Path("out", PACKAGE, version)


def test_any_release_and_all_releases_build(shop: Path) -> None:
    one = cli("bundle", "build", "--version", "0.2.0", "-o", "json")
    assert one.returncode == 0, one.stdout + one.stderr
    assert sorted(p.name for p in (shop / "out" / PACKAGE).iterdir()) == ["0.2.0"]
    every = cli("bundle", "build", "--all")
    assert every.returncode == 0, every.stdout + every.stderr
    assert sorted(p.name for p in (shop / "out" / PACKAGE).iterdir()) == VERSIONS
    again = cli("bundle", "build", "--all", "--check")
    assert again.returncode == 0, again.stdout + again.stderr


def test_every_release_passes_strict_select_all_with_its_one_waiver(shop: Path) -> None:
    assert cli("bundle", "build", "--all").returncode == 0
    for version in VERSIONS:
        done = cli(
            "bundle", "validate", "--strict", "--select", "all", "-o", "json", str(_bundle(version))
        )
        assert done.returncode == 0, done.stdout
        report = json.loads(done.stdout)
        assert report["findings"] == [] and report["unused_waivers"] == []
        (waived,) = report["waived"]
        assert waived["check"] == "good-practices/channel-name", version
        assert waived["reason"].startswith("alpha is where previews ship")
        assert waived["waiver"].startswith("olmtool.yaml:")


def test_the_webhook_and_the_dependency_are_in_every_bundle(shop: Path) -> None:
    assert cli("bundle", "build", "--all").returncode == 0
    for version in VERSIONS:
        bundle = shop / _bundle(version)
        csv = (bundle / "manifests" / f"{PACKAGE}.clusterserviceversion.yaml").read_text()
        assert "generateName: vwidget.features.olmtool.dev" in csv
        assert (
            "packageName: cert-manager" in (bundle / "metadata" / "dependencies.yaml").read_text()
        )


@requires_opm
def test_published_catalog_is_what_opm_renders_from_the_bundle_images(
    shop: Path, server: ImageServer
) -> None:
    config = shop / "olmtool.yaml"
    repository = f"{server.address}/{PACKAGE}-bundle"
    config.write_text(
        config.read_text().replace("example.com/sprocket-operator-bundle", repository)
    )
    assert cli("bundle", "build", "--all").returncode == 0
    references = []
    for version in VERSIONS:
        image, _ = directory_image(shop / _bundle(version))
        references.append(server.add(f"{PACKAGE}-bundle", version, image))
    published = cli("catalog", "publish")
    assert published.returncode == 0, published.stdout + published.stderr
    done = opm("render", *references, "--use-http", "-o", "json", cwd=shop)
    assert done.returncode == 0, done.stderr
    theirs = blob_texts(done.stdout)
    ours = [
        text
        for path in sorted((shop / "catalog").rglob("*.json"))
        for text in blob_texts(path.read_text())
        if json.loads(text)["schema"] == "olm.bundle"
    ]
    assert sorted(ours) == sorted(theirs)
    assert len(ours) == len(VERSIONS)
