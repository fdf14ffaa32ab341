"""The image builder is reproducible to the byte; layouts and layers read back safely."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from olmtool.errors import InputError
from olmtool.images import (
    Image,
    assemble_image,
    build_image,
    layer_tar,
    read_oci_layout,
    write_oci_layout,
)
from olmtool.images.image import (
    OCI_CONFIG,
    OCI_LAYER_GZIP,
    OCI_MANIFEST,
    canonical_json,
    digest_of,
    parse_manifest,
    select_platform,
)

FILES = {
    "manifests/etcd.clusterserviceversion.yaml": b"kind: ClusterServiceVersion\n",
    "manifests/etcdclusters.crd.yaml": b"kind: CustomResourceDefinition\n",
    "metadata/annotations.yaml": b"annotations: {}\n",
}
LABELS = {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.package.v1": "etcd",
}


def raw_tar(*members: tuple[str, bytes | str | None]) -> bytes:
    """A tar with arbitrary (even hostile) names: bytes = file, str = symlink target,
    None = directory."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            if body is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif isinstance(body, str):
                info.type, info.linkname = tarfile.SYMTYPE, body
                tar.addfile(info)
            else:
                info.size, info.mode = len(body), 0o644
                tar.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def members(image: Image) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(image.layers[0]), mode="r:gz") as tar:
        return tar.getmembers()


def test_same_input_same_bytes() -> None:
    first, second = build_image(FILES, LABELS), build_image(dict(reversed(FILES.items())), LABELS)
    assert first == second
    assert first.digest == second.digest
    assert first.digest.startswith("sha256:") and len(first.digest) == 71


def test_labels_and_contents_change_the_digest() -> None:
    base = build_image(FILES, LABELS).digest
    assert build_image(FILES, {**LABELS, "extra": "x"}).digest != base
    assert build_image({**FILES, "metadata/annotations.yaml": b"other\n"}, LABELS).digest != base
    assert build_image(FILES, LABELS, architecture="arm64").digest != base


def test_tar_entries_are_normalised() -> None:
    entries = members(build_image(FILES, LABELS))
    assert [m.name for m in entries] == [
        "manifests",
        "manifests/etcd.clusterserviceversion.yaml",
        "manifests/etcdclusters.crd.yaml",
        "metadata",
        "metadata/annotations.yaml",
    ]
    for member in entries:
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (
            0,
            0,
            0,
            "",
            "",
        )
        assert member.mode == (0o755 if member.isdir() else 0o644)
        assert member.isdir() or member.isreg()


def test_nested_dirs_get_entries() -> None:
    names = [m.name for m in members(build_image({"/a/b/c/d.txt": b"x"}, {}))]
    assert names == ["a", "a/b", "a/b/c", "a/b/c/d.txt"]


def test_gzip_header_has_no_timestamp() -> None:
    layer = build_image(FILES, LABELS).layers[0]
    assert layer[:2] == b"\x1f\x8b"
    assert layer[4:8] == b"\0\0\0\0"


def test_config_and_manifest() -> None:
    image = build_image(FILES, LABELS)
    config = json.loads(image.config)
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    assert config["created"] == "1970-01-01T00:00:00Z"
    assert config["config"] == {"Labels": LABELS}
    tar = gzip.decompress(image.layers[0])
    assert tar == layer_tar(FILES)
    assert config["rootfs"] == {"type": "layers", "diff_ids": [digest_of(tar)]}
    assert len(config["history"]) == 1

    manifest = json.loads(image.manifest)
    assert manifest["schemaVersion"] == 2
    assert manifest["mediaType"] == OCI_MANIFEST == image.media_type
    assert manifest["config"] == {
        "mediaType": OCI_CONFIG,
        "digest": digest_of(image.config),
        "size": len(image.config),
    }
    assert [layer["mediaType"] for layer in manifest["layers"]] == [OCI_LAYER_GZIP]
    assert manifest["layers"][0]["digest"] == digest_of(image.layers[0])
    for document in (image.manifest, image.config):
        assert document == canonical_json(json.loads(document))
    assert image.digest == digest_of(image.manifest)
    assert (image.labels, image.architecture, image.os) == (LABELS, "amd64", "linux")


def test_files_read_back() -> None:
    assert build_image(FILES, LABELS).files() == FILES
    assert build_image({"/abs/x": b"1"}, {}).files() == {"abs/x": b"1"}


