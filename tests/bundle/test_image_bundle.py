"""A bundle image is read in memory (no temporary directory) with exactly the findings
the same tree gives on disk: every broken-bundle corpus case, as an image, loads to the
same files, objects, annotations and findings as its directory."""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest

from olmtool.bundle import image_bundle
from olmtool.bundle.model import Bundle, load_bundle
from olmtool.errors import InputError
from olmtool.images import assemble_image, build_image
from tests.bundle.test_corpus import CASES, SOURCE

LABEL = "registry.example/etcd/bundle:0.3.0"


def _image_of(root: Path) -> bytes:
    """The directory as ``COPY . /`` puts it in a layer: files, empty directories,
    symlinks, modes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_fifo() or path.is_socket():
                continue  # never in an image layer olmtool reads
            tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
    return buffer.getvalue()


def _state(bundle: Bundle) -> tuple[object, ...]:
    return (
        bundle.files,
        sorted(bundle.directories),
        sorted(bundle.unreadable),
        [(o.file, o.index, o.document) for o in bundle.objects],
        bundle.annotations,
        bundle.annotations_document,
        [(p.check, p.severity, p.message, p.file, p.line) for p in bundle.problems],
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_an_image_loads_like_its_directory(case, tmp_path: Path) -> None:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    case.mutate(root)
    if any(path.is_fifo() for path in root.rglob("*")):
        pytest.skip("a FIFO has no place in an image layer")
    image = assemble_image([_image_of(root)], {"a": "b"})
    on_disk = load_bundle(root, label=LABEL)
    in_memory = image_bundle(image, label=LABEL)
    assert _state(in_memory) == _state(on_disk)
    assert in_memory.image_labels == {"a": "b"}


def test_a_plain_image_never_touches_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        p.relative_to(SOURCE).as_posix(): p.read_bytes() for p in SOURCE.rglob("*") if p.is_file()
    }
    image = build_image(files, {})

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a bundle image without symlinks is read in memory")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", refused)
    bundle = image_bundle(image, label=LABEL)
    assert bundle.csv is not None
    assert not bundle.problems


def test_an_image_with_a_symlink_is_read_on_disk_and_removed(tmp_path: Path) -> None:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    (root / "manifests" / "again.yaml").symlink_to("etcd-operator.clusterserviceversion.yaml")
    image = assemble_image([_image_of(root)], {})
    assert image.plain_tree() is None
    before = set(Path(tempfile.gettempdir()).glob("olmtool-image-*"))
    bundle = image_bundle(image, label=LABEL)
    assert _state(bundle) == _state(load_bundle(root, label=LABEL))
    assert set(Path(tempfile.gettempdir()).glob("olmtool-image-*")) == before


def test_a_symlink_out_of_the_image_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    (root / "manifests" / "link.yaml").symlink_to("/etc/passwd")
    with pytest.raises(InputError, match="points outside the image"):
        image_bundle(assemble_image([_image_of(root)], {}), label=LABEL)
