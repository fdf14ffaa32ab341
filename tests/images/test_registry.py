"""Push and pull against a real docker-registry, checked with skopeo as an independent client."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest

from olmtool.images import (
    Credentials,
    LocalRegistry,
    RegistryClient,
    RegistryError,
    build_image,
    pull,
    push,
    read_oci_layout,
    write_oci_layout,
)
from olmtool.ports import free_port
from tests.conftest import USER, Skopeo

pytestmark = pytest.mark.e2e

FILES = {
    "manifests/x.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    "metadata/annotations.yaml": b"annotations:\n  operators.operatorframework.io.bundle.package.v1: etcd\n",
}
LABELS = {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
    "operators.operatorframework.io.bundle.package.v1": "etcd",
    "operators.operatorframework.io.bundle.channels.v1": "alpha",
}
IMAGE = build_image(FILES, LABELS)


def fresh(registry: LocalRegistry, tag: str = "0.1.0") -> str:
    """A reference in a repository of its own, so tests do not see each other's pushes."""
    return f"{registry.address}/etcd/bundle-{uuid.uuid4().hex[:8]}:{tag}"


def test_skopeo_sees_what_we_pushed(registry: LocalRegistry, skopeo: Skopeo) -> None:
    ref = fresh(registry)
    assert push(IMAGE, ref) == IMAGE.digest
    inspected = skopeo("inspect", "--tls-verify=false", f"docker://{ref}")
    assert inspected["Digest"] == IMAGE.digest
    assert inspected["Labels"] == LABELS
    assert (inspected["Architecture"], inspected["Os"]) == ("amd64", "linux")
    assert inspected["RepoTags"] == ["0.1.0"]


def test_skopeo_copy_to_a_layout_we_can_read(
    registry: LocalRegistry, skopeo: Skopeo, tmp_path: Path
) -> None:
    ref = fresh(registry)
    push(IMAGE, ref)
    skopeo("copy", "--src-tls-verify=false", f"docker://{ref}", f"oci:{tmp_path / 'copy'}:0.1.0")
    copied = read_oci_layout(tmp_path / "copy", "0.1.0")
    assert copied.files() == FILES
    assert copied.labels == LABELS
    assert copied.digest == IMAGE.digest


def test_skopeo_reads_our_layout(skopeo: Skopeo, tmp_path: Path) -> None:
    write_oci_layout(IMAGE, tmp_path / "layout", "0.1.0")
    inspected = skopeo("inspect", f"oci:{tmp_path / 'layout'}:0.1.0")
    assert inspected["Digest"] == IMAGE.digest
    assert inspected["Labels"] == LABELS


def test_skopeo_pushes_our_layout_and_we_pull_it(
    registry: LocalRegistry, skopeo: Skopeo, tmp_path: Path
) -> None:
    write_oci_layout(IMAGE, tmp_path / "layout", "0.1.0")
    ref = fresh(registry)
    skopeo("copy", "--dest-tls-verify=false", f"oci:{tmp_path / 'layout'}:0.1.0", f"docker://{ref}")
    assert pull(ref) == IMAGE


def test_pull_round_trips(registry: LocalRegistry) -> None:
    ref = fresh(registry)
    push(IMAGE, ref)
    pulled = pull(ref)
    assert pulled == IMAGE
    assert (pulled.files(), pulled.labels) == (FILES, LABELS)
    assert pull(f"{ref}@{IMAGE.digest}") == IMAGE


def test_push_twice_skips_blobs(registry: LocalRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[bool] = []
    upload = RegistryClient.upload_blob
    monkeypatch.setattr(
        RegistryClient,
        "upload_blob",
        lambda self, blob: sent.append(upload(self, blob)) or sent[-1],
    )
    ref = fresh(registry)
    assert push(IMAGE, ref) == push(IMAGE, ref) == IMAGE.digest
    assert sent == [True, True, False, False]
    assert pull(ref) == IMAGE


def test_pull_missing_tag(registry: LocalRegistry) -> None:
    ref = fresh(registry, "missing")
    with pytest.raises(RegistryError) as caught:
        pull(ref)
    assert str(caught.value) == f"pull {ref} refused: 404 MANIFEST_UNKNOWN: manifest unknown"


def test_closed_port() -> None:
    port = free_port()
    with pytest.raises(
        RegistryError, match=f"^cannot reach registry 127.0.0.1:{port}: connection refused$"
    ):
        push(IMAGE, f"127.0.0.1:{port}/etcd/bundle:0.1.0")


def test_auth_required(auth_registry: LocalRegistry, tmp_path: Path) -> None:
    ref = fresh(auth_registry)
    with pytest.raises(RegistryError) as caught:
        push(IMAGE, ref)
    message = str(caught.value)
    assert message.startswith(f"push {ref} refused: 401 UNAUTHORIZED: authentication required")
    assert "\n" not in message
    with pytest.raises(RegistryError, match="401 UNAUTHORIZED"):
        push(IMAGE, ref, auth=Credentials(USER.username, "wrong"))


def test_auth_with_credentials(auth_registry: LocalRegistry, skopeo: Skopeo) -> None:
    ref = fresh(auth_registry)
    assert push(IMAGE, ref, auth=USER) == IMAGE.digest
    assert pull(ref, auth=USER) == IMAGE
    creds = f"--creds={USER.username}:{USER.password}"
    assert skopeo("inspect", "--tls-verify=false", creds, f"docker://{ref}")["Labels"] == LABELS


def test_auth_from_a_docker_config_file(
    auth_registry: LocalRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded = base64.b64encode(f"{USER.username}:{USER.password}".encode()).decode()
    auth_file = tmp_path / "auth.json"
    auth_file.write_text(json.dumps({"auths": {auth_registry.address: {"auth": encoded}}}))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth_file))
    ref = fresh(auth_registry)
    assert push(IMAGE, ref) == IMAGE.digest
    assert pull(ref).files() == FILES


def test_tls_with_our_ca(
    tls_registry: tuple[LocalRegistry, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry, ca = tls_registry
    assert registry.url.startswith("https://")
    ref = fresh(registry)
    with pytest.raises(RegistryError, match="TLS certificate not trusted"):
        push(IMAGE, ref, insecure=False)
    with pytest.raises(
        RegistryError, match="400 Bad Request: Client sent an HTTP request to an HTTPS"
    ):
        push(IMAGE, ref)  # loopback means plain HTTP unless told otherwise
    monkeypatch.setenv("OLMTOOL_REGISTRY_CA", str(ca))
    assert push(IMAGE, ref, insecure=False) == IMAGE.digest
    assert pull(ref, insecure=False) == IMAGE
