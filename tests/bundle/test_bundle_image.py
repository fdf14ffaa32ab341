"""Bundle images: built without a container engine, pushed to a real registry, and read
back by an independent client (skopeo) and by ``bundle validate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olmtool import yamlio
from olmtool.bundle import build_bundle
from olmtool.bundle.image import bundle_image
from olmtool.config import load_project
from olmtool.images import LocalRegistry, build_image, push, read_oci_layout
from tests.conftest import Skopeo
from tests.test_cli import olmtool

BUNDLE = "out/widget-operator/1.2.0"


def _built(project: Path):
    settings = load_project(project / "olmtool.yaml").settings.bundle
    return build_bundle(settings, project)


def test_image_is_reproducible_and_labelled_like_annotations(project: Path) -> None:
    bundle = _built(project)
    first, second = bundle_image(bundle), bundle_image(_built(project))
    assert first.digest == second.digest
    assert first.labels == bundle.labels
    assert first.labels["operators.operatorframework.io.bundle.mediatype.v1"] == "registry+v1"
    files = first.files()
    assert "bundle.Dockerfile" not in files
    assert {name for name in files} == {n for n in bundle.files if n != "bundle.Dockerfile"}


@pytest.mark.e2e
def test_push_then_inspect_with_skopeo(
    project: Path, registry: LocalRegistry, skopeo: Skopeo, tmp_path: Path
) -> None:
    ref = f"{registry.address}/widget-operator-bundle:1.2.0"
    layout = tmp_path / "layout"
    result = olmtool(
        "bundle", "build", "--image", ref, "--push", "--layout", str(layout), "-o", "json",
        cwd=project,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    pushed = json.loads(result.stdout)
    annotations = yamlio.loads((project / BUNDLE / "metadata/annotations.yaml").read_text())

    remote = skopeo("inspect", "--tls-verify=false", f"docker://{ref}")
    assert remote["Labels"] == dict(annotations["annotations"])
    assert remote["Digest"] == pushed["digest"]
    assert remote["Architecture"] == "amd64" and remote["Os"] == "linux"

    copied = tmp_path / "copied"
    skopeo("copy", "--src-tls-verify=false", f"docker://{ref}", f"oci:{copied}:1.2.0")
    files = read_oci_layout(copied, "1.2.0").files()
    on_disk = {
        p.relative_to(project / BUNDLE).as_posix(): p.read_bytes()
        for p in (project / BUNDLE).rglob("*")
        if p.is_file() and p.name != "bundle.Dockerfile"
    }
    assert files == on_disk
    local = skopeo("inspect", f"oci:{layout}:1.2.0")
    assert local["Digest"] == pushed["digest"]


@pytest.mark.e2e
def test_validate_reads_a_bundle_image(project: Path, registry: LocalRegistry) -> None:
    ref = f"{registry.address}/widget-operator-bundle:validate"
    bundle = _built(project)
    push(bundle_image(bundle), ref)
    result = olmtool("bundle", "validate", ref, "-o", "json", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["bundle"] == ref

    # Labels are what OLM reads: an image whose labels disagree with its files is refused.
    wrong = {**bundle.labels, "operators.operatorframework.io.bundle.package.v1": "other"}
    files = {n: t.encode() for n, t in bundle.files.items() if n != "bundle.Dockerfile"}
    push(build_image(files, wrong), f"{registry.address}/widget-operator-bundle:mislabelled")
    bad = olmtool(
        "bundle", "validate", f"{registry.address}/widget-operator-bundle:mislabelled",
        cwd=project,
    )  # fmt: skip
    assert bad.returncode == 1
    assert "error [format/image-labels]" in bad.stdout
    assert "bundle.package.v1 is 'other'" in bad.stdout


@pytest.mark.e2e
def test_push_refused_is_one_line(project: Path, tmp_path: Path) -> None:
    from olmtool.cluster.controlplane import free_port

    ref = f"127.0.0.1:{free_port()}/widget-operator-bundle:1.2.0"
    result = olmtool("bundle", "build", "--image", ref, "--push", cwd=project)
    assert result.returncode == 1
    assert "cannot reach registry" in result.stderr and "Traceback" not in result.stderr
