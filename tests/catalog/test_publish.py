"""``catalog publish`` / ``catalog add``: catalogs from bundles, written atomically."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from olmtool.catalog.load import load_catalog_strict
from olmtool.catalog.publish import catalog_image, dockerfile
from olmtool.catalog.render import CATALOG_LABEL
from olmtool.fsutil import read_tree
from olmtool.images import LocalRegistry, pull
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


def test_publish_matches_the_committed_catalog_and_is_idempotent(tmp_path: Path) -> None:
    project = _project(tmp_path)
    config = (REPO / "olmtool.yaml").read_text()
    catalog_section = config[config.index("\ncatalog:") :].replace(
        "bundle/etcd-operator/*", "bundles/*"
    )
    (project / "olmtool.yaml").write_text(catalog_section)
    first = olmtool("catalog", "publish", cwd=project)
    assert first.returncode == 0, first.stderr
    assert read_tree(project / "catalog") == read_tree(REPO / "catalog")
    assert (project / "catalog.Dockerfile").read_text() == (REPO / "catalog.Dockerfile").read_text()
    again = olmtool("catalog", "publish", "--check", cwd=project)
    assert again.returncode == 0, again.stdout
    assert "up to date" in again.stdout


def test_check_reports_drift_with_a_diff(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert olmtool("catalog", "publish", cwd=project).returncode == 0
    catalog = project / "catalog/etcd-operator/catalog.yaml"
    catalog.write_text(catalog.read_text().replace("defaultChannel: stable", "defaultChannel: x"))
    result = olmtool("catalog", "publish", "--check", "-o", "json", cwd=project)
    assert result.returncode == 1
    assert '"stale": true' in result.stdout
    text = olmtool("catalog", "publish", "--check", cwd=project)
    assert "-defaultChannel: x" in text.stdout and "+defaultChannel: stable" in text.stdout


def test_channels_come_from_annotations_and_csv_upgrade_fields(tmp_path: Path) -> None:
    project = _project(tmp_path, fmt="json")
    assert olmtool("catalog", "publish", cwd=project).returncode == 0
    config = load_catalog_strict(project / "catalog")
    (channel,) = config.channels
    assert channel.name == "stable"
    entries = [(e.name, e.replaces, e.skip_range) for e in channel.entries]
    assert entries == [
        ("etcd-operator.v0.1.0", "", ""),
        ("etcd-operator.v0.2.0", "etcd-operator.v0.1.0", ""),
        ("etcd-operator.v0.3.0", "etcd-operator.v0.2.0", ">=0.1.0 <0.3.0"),
    ]
    (package,) = config.packages
    assert package.default_channel == "stable"
    assert package.icon is not None and package.icon.mediatype == "image/svg+xml"
    assert (project / "catalog/etcd-operator/catalog.json").is_file()
    images = sorted(b.image for b in config.bundles)
    assert images[0] == "localhost:5000/olmtool/etcd-operator-bundle:0.1.0"


def test_an_invalid_result_leaves_the_catalog_untouched(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert olmtool("catalog", "publish", cwd=project).returncode == 0
    before = read_tree(project / "catalog")
    csv = project / "bundles/0.2.0/manifests/etcd-operator.clusterserviceversion.yaml"
    csv.write_text(csv.read_text().replace("replaces: etcd-operator.v0.1.0", "replaces: nothing"))
    result = olmtool("catalog", "publish", cwd=project)
    assert result.returncode == 1
    assert "would be invalid, nothing written" in result.stderr
    assert "multiple channel heads found in graph" in result.stderr
    assert "Traceback" not in result.stderr
    assert read_tree(project / "catalog") == before


def test_config_mistakes_are_one_line_with_the_line_number(tmp_path: Path) -> None:
    (tmp_path / "olmtool.yaml").write_text(
        "catalog:\n  packages:\n    - name: x\n      bundles: [a]\n      template: t.yaml\n"
    )
    result = olmtool("catalog", "publish", cwd=tmp_path)
    assert result.returncode == 1
    assert "olmtool.yaml:3: catalog.packages[0]: give either bundles" in result.stderr


def test_add_puts_a_bundle_on_top_of_its_channel(tmp_path: Path) -> None:
    project = _project(tmp_path, bundles='"bundles/0.1.0", "bundles/0.2.0"')
    assert olmtool("catalog", "publish", cwd=project).returncode == 0
    image = "localhost:5000/olmtool/etcd-operator-bundle:0.3.0"
    result = olmtool("catalog", "add", "bundles/0.3.0", "--image", image, "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert '"channels": [\n    "stable"\n  ]' in result.stdout
    config = load_catalog_strict(project / "catalog")
    head = config.channels[0].entries[-1]
    assert (head.name, head.replaces, head.skip_range) == (
        "etcd-operator.v0.3.0",
        "etcd-operator.v0.2.0",
        ">=0.1.0 <0.3.0",
    )
    assert (project / "catalog/etcd-operator/catalog.yaml").is_file()  # kept its format
    again = olmtool("catalog", "add", "bundles/0.3.0", cwd=project)
    assert again.returncode == 1
    assert "already in the catalog" in again.stderr


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
    result = olmtool("catalog", "publish", "--image", reference, "--push", cwd=project)
    assert result.returncode == 0, result.stderr
    pulled = pull(reference)
    assert pulled.labels[CATALOG_LABEL] == "/configs"
    assert (
        pulled.files()["configs/etcd-operator/catalog.yaml"]
        == (project / "catalog/etcd-operator/catalog.yaml").read_bytes()
    )


@pytest.mark.e2e
def test_a_refused_push_is_one_line_and_keeps_the_catalog(
    tmp_path: Path, auth_registry: LocalRegistry
) -> None:
    project = _project(tmp_path)
    assert olmtool("catalog", "publish", cwd=project).returncode == 0
    before = read_tree(project / "catalog")
    reference = f"{auth_registry.address}/olmtool/etcd-catalog:v1"
    result = olmtool("catalog", "publish", "--image", reference, "--push", cwd=project)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
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
    )
    result = olmtool("catalog", "publish", cwd=project)
    assert result.returncode == 0, result.stderr
    config = load_catalog_strict(project / "catalog")
    assert sorted(c.name for c in config.channels) == ["stable-v0.1", "stable-v0.2", "stable-v0.3"]
    assert config.packages[0].default_channel == "stable-v0.3"
    head = next(c for c in config.channels if c.name == "stable-v0.3").entries[-1]
    assert head.name == "etcd-operator.v0.3.0"
    assert head.replaces == "etcd-operator.v0.2.0"
    assert head.skips == ["etcd-operator.v0.1.0"]
