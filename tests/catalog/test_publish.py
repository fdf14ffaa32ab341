"""``catalog publish`` / ``catalog add``: catalogs from bundles, written atomically.

Behaviour goes through the actions in-process; the CLI tests at the end check only the
wiring (exit codes, output formats, one-line errors)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from olmtool.actions import ImageTarget, catalog_add, catalog_publish
from olmtool.catalog.load import load_catalog, load_catalog_strict
from olmtool.catalog.publishing import catalog_image, dockerfile
from olmtool.catalog.rendering import CATALOG_LABEL
from olmtool.cli.output import error_line
from olmtool.errors import ArgumentError, InputError, OlmtoolError
from olmtool.fsutil import read_tree
from olmtool.images import LocalRegistry, pull
from tests.catalog.test_cli_validate import cli
from tests.test_cli import olmtool

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
catalog:
  output: catalog
  format: {format}
  packages:
    - name: etcd-operator
      bundles: [{bundles}]
      image: "localhost:5000/olmtool/etcd-operator-bundle:{{version}}"
"""


def _project(tmp_path: Path, bundles: str = '"bundles/*"', fmt: str = "yaml") -> Path:
    shutil.copytree(REPO / "bundle/etcd-operator", tmp_path / "bundles")
    (tmp_path / "olmtool.yaml").write_text(CONFIG.format(bundles=bundles, format=fmt))
    return tmp_path


def _publish(project: Path, **kwargs):
    return catalog_publish(config=project / "olmtool.yaml", **kwargs)


# --- the actions ---------------------------------------------------------------------------


def test_publish_matches_the_committed_catalog_and_is_idempotent(tmp_path: Path) -> None:
    project = _project(tmp_path)
    config = (REPO / "olmtool.yaml").read_text()
    catalog_section = config[config.index("\ncatalog:") :].replace(
        "bundle/etcd-operator/*", "bundles/*"
    )
    (project / "olmtool.yaml").write_text(catalog_section)
    first = _publish(project)
    assert not first.failed and first.publish.stale  # everything was written
    assert read_tree(project / "catalog") == read_tree(REPO / "catalog")
    assert (project / "catalog.Dockerfile").read_text() == (REPO / "catalog.Dockerfile").read_text()
    again = _publish(project, check=True)
    assert not again.failed, again.as_dict()
    assert not again.publish.stale and not again.publish.dockerfile_stale
    assert list(again.publish.packages) == ["etcd-operator"]
    assert not again.publish.packages["etcd-operator"].stale


def test_publish_never_reads_and_then_removes_what_killed_runs_left(tmp_path: Path) -> None:
    """A killed ``bundle build``/``catalog publish`` leaves staging-named trees: a copy of
    a bundle beside the bundles, of the package in the catalog (where the fallback
    stages) and beside it; neither publish nor the loader reads them, and publishing
    removes the catalog's (even when nothing changed)."""
    project = _project(tmp_path, bundles='"bundles/*", "bundles/.*"')
    _publish(project)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    leftovers = [
        project / f"bundles/.olmtool-staging-0.3.0-{gone}-0a0b",
        project / f"catalog/.olmtool-staging-etcd-operator-{gone}-0c0d",
        project / f".olmtool-staging-etcd-operator-{gone}-0e0f",
    ]
    shutil.copytree(project / "bundles/0.3.0", leftovers[0])
    shutil.copytree(project / "catalog/etcd-operator", leftovers[1])
    shutil.copytree(project / "catalog/etcd-operator", leftovers[2])
    loaded = load_catalog(project / "catalog")
    assert not loaded.errors and len(loaded.config.packages) == 1  # no "duplicate package"
    assert not _publish(project, check=True).failed  # the bundle leftover is no 4th bundle
    assert all(p.exists() for p in leftovers)  # --check never writes
    result = _publish(project)
    assert not result.publish.stale
    assert [p.exists() for p in leftovers] == [True, False, False]  # bundles: `bundle build`'s


