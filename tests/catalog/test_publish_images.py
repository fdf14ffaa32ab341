"""``catalog publish``: the package's ``image:`` for directory bundles (of ``bundles:`` and of
templates alike), no ``image: ''`` unless ``--allow-empty-image``, and olmtool.yaml's
waivers over the validation that guards publishing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olmtool.catalog.load import load_catalog_strict
from olmtool.cli.output import error_line
from olmtool.errors import ArgumentError
from olmtool.fsutil import read_tree
from tests.catalog.test_cli_validate import cli
from tests.catalog.test_publish import _project, _publish
from tests.test_cli import olmtool

TEMPLATE = (
    "schema: olm.template.basic\n"
    "entries:\n"
    "  - {schema: olm.package, name: etcd-operator, defaultChannel: stable}\n"
    "  - schema: olm.channel\n    package: etcd-operator\n    name: stable\n"
    "    entries:\n      - name: etcd-operator.v0.1.0\n"
    "      - {name: etcd-operator.v0.2.0, replaces: etcd-operator.v0.1.0}\n"
    "  - {schema: olm.bundle, image: bundles/0.1.0}\n"
    "  - {schema: olm.bundle, image: bundles/0.2.0}\n"
)


def _template_project(tmp_path: Path, image: str | None) -> Path:
    project = _project(tmp_path)
    (project / "template.yaml").write_text(TEMPLATE)
    line = f"      image: {json.dumps(image)}\n" if image is not None else ""
    (project / "olmtool.yaml").write_text(
        "catalog:\n  packages:\n    - name: etcd-operator\n      template: template.yaml\n" + line
    )
    return project


def test_a_template_takes_the_packages_image_pattern(tmp_path: Path) -> None:
    project = _template_project(tmp_path, "registry.example.com/{package}-bundle:{version}")
    assert not _publish(project).failed
    images = [b.image for b in load_catalog_strict(project / "catalog").bundles]
    assert images == [
        "registry.example.com/etcd-operator-bundle:0.1.0",
        "registry.example.com/etcd-operator-bundle:0.2.0",
    ]


def test_an_empty_image_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    project = _template_project(tmp_path, None)
    with pytest.raises(ArgumentError) as refused:
        _publish(project)
    assert refused.value.argument == "allow_empty_image"
    line = error_line(refused.value)
    assert line.startswith(
        "--allow-empty-image is needed to publish bundle etcd-operator.v0.1.0 of package "
        "'etcd-operator' with image ''"
    )
    assert "{version}" in line and "\n" not in line
    assert not (project / "catalog").exists()


def test_allow_empty_image_publishes_it(tmp_path: Path) -> None:
    project = _template_project(tmp_path, None)
    assert not _publish(project, allow_empty_image=True).failed
    assert [b.image for b in load_catalog_strict(project / "catalog").bundles] == ["", ""]
    assert not _publish(project, allow_empty_image=True, check=True).failed


def test_the_command_names_the_bundle_and_the_flag(tmp_path: Path) -> None:
    project = _template_project(tmp_path, None)
    refused = olmtool("catalog", "publish", cwd=project)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert "--allow-empty-image is needed to publish bundle etcd-operator.v0.1.0" in refused.stderr
    allowed = olmtool("catalog", "publish", "--allow-empty-image", cwd=project)
    assert allowed.returncode == 0, allowed.stderr


def test_project_waivers_accept_findings_that_would_stop_publishing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, bundles='"bundles/*"')
    config = project / "olmtool.yaml"
    config.write_text(
        config.read_text() + "      defaultChannel: beta\n"  # no such channel: an error
        "validate:\n  ignore:\n    - check: default-channel\n      reason: beta comes next week\n"
    )
    monkeypatch.chdir(project)
    result = cli("catalog", "publish", "-o", "json")
    assert result.returncode == 0, result.exception
    data = json.loads(result.stdout)
    (waived,) = data["waived"]
    assert (waived["check"], waived["severity"], waived["reason"], waived["waiver"]) == (
        "default-channel", "error", "beta comes next week", "olmtool.yaml:11",
    )  # fmt: skip
    text = cli("catalog", "publish", "--check")
    assert text.returncode == 0
    assert text.stdout.startswith(
        'waived [default-channel] package "etcd-operator": default channel "beta" not found'
    )
    config.write_text(config.read_text().split("validate:")[0])
    before = read_tree(project / "catalog")
    stale = cli("catalog", "publish")
    assert stale.returncode == 1 and "would be invalid, nothing written" in (stale.error or "")
    assert read_tree(project / "catalog") == before
