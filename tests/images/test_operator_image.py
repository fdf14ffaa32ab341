"""``image build`` without a registry: settings, reproducible layers, the image config,
stacking on a base, bundle tags and one-line errors. pip installs a wheel made here
(``--no-index --find-links``), so no test needs the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olmtool.actions import image_build
from olmtool.config import load_project
from olmtool.errors import ArgumentError, InputError
from olmtool.images import (
    PipError,
    RegistryError,
    WheelSource,
    build_image,
    build_operator_image,
    bundle_tags,
    read_oci_layout,
)
from olmtool.images.build import merge_env
from tests.images.operator_helpers import NAME, make_project, offline, with_config
from tests.test_cli import olmtool

ROOT = Path(__file__).resolve().parents[2]


def assert_hash_based_bytecode(files: dict[str, bytes]) -> None:
    """Bytecode only as olmtool compiles it: one unchecked hash-based (PEP 552: flags 1)
    ``__pycache__/<module>.cpython-311.pyc`` per module (none of pip's; none at all when
    the tests do not run on 3.11, the images' Python)."""
    import sys

    compiled = {p for p in files if p.endswith((".pyc", ".pyo"))}
    modules = {p for p in files if p.endswith(".py")}
    if sys.version_info[:2] != (3, 11):
        assert not compiled
        return
    expected = {
        f"{p.rpartition('/')[0]}/__pycache__/{p.rpartition('/')[2][:-3]}.cpython-311.pyc"
        for p in modules
    }
    assert compiled == expected
    assert {int.from_bytes(files[p][4:8], "little") for p in compiled} == {1}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(project dir, wheels dir) with a private wheel cache."""
    offline(monkeypatch, tmp_path / "cache")
    root = tmp_path / "project"
    root.mkdir()
    return root, make_project(root)


def build(root: Path, wheels: Path, **kwargs: object):
    return image_build(config=root / "olmtool.yaml", find_links=[wheels], no_index=True, **kwargs)


def test_unknown_key_is_reported_with_file_and_line(tmp_path: Path) -> None:
    make_project(tmp_path, extra="  colour: blue\n")
    with pytest.raises(InputError) as caught:
        load_project(tmp_path / "olmtool.yaml")
    lines = (tmp_path / "olmtool.yaml").read_text().splitlines()
    expected = f"olmtool.yaml:{len(lines)}: image.colour: unknown key"
    assert str(caught.value).endswith(expected)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("name", "localhost:5000/test/op:1.0", "name the repository only"),
        ("name", "Not A Name", "invalid image reference"),
        ("python", "'2.7'", "not a CPython 3 version"),
        ("workingDir", "app", "must be an absolute path"),
    ],
)
def test_bad_settings_name_the_key(tmp_path: Path, key: str, value: str, message: str) -> None:
    make_project(tmp_path, extra="" if key == "name" else f"  {key}: {value}\n")
    config = tmp_path / "olmtool.yaml"
    if key == "name":
        config.write_text(config.read_text().replace(f"  name: {NAME}\n", f"  name: {value}\n"))
    with pytest.raises(InputError) as caught:
        load_project(tmp_path / "olmtool.yaml")
    assert f"image.{key}" in str(caught.value) and message in str(caught.value)


def test_same_sources_give_the_same_digest(
    project: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, wheels = project
    first = build(root, wheels)
    offline(monkeypatch, tmp_path / "other-cache")  # a second, cold install by pip
    second = build(root, wheels)
    assert first.digest == second.digest
    assert [layer.digest for layer in first.layers] == [layer.digest for layer in second.layers]
    assert (root / "out" / "op-1.2.3" / "oci-layout").is_file()


def test_a_code_change_changes_only_the_application_layer(project: tuple[Path, Path]) -> None:
    root, wheels = project
    before = build(root, wheels)
    (root / "src" / "op" / "__init__.py").write_text("VALUE = 2\n")
    after = build(root, wheels)
    assert [layer.name for layer in after.layers] == ["dependencies", "application"]
    assert before.layers[0].digest == after.layers[0].digest
    assert before.layers[1].digest != after.layers[1].digest


def test_the_image_config_and_files(project: tuple[Path, Path]) -> None:
    root, wheels = project
    result = build(root, wheels)
    image = read_oci_layout(result.tags[0].layout, "1.2.3")
    config = image.config_json
    assert (config["architecture"], config["os"]) == ("amd64", "linux")
    assert config["created"] == "1970-01-01T00:00:00Z"  # no git, no SOURCE_DATE_EPOCH
    settings = config["config"]
    assert settings["Entrypoint"] == ["python3", "-m", "op"]
    assert "Cmd" not in settings
    assert settings["Env"] == ["PYTHONPATH=/app/site-packages:/app", "PYTHONUNBUFFERED=1"]
    assert settings["WorkingDir"] == "/app"
    assert settings["Labels"] == {
        "org.opencontainers.image.title": "op",
        "org.opencontainers.image.version": "1.2.3",
        "org.opencontainers.image.source": "https://example.com/op",
        "org.opencontainers.image.created": "1970-01-01T00:00:00Z",
        "team": "olm",
    }
    files = image.files()
    assert files["app/op/__init__.py"] == b"VALUE = 1\n"
    assert files["app/site-packages/tinydep/__init__.py"] == b"VERSION = '1.0'\n"
    assert not [p for p in files if "direct_url" in p]
    assert_hash_based_bytecode(files)
    script = files["app/site-packages/bin/tinydep"]
    assert script.startswith(b"#!/usr/bin/env python3\n")  # not the builder's interpreter
    record = files["app/site-packages/tinydep-1.0.dist-info/RECORD"].decode()
    assert "bin/tinydep,sha256=" in record and f",{len(script)}" in record


def test_source_date_epoch_fixes_the_time(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, wheels = project
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    result = build(root, wheels)
    assert (result.created, result.created_from) == ("2023-11-14T22:13:20Z", "SOURCE_DATE_EPOCH")


def test_tags_one_layout_each(project: tuple[Path, Path]) -> None:
    root, wheels = project
    result = build(root, wheels, tags=["a", "b", "a"])
    assert [saved.reference for saved in result.tags] == [f"{NAME}:a", f"{NAME}:b"]
    assert len({saved.digest for saved in result.tags}) == 1
    assert read_oci_layout(root / "out" / "op-b", "b").digest == result.digest


def test_bundle_tags_of_the_etcd_bundles() -> None:
    tags = bundle_tags(ROOT / "bundle" / "etcd-operator", "localhost:5000/olmtool/etcd-operator")
    assert tags == ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"]
    assert bundle_tags(ROOT / "bundle" / "etcd-operator", "localhost:5000/other") == []


def test_bundle_tags_option(project: tuple[Path, Path]) -> None:
    root, wheels = project
    csv = root / "bundle" / "op" / "1.2.3" / "manifests" / "op.clusterserviceversion.yaml"
    csv.parent.mkdir(parents=True)
    pod = {"containers": [{"name": "op", "image": f"{NAME}:1.2.3"}]}
    deployment = {"name": "op", "spec": {"template": {"spec": pod}}}
    csv.write_text(json.dumps({"spec": {"install": {"spec": {"deployments": [deployment]}}}}))
    result = build(root, wheels, bundle_tags=True, tags=["dev"])
    assert [saved.reference for saved in result.tags] == [f"{NAME}:dev", f"{NAME}:1.2.3"]


def test_stacked_on_a_base(project: tuple[Path, Path]) -> None:
    root, wheels = project
    base = build_image({"etc/os-release": b"ID=test\n"}, {"base.label": "kept", "team": "base"})
    config = json.loads(base.config)
    config["config"].update(Env=["PATH=/usr/bin:/bin", "PYTHONUNBUFFERED=0"], Cmd=["sh"])
    base = with_config(base, config)
    settings = load_project(root / "olmtool.yaml").settings.image
    built = build_operator_image(
        settings,
        root,
        labels={"team": "olm"},
        created="2024-01-01T00:00:00Z",
        base=base,
        wheels=WheelSource((wheels,), index=False),
    )
    image = built.image
    assert built.base_layers == 1 and image.layers[0] == base.layers[0]
    diff_ids = image.config_json["rootfs"]["diff_ids"]
    assert diff_ids[0] == config["rootfs"]["diff_ids"][0]
    assert diff_ids[1:] == [layer.diff_id for layer in built.layers]
    assert len(image.config_json["history"]) == 3
    settings_out = image.config_json["config"]
    assert settings_out["Env"] == [
        "PATH=/usr/bin:/bin",
        "PYTHONUNBUFFERED=1",
        "PYTHONPATH=/app/site-packages:/app",
    ]
    assert "Cmd" not in settings_out and settings_out["Entrypoint"] == ["python3", "-m", "op"]
    assert settings_out["Labels"] == {"base.label": "kept", "team": "olm"}
    assert image.files()["etc/os-release"] == b"ID=test\n"


def test_merge_env_keeps_order_and_overrides() -> None:
    assert merge_env(["PATH=/bin", "A=1"], {"A": "2", "B": "x=y"}) == ["PATH=/bin", "A=2", "B=x=y"]


def test_missing_lock_and_package_are_one_line(project: tuple[Path, Path]) -> None:
    root, wheels = project
    (root / "requirements.lock").unlink()
    with pytest.raises(InputError, match=r"requirements.lock: no such lock file"):
        build(root, wheels)
    make_project(root / "again")
    (root / "again" / "src" / "op" / "__init__.py").unlink()
    for child in sorted((root / "again" / "src" / "op").rglob("*"), reverse=True):
        child.unlink() if child.is_file() else child.rmdir()
    (root / "again" / "src" / "op").rmdir()
    with pytest.raises(InputError, match=r"src/op: no such package directory"):
        build(root / "again", wheels)


def test_pip_failure_names_the_lock(project: tuple[Path, Path]) -> None:
    root, wheels = project
    lock = root / "requirements.lock"
    lock.write_text(lock.read_text().replace("sha256:", "sha256:0", 1)[:-2] + "\n")
    with pytest.raises(PipError) as caught:
        build(root, wheels)
    assert "requirements.lock: pip download failed" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_bad_flags_are_argument_errors(project: tuple[Path, Path]) -> None:
    root, wheels = project
    with pytest.raises(ArgumentError) as caught:
        build(root, wheels, base="Bad Ref")
    assert caught.value.argument == "base"
    with pytest.raises(ArgumentError) as caught:
        build(root, wheels, registry="127.0.0.1:5000")
    assert caught.value.argument == "registry"
    with pytest.raises(ArgumentError) as caught:
        build(root, wheels, tags=["-x"])
    assert caught.value.argument == "tags"
    with pytest.raises(ArgumentError) as caught:
        build(root, wheels, base="127.0.0.1:1/base:1")  # nothing listens on port 1
    assert "cannot reach registry" in caught.value.message


def test_unreachable_registry_is_one_line(project: tuple[Path, Path]) -> None:
    root, wheels = project
    with pytest.raises(RegistryError) as caught:
        build(root, wheels, push=True, registry="127.0.0.1:1")
    assert str(caught.value) == "cannot reach registry 127.0.0.1:1: connection refused"
    assert (root / "out" / "op-1.2.3" / "oci-layout").is_file()  # the layout is whole


def test_cli_json_and_one_line_errors(project: tuple[Path, Path]) -> None:
    root, wheels = project
    done = olmtool(
        "image", "build", "-o", "json", "--no-index", "--find-links", str(wheels), cwd=root
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [t["image"] for t in data["tags"]] == [f"{NAME}:1.2.3"]
    assert [layer["name"] for layer in data["layers"]] == ["dependencies", "application"]
    assert data["seconds"] >= 0 and data["tags"][0]["pushed"] is False
    failed = olmtool("image", "build", "--base", "Bad Ref", cwd=root)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.strip().splitlines()[0].startswith("error: --base")
    assert "Example" in olmtool("image", "build", "--help", cwd=root).stdout


def _fake_debian_base(monkeypatch: pytest.MonkeyPatch) -> object:
    """``python_base`` replaced by a one-layer image with the real base's config."""
    import importlib

    from olmtool.images.debian import BuiltImage
    from olmtool.images.debian.recipes import PYTHON_311

    base = build_image({"usr/bin/python3.11": b"\x7fELF"}, {})
    document = json.loads(base.config)
    document["config"] = dict(PYTHON_311.config)
    base = with_config(base, document)
    built = BuiltImage("python-3.11", PYTHON_311.reference, Path("/nonexistent"), base, True, 0.0)
    action = importlib.import_module("olmtool.actions.image_build")
    monkeypatch.setattr(action, "python_base", lambda progress=None: built)
    return base


def test_the_default_base_is_olmtools_debian_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(monkeypatch, tmp_path / "cache")
    root = tmp_path / "project"
    root.mkdir()
    wheels = make_project(root, base=None)
    base = _fake_debian_base(monkeypatch)
    result = build(root, wheels)
    assert result.base == "docker.io/library/python:3.11" and result.base_layers == 1
    image = read_oci_layout(result.tags[0].layout)
    assert image.layers[0] == base.layers[0]
    config = image.config_json["config"]
    assert config["User"] == "65532"
    assert config["Env"][0].startswith("PATH=/usr/local/sbin:")
    assert "PYTHONPATH=/app/site-packages:/app" in config["Env"]


def test_another_python_than_the_debian_base_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(monkeypatch, tmp_path / "cache")
    root = tmp_path / "project"
    root.mkdir()
    wheels = make_project(root, base=None, extra="")
    text = (
        (root / "olmtool.yaml")
        .read_text()
        .replace("  output: out\n", "  output: out\n  python: '3.12'\n")
    )
    (root / "olmtool.yaml").write_text(text)
    _fake_debian_base(monkeypatch)
    with pytest.raises(InputError, match=r"olmtool's Debian base has Python 3\.11") as caught:
        build(root, wheels)
    assert caught.value.line == text.splitlines().index("  python: '3.12'") + 1


def test_without_apt_get_the_cli_names_base_in_one_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = tmp_path / "project"
    root.mkdir()
    wheels = make_project(root, base=None)
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "OLMTOOL_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "olmtool",
            "image",
            "build",
            "--no-index",
            "--find-links",
            str(wheels),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "apt-get not found" in lines[0] and "--base REF" in lines[0]