def test_check_reports_drift_with_a_diff(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert not _publish(project).failed
    catalog = project / "catalog/etcd-operator/catalog.yaml"
    catalog.write_text(catalog.read_text().replace("defaultChannel: stable", "defaultChannel: x"))
    result = _publish(project, check=True)
    assert result.failed
    data = result.as_dict()
    assert data["stale"] is True
    assert data["packages"] == {
        "etcd-operator": {"added": [], "modified": ["catalog.yaml"], "removed": []}
    }
    diff = "".join(result.publish.packages["etcd-operator"].diffs)
    assert "-defaultChannel: x" in diff and "+defaultChannel: stable" in diff
    assert "defaultChannel: x" in catalog.read_text(), "check must not write"


def test_output_dir_writes_and_checks_a_variant_beside_the_configured_catalog(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    assert not _publish(project).failed
    configured = read_tree(project / "catalog")
    # a Dockerfile configured for the catalog: the variant's must not overwrite it
    config = project / "olmtool.yaml"
    config.write_text(config.read_text() + "  dockerfile: build/catalog.Dockerfile\n")
    assert not _publish(project).failed
    dockerfile_before = (project / "build/catalog.Dockerfile").read_text()
    variant = tmp_path / "out" / "inline"

    assert _publish(project, check=True, output_dir=variant).failed  # nothing there yet
    assert not variant.exists(), "check must not write"
    written = _publish(project, output_dir=variant)
    assert not written.failed and written.publish.stale
    assert written.publish.root == variant
    assert read_tree(variant) == configured
    beside = tmp_path / "out" / "inline.Dockerfile"
    assert written.publish.dockerfile == beside
    assert beside.read_text() == dockerfile("inline", "quay.io/operator-framework/opm:latest")
    assert (project / "build/catalog.Dockerfile").read_text() == dockerfile_before

    again = _publish(project, check=True, output_dir=variant)
    assert not again.failed, again.as_dict()
    catalog = variant / "etcd-operator/catalog.yaml"
    catalog.write_text(catalog.read_text().replace("defaultChannel: stable", "defaultChannel: x"))
    drift = _publish(project, check=True, output_dir=variant)
    assert drift.failed
    assert drift.as_dict()["packages"]["etcd-operator"]["modified"] == ["catalog.yaml"]
    assert not _publish(project, check=True).failed  # the configured catalog is untouched
    assert read_tree(project / "catalog") == configured


def test_output_dir_that_is_a_file_is_refused_naming_the_flag(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (tmp_path / "taken").write_text("")
    with pytest.raises(ArgumentError) as refused:
        _publish(project, output_dir=tmp_path / "taken")
    assert refused.value.argument == "output_dir"
    assert error_line(refused.value).startswith("--output-dir ")
    assert "is not a directory" in str(refused.value)


def test_channels_come_from_annotations_and_csv_upgrade_fields(tmp_path: Path) -> None:
    project = _project(tmp_path, fmt="json")
    assert not _publish(project).failed
    config = load_catalog_strict(project / "catalog")
    (channel,) = config.channels
    assert channel.name == "stable"
    entries = [(e.name, e.replaces, e.skip_range) for e in channel.entries]
    assert entries == [
        ("etcd-operator.v0.1.0", "", ""),
        ("etcd-operator.v0.2.0", "etcd-operator.v0.1.0", ""),
        ("etcd-operator.v0.3.0", "etcd-operator.v0.2.0", ">=0.1.0 <0.3.0"),
        ("etcd-operator.v0.4.0", "etcd-operator.v0.3.0", ">=0.1.0 <0.4.0"),
        ("etcd-operator.v0.5.0", "etcd-operator.v0.4.0", ">=0.1.0 <0.5.0"),
    ]
    (package,) = config.packages
    assert package.default_channel == "stable"
    assert package.icon is not None and package.icon.mediatype == "image/svg+xml"
    assert (project / "catalog/etcd-operator/catalog.json").is_file()
    images = sorted(b.image for b in config.bundles)
    assert images[0] == "localhost:5000/olmtool/etcd-operator-bundle:0.1.0"


def test_an_invalid_result_leaves_the_catalog_untouched(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert not _publish(project).failed
    before = read_tree(project / "catalog")
    csv = project / "bundles/0.2.0/manifests/etcd-operator.clusterserviceversion.yaml"
    csv.write_text(csv.read_text().replace("replaces: etcd-operator.v0.1.0", "replaces: nothing"))
    with pytest.raises(InputError, match="would be invalid, nothing written") as refused:
        _publish(project)
    assert "multiple channel heads found in graph" in str(refused.value)
    assert read_tree(project / "catalog") == before


def test_config_mistakes_are_one_line_with_the_line_number(tmp_path: Path) -> None:
    (tmp_path / "olmtool.yaml").write_text(
        "catalog:\n  packages:\n    - name: x\n      bundles: [a]\n      template: t.yaml\n"
    )
    with pytest.raises(InputError) as refused:
        _publish(tmp_path)
    assert "olmtool.yaml:3: catalog.packages[0]: give either bundles" in str(refused.value)


def test_add_puts_a_bundle_on_top_of_its_channel(tmp_path: Path) -> None:
    project = _project(tmp_path, bundles='"bundles/0.1.0", "bundles/0.2.0"')
    assert not _publish(project).failed
    image = "localhost:5000/olmtool/etcd-operator-bundle:0.3.0"
    result = catalog_add(project / "bundles/0.3.0", catalog=project / "catalog", image=image)
    assert result.channels == ["stable"]
    assert result.as_dict()["channels"] == ["stable"]
    assert result.bundle.image == image
    assert not result.warnings
    config = load_catalog_strict(project / "catalog")
    head = config.channels[0].entries[-1]
    assert (head.name, head.replaces, head.skip_range) == (
        "etcd-operator.v0.3.0",
        "etcd-operator.v0.2.0",
        ">=0.1.0 <0.3.0",
    )
    assert (project / "catalog/etcd-operator/catalog.yaml").is_file()  # kept its format
    with pytest.raises(InputError, match="already in the catalog"):
        catalog_add(project / "bundles/0.3.0", catalog=project / "catalog")


def _without_channels(project: Path, version: str) -> Path:
    annotations = project / f"bundles/{version}/metadata/annotations.yaml"
    lines = annotations.read_text().splitlines(keepends=True)
    annotations.write_text("".join(line for line in lines if ".channel" not in line))
    return project / f"bundles/{version}"


def test_add_needs_channels_when_the_bundle_names_none(tmp_path: Path) -> None:
    project = _project(tmp_path)
    bundle = _without_channels(project, "0.1.0")
    with pytest.raises(ArgumentError) as none:
        catalog_add(bundle, catalog=project / "catalog")
    assert none.value.argument == "channels"
    assert none.value.message == "is needed: bundle etcd-operator.v0.1.0 names no channel"
    assert not (project / "catalog").exists()
    result = catalog_add(bundle, catalog=project / "catalog", channels=["candidate"])
    assert result.channels == ["candidate"]
    assert [c.name for c in load_catalog_strict(project / "catalog").channels] == ["candidate"]


def test_dockerfile_is_opm_generate_dockerfile() -> None:
    text = dockerfile("catalog", "quay.io/operator-framework/opm:latest")
    assert "ADD catalog /configs" in text
    assert 'CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]' in text
    assert text.rstrip().endswith(f"LABEL {CATALOG_LABEL}=/configs")


def test_catalog_image_holds_configs_and_the_label() -> None:
    image = catalog_image(REPO / "catalog")
    assert image.labels == {CATALOG_LABEL: "/configs"}
    assert set(image.files()) == {"configs/etcd-operator/catalog.yaml"}
    assert catalog_image(REPO / "catalog").digest == image.digest


@pytest.mark.e2e
def test_publish_pushes_the_catalog_image(tmp_path: Path, registry: LocalRegistry) -> None:
    project = _project(tmp_path)
    reference = f"{registry.address}/olmtool/etcd-catalog:v1"
    target = ImageTarget(reference, layout=project / "build/oci/catalog", push=True)
    result = _publish(project, image=target, base="scratch")  # tests/catalog/test_catalog_image.py
    assert not result.failed
    assert result.image is not None and result.image.pushed
    assert result.as_dict()["image"] == reference
    pulled = pull(reference)
    assert pulled.labels[CATALOG_LABEL] == "/configs"
    assert (
        pulled.files()["configs/etcd-operator/catalog.yaml"]
        == (project / "catalog/etcd-operator/catalog.yaml").read_bytes()
    )


@pytest.mark.e2e
def test_publish_push_says_what_it_pushed(
    tmp_path: Path, registry: LocalRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like ``bundle build --push``: the reference with its digest, then "pushed"."""
    monkeypatch.chdir(_project(tmp_path))
    reference = f"{registry.address}/olmtool/etcd-catalog:said"
    result = cli("catalog", "publish", "--image", reference, "--push", "--base", "scratch")
    assert result.returncode == 0, result.exception
    lines = result.stdout.splitlines()
    assert lines[-2] == f"image {reference}: {pull(reference).digest}"
    assert lines[-1] == f"pushed {reference}"


@pytest.mark.e2e
def test_a_refused_push_is_one_line_and_keeps_the_catalog(
    tmp_path: Path, auth_registry: LocalRegistry
) -> None:
    project = _project(tmp_path)
    assert not _publish(project).failed
    before = read_tree(project / "catalog")
    reference = f"{auth_registry.address}/olmtool/etcd-catalog:v1"
    target = ImageTarget(reference, layout=project / "build/oci/catalog", push=True)
    # An OlmtoolError is what olmtool.cli.main prints as one line, without a traceback.
    with pytest.raises(OlmtoolError) as refused:
        _publish(project, image=target, base="scratch")
    assert len(error_line(refused.value).strip().splitlines()) == 1
    assert read_tree(project / "catalog") == before


def test_publish_from_a_semver_template(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "template.yaml").write_text(
        "schema: olm.semver\n"
        "generateMinorChannels: true\n"
        "stable:\n"
        "  bundles:\n"
        "    - image: bundles/0.1.0\n"
        "    - image: bundles/0.2.0\n"
        "    - image: bundles/0.3.0\n"
    )
    (project / "olmtool.yaml").write_text(
        "catalog:\n  packages:\n    - name: etcd-operator\n      template: template.yaml\n"
        "      image: registry.example.com/{package}-bundle:v{version}\n"
    )
    assert not _publish(project).failed
    config = load_catalog_strict(project / "catalog")
    assert [b.image for b in config.bundles] == [
        f"registry.example.com/etcd-operator-bundle:v0.{minor}.0" for minor in (1, 2, 3)
    ]
    assert sorted(c.name for c in config.channels) == ["stable-v0.1", "stable-v0.2", "stable-v0.3"]
    assert config.packages[0].default_channel == "stable-v0.3"
    head = next(c for c in config.channels if c.name == "stable-v0.3").entries[-1]
    assert head.name == "etcd-operator.v0.3.0"
    assert head.replaces == "etcd-operator.v0.2.0"
    assert head.skips == ["etcd-operator.v0.1.0"]


# --- the commands: wiring only -------------------------------------------------------------


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project publishing one bundle (the wiring does not need more), as the cwd."""
    monkeypatch.chdir(tmp_path)
    return _project(tmp_path, bundles='"bundles/0.1.0"')


def test_publish_command_exit_codes_and_output(here: Path) -> None:
    written = cli("catalog", "publish", "-o", "json")
    assert written.returncode == 0, written.exception
    data = json.loads(written.stdout)
    assert data["stale"] is True and data["dockerfile"] == "catalog.Dockerfile"
    assert list(data["packages"]) == ["etcd-operator"]
    checked = cli("catalog", "publish", "--check")
    assert checked.returncode == 0, checked.stdout
    assert "package etcd-operator: up to date" in checked.stdout
    assert "catalog.Dockerfile: up to date" in checked.stdout
    catalog = here / "catalog/etcd-operator/catalog.yaml"
    catalog.write_text(catalog.read_text().replace("defaultChannel: stable", "defaultChannel: x"))
    stale = cli("catalog", "publish", "--check")
    assert stale.returncode == 1
    assert "-defaultChannel: x" in stale.stdout and "+defaultChannel: stable" in stale.stdout
    assert "package etcd-operator: stale" in stale.stdout
    assert cli("catalog", "publish", "-o", "xml").returncode == 2
    no_image = cli("catalog", "publish", "--push")
    assert no_image.returncode == 2 and "--push needs --image" in (no_image.error or "")


def test_publish_command_output_dir(here: Path) -> None:
    written = cli("catalog", "publish", "--output-dir", "build/variant", "-o", "json")
    assert written.returncode == 0, written.exception
    data = json.loads(written.stdout)
    assert (data["catalog"], data["dockerfile"]) == ("build/variant", "build/variant.Dockerfile")
    assert (here / "build/variant/etcd-operator/catalog.yaml").is_file()
    assert "ADD variant /configs" in (here / "build/variant.Dockerfile").read_text()
    assert not (here / "catalog").exists() and not (here / "catalog.Dockerfile").exists()
    checked = cli("catalog", "publish", "-d", "build/variant", "--check")
    assert checked.returncode == 0, checked.stdout
    assert "build/variant.Dockerfile: up to date" in checked.stdout
    stale = cli("catalog", "publish", "--check")  # the configured catalog: never written
    assert stale.returncode == 1
    (here / "build/variant.Dockerfile").write_text("FROM scratch\n")
    drift = cli("catalog", "publish", "-d", "build/variant", "--check")
    assert drift.returncode == 1
    assert "run olmtool catalog publish -d build/variant to update it" in drift.stdout


def test_add_command_exit_codes_and_output(here: Path) -> None:
    image = "localhost:5000/olmtool/etcd-operator-bundle:0.1.0"
    result = cli("catalog", "add", "bundles/0.1.0", "--image", image, "-o", "json")
    assert result.returncode == 0, result.exception
    assert '"channels": [\n    "stable"\n  ]' in result.stdout
    assert json.loads(result.stdout)["bundle"] == "etcd-operator.v0.1.0"
    text = cli("catalog", "add", "bundles/0.2.0", "--channel", "fast")
    assert text.returncode == 0, text.exception
    assert "added etcd-operator.v0.2.0 to etcd-operator (fast)" in text.stdout
    assert "[publish-empty-image]" in text.stdout  # a directory without --image
    assert "recorded with image '' (give --image REF)" in text.stdout
    again = cli("catalog", "add", "bundles/0.2.0")
    assert again.returncode == 1
    assert "already in the catalog" in (again.error or "")
    _without_channels(here, "0.3.0")
    no_channel = cli("catalog", "add", "bundles/0.3.0")
    assert no_channel.returncode == 1
    assert no_channel.error == "--channel is needed: bundle etcd-operator.v0.3.0 names no channel"
    assert cli("catalog", "add").returncode == 2


def test_user_error_is_one_line_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "olmtool.yaml").write_text(
        "catalog:\n  packages:\n    - name: x\n      bundles: [a]\n      template: t.yaml\n"
    )
    result = olmtool("catalog", "publish", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "olmtool.yaml:3: catalog.packages[0]: give either bundles" in result.stderr
