"""Bundle images: built without a container engine, pushed to a real registry, and read
back by an independent client (skopeo) and by ``bundle validate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olmtool import yamlwrite
from olmtool.actions import ImageTarget, bundle_build, bundle_dir_image, bundle_validate
from olmtool.bundle import build_bundle
from olmtool.bundle.image import bundle_image
from olmtool.cli.output import error_line
from olmtool.config import load_project
from olmtool.errors import InputError, OlmtoolError
from olmtool.images import LocalRegistry, build_image, pull, push, read_oci_layout
from tests.catalog.test_cli_validate import cli
from tests.conftest import Skopeo

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
    result = bundle_build(
        config=project / "olmtool.yaml", image=ImageTarget(ref, layout=layout, push=True)
    )
    assert not result.failed
    assert result.image is not None and result.image.pushed
    pushed = result.as_dict()
    assert pushed["image"] == ref
    annotations = yamlwrite.loads((project / BUNDLE / "metadata/annotations.yaml").read_text())

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
    report = bundle_validate(ref)
    assert report.passed(), report.findings
    assert report.as_dict()["bundle"] == ref

    # opm takes an image for a bundle by its package label, then reads annotations.yaml:
    # a label that disagrees with the files misleads (a warning), a missing one is refused.
    package = "operators.operatorframework.io.bundle.package.v1"
    files = {n: t.encode() for n, t in bundle.files.items() if n != "bundle.Dockerfile"}
    wrong = {**bundle.labels, package: "other"}
    push(build_image(files, wrong), f"{registry.address}/widget-operator-bundle:mislabelled")
    mislabelled = bundle_validate(f"{registry.address}/widget-operator-bundle:mislabelled")
    assert mislabelled.passed() and not mislabelled.passed(strict=True)
    labels = [str(f) for f in mislabelled.warnings if f.check == "format/image-labels"]
    assert any("bundle.package.v1 is 'other'" in finding for finding in labels), labels

    unlabelled = {k: v for k, v in bundle.labels.items() if k != package}
    push(build_image(files, unlabelled), f"{registry.address}/widget-operator-bundle:unlabelled")
    bad = bundle_validate(f"{registry.address}/widget-operator-bundle:unlabelled")
    assert not bad.passed()
    labels = [str(f) for f in bad.errors if f.check == "format/image-labels"]
    assert any("not recognise it as a bundle" in finding for finding in labels), labels


@pytest.mark.e2e
def test_push_refused_is_one_line(project: Path, tmp_path: Path) -> None:
    from olmtool.ports import free_port

    ref = f"127.0.0.1:{free_port()}/widget-operator-bundle:1.2.0"
    target = ImageTarget(ref, layout=tmp_path / "layout", push=True)
    # An OlmtoolError is what olmtool.cli.main prints as one line, without a traceback.
    with pytest.raises(OlmtoolError, match="cannot reach registry") as refused:
        bundle_build(config=project / "olmtool.yaml", image=target)
    assert len(error_line(refused.value).splitlines()) == 1


# --- bundle image DIR: any bundle directory -----------------------------------------------


def test_directory_image_is_the_built_bundles_image(project: Path, tmp_path: Path) -> None:
    bundle = _built(project)
    bundle_build(config=project / "olmtool.yaml")
    layout = tmp_path / "oci-{version}"
    target = ImageTarget("r.example.com/{package}-bundle:{version}", layout=layout)
    result = bundle_dir_image(project / BUNDLE, target)
    assert result.image.digest == bundle_image(bundle).digest  # same bytes, same image
    assert (result.package, result.version, result.image.pushed) == (
        "widget-operator",
        "1.2.0",
        False,
    )
    assert result.as_dict()["image"] == "r.example.com/widget-operator-bundle:1.2.0"
    saved = read_oci_layout(tmp_path / "oci-1.2.0", "1.2.0")
    assert saved.labels == bundle.labels


def test_directory_image_of_a_bundle_not_built_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = Path(__file__).resolve().parents[2] / "bundle/etcd-operator/0.1.0"
    monkeypatch.chdir(tmp_path)
    result = bundle_dir_image(old, ImageTarget("localhost:5000/etcd-bundle:{version}"))
    assert result.image.reference == "localhost:5000/etcd-bundle:0.1.0"
    assert result.image.layout == Path("build/oci/etcd-operator-0.1.0")
    files = read_oci_layout(tmp_path / result.image.layout, "0.1.0").files()
    on_disk = {
        p.relative_to(old).as_posix(): p.read_bytes()
        for p in old.rglob("*")
        if p.is_file() and p.name != "bundle.Dockerfile"
    }
    assert files == on_disk


def test_a_directory_that_is_no_bundle_is_one_line(project: Path, tmp_path: Path) -> None:
    target = ImageTarget("r.example.com/x:1", layout=tmp_path / "layout")
    with pytest.raises(InputError, match="missing: no such bundle directory"):
        bundle_dir_image(tmp_path / "missing", target)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"not a bundle: the bundle has no manifests/ directory"):
        bundle_dir_image(tmp_path / "empty", target)
    bundle_build(config=project / "olmtool.yaml")
    annotations = project / BUNDLE / "metadata/annotations.yaml"
    annotations.write_text(
        "\n".join(line for line in annotations.read_text().splitlines() if "package" not in line)
    )
    with pytest.raises(
        InputError, match=r"names no operators\.operatorframework\.io\.bundle\.package"
    ):
        bundle_dir_image(project / BUNDLE, target)
    assert not (tmp_path / "layout").exists()


def test_image_command_prints_the_digest(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle_build(config=project / "olmtool.yaml")
    monkeypatch.chdir(project)
    text = cli("bundle", "image", BUNDLE, "--image", "r.example.com/w-bundle:{version}")
    assert text.returncode == 0, text.exception
    digest = bundle_image(_built(project)).digest
    assert text.stdout == (
        f"bundle {BUNDLE}\n"
        f"image r.example.com/w-bundle:1.2.0: {digest} (OCI layout build/oci/widget-operator-1.2.0)\n"
    )
    data = json.loads(
        cli("bundle", "image", BUNDLE, "-i", "r.example.com/w:1", "-o", "json").stdout
    )
    assert (data["digest"], data["pushed"], data["version"]) == (digest, False, "1.2.0")
    wrong = cli("bundle", "image", BUNDLE, "-i", "r.example.com/w:{tag}")
    assert wrong.returncode == 1 and (wrong.error or "").startswith(
        "--image 'r.example.com/w:{tag}'"
    )


@pytest.mark.e2e
def test_image_command_pushes_an_old_bundle(
    project: Path, registry: LocalRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle_build(config=project / "olmtool.yaml")
    monkeypatch.chdir(project)
    ref = f"{registry.address}/widget-operator-bundle:{{version}}"
    pushed = cli("bundle", "image", BUNDLE, "--image", ref, "--push")
    assert pushed.returncode == 0, pushed.exception
    reference = ref.replace("{version}", "1.2.0")
    assert f"pushed {reference}" in pushed.stdout
    assert pull(reference).digest == bundle_image(_built(project)).digest