@pytest.mark.parametrize("path", ["../x", "a/../b", "a//b", "./a", "", "a/", "/"])
def test_bad_build_paths(path: str) -> None:
    with pytest.raises(InputError, match="bad image path"):
        build_image({path: b"x"}, {})


def test_file_and_dir_clash() -> None:
    with pytest.raises(InputError, match="both a file and a directory"):
        build_image({"a": b"1", "a/b": b"2"}, {})


def test_non_string_label() -> None:
    with pytest.raises(InputError, match="label"):
        build_image(FILES, {"n": 1})  # type: ignore[dict-item]


def test_layers_apply_in_order_with_whiteouts() -> None:
    lower = layer_tar({"keep": b"1", "gone": b"2", "dir/a": b"3", "opq/a": b"4", "over": b"old"})
    upper = raw_tar(
        (".wh.gone", b""),
        ("dir/.wh.a", b""),
        ("opq/.wh..wh..opq", b""),
        ("opq/b", b"5"),
        ("over", b"new"),
        ("./dotted", b"6"),
    )
    image = assemble_image([lower, upper], {})
    assert image.files() == {"keep": b"1", "opq/b": b"5", "over": b"new", "dotted": b"6"}
    assert len(json.loads(image.config)["rootfs"]["diff_ids"]) == 2


def test_hard_links_read_as_copies() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("a")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
        link = tarfile.TarInfo("b")
        link.type, link.linkname = tarfile.LNKTYPE, "a"
        tar.addfile(link)
    assert assemble_image([buffer.getvalue()], {}).files() == {"a": b"abc", "b": b"abc"}


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (b"not a tar at all" * 100, "layer 1 is not a readable"),
        (gzip.compress(b"x" * 5000)[:40] + b"\xff" * 40, "layer 1 is not a readable"),
        (b"\x28\xb5\x2f\xfd" + b"\0" * 100, "layer 1 is zstd-compressed"),
    ],
    ids=["garbage", "corrupt-gzip", "zstd"],
)
def test_a_layer_that_cannot_be_read(blob: bytes, problem: str) -> None:
    image = build_image(FILES, {})
    broken = Image(image.manifest, image.config, (blob,))
    with pytest.raises(InputError, match=problem) as caught:
        broken.files()
    assert "\n" not in str(caught.value)


def test_extract(tmp_path: Path) -> None:
    layer = raw_tar(("conf", None), ("conf/a.yaml", b"a"), ("link", "conf/a.yaml"))
    assemble_image([layer], {}).extract(tmp_path / "out")
    assert (tmp_path / "out/conf/a.yaml").read_bytes() == b"a"
    assert (tmp_path / "out/link").is_symlink()
    assert (tmp_path / "out/link").read_bytes() == b"a"


@pytest.mark.parametrize(
    ("layer", "problem"),
    [
        (raw_tar(("../evil", b"x")), "climbs out"),
        (raw_tar(("a/../../evil", b"x")), "climbs out"),
        (raw_tar(("/etc/evil", b"x")), "absolute path"),
        (raw_tar(("link", "../outside")), "points outside"),
        (raw_tar(("link", "/etc")), "points outside"),
        (raw_tar(("d", None), ("d/link", "../../outside")), "points outside"),
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "symlink-up", "symlink-absolute", "symlink-deep"],
)
def test_extract_refuses_escapes(tmp_path: Path, layer: bytes, problem: str) -> None:
    dest = tmp_path / "a" / "dest"
    with pytest.raises(InputError, match=problem):
        assemble_image([layer], {}).extract(dest)
    assert list(tmp_path.iterdir()) == []  # checked before anything is written


def test_extract_never_writes_through_a_symlink_already_there(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "conf").symlink_to(outside)
    with pytest.raises(InputError, match="leads outside"):  # no entry for conf/ itself
        assemble_image([raw_tar(("conf/x", b"x"))], {}).extract(dest)
    build_image({"conf/x": b"x"}, {}).extract(dest)  # conf/ is a directory entry: replaces it
    assert not (dest / "conf").is_symlink()
    assert (dest / "conf/x").read_bytes() == b"x"
    assert list(outside.iterdir()) == []


