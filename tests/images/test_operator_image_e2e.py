"""``image build`` against a real ``docker-registry`` on loopback: the etcd operator's real
lock (needs PyPI), push, pull back, only the application layer
re-pushed after a code change, and a base image (the image runs under runc and on the
cluster's node: tests/e2e/test_images_runc.py, test_etcd_operator.py)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from olmtool.actions import image_build
from olmtool.images import Blob, LocalRegistry, RegistryClient, build_image, pull, push
from tests.images.operator_helpers import make_project, offline, with_config

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = "localhost:5000/olmtool/etcd-operator"


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.fixture
def etcd_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repository's project files the image needs (the real lock)."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    if not _pypi_reachable():
        pytest.skip("PyPI (pypi.org:443) is unreachable: the real lock's wheels come from it")
    root = tmp_path / "project"
    shutil.copytree(ROOT / "operator" / "etcd_operator", root / "operator" / "etcd_operator")
    shutil.copy(ROOT / "operator" / "requirements.lock", root / "operator")
    shutil.copytree(ROOT / "bundle" / "etcd-operator", root / "bundle" / "etcd-operator")
    shutil.copy(ROOT / "olmtool.yaml", root)
    return root


def test_build_push_pull_and_run_the_etcd_operator_image(
    etcd_project: Path,
    registry: LocalRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = etcd_project / "olmtool.yaml"
    result = image_build(config=config, bundle_tags=True, push=True, registry=registry.address)
    assert [saved.reference for saved in result.tags] == [
        f"{registry.address}/olmtool/etcd-operator:{tag}"
        for tag in ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0")
    ]
    pulled = pull(f"{registry.address}/olmtool/etcd-operator:0.3.0")
    assert pulled.digest == result.digest
    assert result.base == "docker.io/library/python:3.11" and result.base_layers == 1
    assert [layer["digest"] for layer in pulled.manifest_json["layers"]][1:] == [
        layer.digest for layer in result.layers
    ]
    settings = pulled.config_json["config"]
    assert settings["Entrypoint"] == ["python3", "-m", "etcd_operator"]
    assert "PYTHONPATH=/app/site-packages:/app" in settings["Env"]
    assert settings["Labels"]["org.opencontainers.image.version"] == "0.5.0"
    files = pulled.files()
    assert "app/site-packages/kopf/__init__.py" in files
    assert "app/etcd_operator/__init__.py" in files
    assert "usr/bin/python3.11" in files  # the Debian base: the image runs anywhere

    # a code change: only the application layer (and config) travel again
    (etcd_project / "operator" / "etcd_operator" / "__init__.py").write_text('"""changed"""\n')
    sent: list[str] = []
    original = RegistryClient.upload_blob

    def recording(client: RegistryClient, blob: Blob) -> bool:
        uploaded = original(client, blob)
        if uploaded:
            sent.append(blob.digest)
        return uploaded

    monkeypatch.setattr(RegistryClient, "upload_blob", recording)
    again = image_build(config=config, tags=["0.5.0"], push=True, registry=registry.address)
    assert again.layers[0].digest == result.layers[0].digest
    config_digest = pull(again.tags[0].reference).manifest_json["config"]["digest"]
    assert sorted(sent) == sorted([again.layers[1].digest, config_digest])


def test_stacked_on_a_base_image_from_a_registry(
    registry: LocalRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(monkeypatch, tmp_path / "cache")
    root = tmp_path / "project"
    root.mkdir()
    wheels = make_project(root)
    base = build_image({"usr/bin/tool": b"#!/bin/sh\n"}, {"base.label": "kept"})
    document = json.loads(base.config)
    document["config"].update(Env=["PATH=/usr/local/bin:/usr/bin:/bin"], Entrypoint=["tool"])
    base = with_config(base, document)
    base_ref = f"{registry.address}/test/base:1"
    push(base, base_ref)
    result = image_build(
        config=root / "olmtool.yaml",
        base=base_ref,
        tags=["stacked"],
        push=True,
        registry=registry.address,
        find_links=[wheels],
        no_index=True,
    )
    assert result.base == base_ref and result.base_layers == 1
    pulled = pull(f"{registry.address}/test/op:stacked")
    assert pulled.digest == result.digest
    assert pulled.layers[0] == base.layers[0] and len(pulled.layers) == 3
    diff_ids = pulled.config_json["rootfs"]["diff_ids"]
    assert diff_ids[0] == document["rootfs"]["diff_ids"][0]
    assert diff_ids[1:] == [layer.diff_id for layer in result.layers]
    settings = pulled.config_json["config"]
    assert settings["Env"][0] == "PATH=/usr/local/bin:/usr/bin:/bin"
    assert "PYTHONPATH=/app/site-packages:/app" in settings["Env"]
    assert settings["Entrypoint"] == ["python3", "-m", "op"]
    assert settings["Labels"]["base.label"] == "kept"
    assert {"usr/bin/tool", "app/op/__init__.py"} <= pulled.files().keys()