def test_layout_round_trip(tmp_path: Path) -> None:
    image = build_image(FILES, LABELS)
    layout = tmp_path / "layout"
    write_oci_layout(image, layout, "0.1.0")
    assert json.loads((layout / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((layout / "index.json").read_text())
    (descriptor,) = index["manifests"]
    assert descriptor["digest"] == image.digest
    assert descriptor["mediaType"] == OCI_MANIFEST
    assert descriptor["annotations"] == {"org.opencontainers.image.ref.name": "0.1.0"}
    blobs = {p.name for p in (layout / "blobs/sha256").iterdir()}
    assert blobs == {digest_of(b)[7:] for b in (image.manifest, image.config, *image.layers)}
    assert read_oci_layout(layout, "0.1.0") == image
    assert read_oci_layout(layout) == image


def test_layout_is_replaced_whole(tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    write_oci_layout(build_image({"a": b"1"}, {}), layout, "old")
    second = build_image({"b": b"2"}, {})
    write_oci_layout(second, layout, "new")
    assert read_oci_layout(layout) == second
    assert len(list((layout / "blobs/sha256").iterdir())) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["layout"]  # no temp or old dirs left


def test_layout_never_replaces_other_files(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "precious.txt").write_text("keep me")
    with pytest.raises(InputError, match="not an OCI image layout"):
        write_oci_layout(build_image(FILES, {}), tmp_path / "project", "t")
    assert (tmp_path / "project" / "precious.txt").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["project"]


def test_layout_read_errors_name_the_directory(tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    with pytest.raises(InputError, match="no oci-layout") as caught:
        read_oci_layout(layout)
    assert str(layout) in str(caught.value)

    image = build_image(FILES, LABELS)
    write_oci_layout(image, layout, "0.1.0")
    with pytest.raises(InputError, match=r"no image tagged 'nope' \(tags: 0.1.0\)") as caught:
        read_oci_layout(layout, "nope")
    assert str(layout) in str(caught.value)

    blob = layout / "blobs/sha256" / digest_of(image.config)[7:]
    blob.write_bytes(b"{}")
    with pytest.raises(InputError, match="is corrupt"):
        read_oci_layout(layout)
    blob.unlink()
    with pytest.raises(InputError, match="missing blob"):
        read_oci_layout(layout)


def test_layout_with_an_index_picks_linux_amd64(tmp_path: Path) -> None:
    amd64, arm64 = build_image(FILES, {}), build_image(FILES, {}, architecture="arm64")
    write_oci_layout(arm64, tmp_path / "arm", "x")
    write_oci_layout(amd64, tmp_path / "layout", "x")
    blobs = tmp_path / "layout/blobs/sha256"
    for blob in (tmp_path / "arm/blobs/sha256").iterdir():
        (blobs / blob.name).write_bytes(blob.read_bytes())
    nested = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {**_descriptor(arm64), "platform": {"architecture": "arm64", "os": "linux"}},
                {**_descriptor(amd64), "platform": {"architecture": "amd64", "os": "linux"}},
            ],
        }
    )
    (blobs / digest_of(nested)[7:]).write_bytes(nested)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "digest": digest_of(nested),
                "size": len(nested),
                "annotations": {"org.opencontainers.image.ref.name": "multi"},
            }
        ],
    }
    (tmp_path / "layout/index.json").write_text(json.dumps(index))
    assert read_oci_layout(tmp_path / "layout", "multi") == amd64


def _descriptor(image: Image) -> dict[str, object]:
    return {"mediaType": image.media_type, "digest": image.digest, "size": len(image.manifest)}


def test_select_platform_lists_what_there_is() -> None:
    index = {"manifests": [{"digest": "d", "platform": {"architecture": "s390x", "os": "linux"}}]}
    with pytest.raises(InputError, match=r"no linux/amd64 image .*linux/s390x"):
        select_platform(index)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (b"nope", "not JSON"),
        (b'{"schemaVersion": 1}', "schema 1"),
        (b'{"schemaVersion": 2, "mediaType": "text/plain"}', "unsupported"),
        (b'{"schemaVersion": 2, "config": {}}', "malformed"),
    ],
)
def test_parse_manifest_rejects(document: bytes, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        parse_manifest(document)


def test_parse_manifest_guesses_a_missing_media_type() -> None:
    assert (
        parse_manifest(b'{"schemaVersion":2,"config":{},"layers":[]}')["mediaType"] == OCI_MANIFEST
    )
    index = parse_manifest(b'{"schemaVersion":2,"manifests":[]}', "application/json")
    assert index["mediaType"] == "application/vnd.oci.image.index.v1+json"
