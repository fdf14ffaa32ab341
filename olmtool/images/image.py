"""OCI images as plain data: a deterministic builder, a reader, and the OCI image layout.

An :class:`Image` is the exact bytes a registry stores (manifest, config, layer blobs), so
its digest is the registry's digest. :func:`build_image` fixes every timestamp, owner and
mode, so the same files and labels always give the same digest: a bundle image can be
rebuilt and compared instead of trusted.

>>> image = build_image({"manifests/a.yaml": b"kind: A\\n"}, {"a": "b"})
>>> image.files()
{'manifests/a.yaml': b'kind: A\\n'}
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import posixpath
import re
import shutil
import tarfile
import tempfile
import uuid
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple

from olmtool.errors import InputError

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
IMAGE_MANIFESTS = (OCI_MANIFEST, DOCKER_MANIFEST)
INDEXES = (OCI_INDEX, DOCKER_MANIFEST_LIST)

REF_NAME = "org.opencontainers.image.ref.name"
LAYOUT_VERSION = "1.0.0"
EPOCH = "1970-01-01T00:00:00Z"

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_WHITEOUT = ".wh."
_OPAQUE = ".wh..wh..opq"
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class Blob(NamedTuple):
    """One content-addressed blob and the media type its manifest gives it."""

    digest: str
    media_type: str
    data: bytes


class _Entry(NamedTuple):
    kind: Literal["file", "dir", "symlink"]
    mode: int
    data: bytes = b""
    target: str = ""


@dataclass(frozen=True)
class FileTree:
    """An image's regular files (path -> bytes) and directories, paths relative to its root."""

    files: dict[str, bytes]
    directories: frozenset[str]


@dataclass(frozen=True)
class Image:
    """A single-platform image as the blobs a registry stores, byte for byte."""

    manifest: bytes
    config: bytes
    layers: tuple[bytes, ...]
    media_type: str = OCI_MANIFEST

    @property
    def digest(self) -> str:
        """The manifest digest: what ``image@sha256:...`` pins and registries report."""
        return digest_of(self.manifest)

    @cached_property
    def manifest_json(self) -> dict[str, Any]:
        return json.loads(self.manifest)

    @cached_property
    def config_json(self) -> dict[str, Any]:
        return json.loads(self.config)

    @property
    def labels(self) -> dict[str, str]:
        return dict((self.config_json.get("config") or {}).get("Labels") or {})

    @property
    def architecture(self) -> str:
        return str(self.config_json.get("architecture", ""))

    @property
    def os(self) -> str:
        return str(self.config_json.get("os", ""))

    def blobs(self) -> list[Blob]:
        """The config blob, then the layers, with the digests the manifest names them by."""
        manifest = self.manifest_json
        config = manifest["config"]
        blobs = [Blob(config["digest"], config["mediaType"], self.config)]
        for descriptor, data in zip(manifest["layers"], self.layers, strict=True):
            blobs.append(Blob(descriptor["digest"], descriptor["mediaType"], data))
        return blobs

    def files(self) -> dict[str, bytes]:
        """The regular files of the flattened filesystem (layers applied in order)."""
        return {path: entry.data for path, entry in self._entries().items() if entry.kind == "file"}

    def plain_tree(self) -> FileTree | None:
        """The flattened filesystem in memory, or None when it holds a symlink (extract
        it instead: on disk the readers' symlink rules apply)."""
        entries = self._entries()
        if any(entry.kind == "symlink" for entry in entries.values()):
            return None
        files = {path: entry.data for path, entry in entries.items() if entry.kind == "file"}
        directories = {path for path, entry in entries.items() if entry.kind == "dir"}
        for path in files:  # a file's parents exist once extracted, entries or not
            parent = path.rpartition("/")[0]
            while parent and parent not in directories:
                directories.add(parent)
                parent = parent.rpartition("/")[0]
        return FileTree(files, frozenset(directories))

    def extract(self, dest: Path) -> None:
        """Write the flattened filesystem under ``dest``, refusing anything that escapes it."""
        entries = self._entries()  # refuses absolute and ``..`` paths before anything is written
        for path, entry in entries.items():
            if entry.kind == "symlink" and _link_escapes(path, entry.target):
                raise InputError(
                    f"image symlink {path!r} -> {entry.target!r} points outside the image"
                )
        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve()
        for path, entry in sorted(entries.items()):
            target = dest / path
            if not target.parent.resolve().is_relative_to(root):
                raise InputError(f"image path {path!r} leads outside {dest} through a symlink")
            target.parent.mkdir(parents=True, exist_ok=True)
            if entry.kind == "dir":
                _extract_dir(target, entry)
            elif entry.kind == "file":
                _extract_file(target, entry)
            else:
                _extract_symlink(target, path, entry, root)

    def _entries(self) -> dict[str, _Entry]:
        state: dict[str, _Entry] = {}
        for index, blob in enumerate(self.layers):
            _apply_layer(state, blob, f"layer {index + 1}")
        return state


def digest_of(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces: the same document always hashes to the same digest."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def build_image(
    files: Mapping[str, bytes],
    labels: Mapping[str, str],
    *,
    architecture: str = "amd64",
    os: str = "linux",
) -> Image:
    """A FROM-scratch image of ``files`` (``"manifests/x.yaml"`` is ``/manifests/x.yaml``)."""
    return assemble_image([layer_tar(files)], labels, architecture=architecture, os=os)


def layer_tar(files: Mapping[str, bytes], *, executable: Collection[str] = ()) -> bytes:
    """An uncompressed, reproducible tar of ``files`` with an entry for every parent dir;
    the paths in ``executable`` get mode 0755, every other file 0644."""
    contents: dict[str, bytes] = {}
    runnable = {_image_path(path) for path in executable}
    for path, data in files.items():
        name = _image_path(path)
        if name in contents:
            raise InputError(f"image path {path!r} given twice")
        contents[name] = data
    dirs = {parent for name in contents for parent in _parents(name)}
    if clash := sorted(dirs & contents.keys()):
        raise InputError(f"image path {clash[0]!r} is both a file and a directory")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(dirs | contents.keys()):
            if name in dirs:
                tar.addfile(_tar_info(name, tarfile.DIRTYPE, 0o755, 0))
            else:
                data, mode = contents[name], 0o755 if name in runnable else 0o644
                tar.addfile(_tar_info(name, tarfile.REGTYPE, mode, len(data)), io.BytesIO(data))
    return buffer.getvalue()


def assemble_image(
    layers: Sequence[bytes],
    labels: Mapping[str, str],
    *,
    architecture: str = "amd64",
    os: str = "linux",
) -> Image:
    """An image of uncompressed tar ``layers`` (bottom first), each gzipped reproducibly."""
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InputError(f"image label {key!r}: keys and values must be strings")
    blobs = [gzip.compress(tar, mtime=0) for tar in layers]
    history = [{"created": EPOCH, "created_by": "olmtool"} for _ in layers]
    diff_ids = [digest_of(tar) for tar in layers]
    config = {"Labels": dict(labels)}
    return stack_image(
        None, blobs, diff_ids, config, history, EPOCH, architecture=architecture, os=os
    )


# Layer media types of Docker's manifests and their OCI names (same bytes).
_OCI_LAYER_TYPES = {
    "application/vnd.docker.image.rootfs.diff.tar.gzip": OCI_LAYER_GZIP,
    "application/vnd.docker.image.rootfs.diff.tar": OCI_LAYER,
    OCI_LAYER_GZIP: OCI_LAYER_GZIP,
    OCI_LAYER: OCI_LAYER,
}


def stack_image(
    base: Image | None,
    blobs: Sequence[bytes],
    diff_ids: Sequence[str],
    config: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
    created: str,
    *,
    architecture: str = "amd64",
    os: str = "linux",
) -> Image:
    """An OCI image of ``base``'s layers (kept byte for byte) and ours (gzipped tars
    ``blobs`` whose uncompressed digests are ``diff_ids``): the one place an image's
    config and manifest are assembled."""
    base_descriptors, base_diff_ids, base_history = _base_parts(base)
    document = canonical_json(
        {
            "architecture": architecture,
            "os": os,
            "created": created,
            "config": dict(config),
            "rootfs": {"type": "layers", "diff_ids": [*base_diff_ids, *diff_ids]},
            "history": [*base_history, *history],
        }
    )
    layers = [*base_descriptors, *(_descriptor(OCI_LAYER_GZIP, blob) for blob in blobs)]
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": _descriptor(OCI_CONFIG, document),
            "layers": layers,
        }
    )
    base_blobs = base.layers if base else ()
    return Image(manifest, document, (*base_blobs, *blobs), OCI_MANIFEST)


def _base_parts(base: Image | None) -> tuple[list[dict[str, Any]], list[str], list[Any]]:
    """The base's layer descriptors (OCI media types), diff_ids and history.

    diff_ids are digests of the *uncompressed* layers; the base config lists them, and
    they are checked against the layer count (a base without them is refused).
    """
    if base is None:
        return [], [], []
    descriptors = []
    for layer in base.manifest_json["layers"]:
        media_type = _OCI_LAYER_TYPES.get(layer.get("mediaType", ""))
        if media_type is None:
            raise InputError(f"base image layer type {layer.get('mediaType')!r} is not supported")
        descriptors.append({**layer, "mediaType": media_type})
    diff_ids = list((base.config_json.get("rootfs") or {}).get("diff_ids") or [])
    if len(diff_ids) != len(descriptors):
        raise InputError(
            f"base image config lists {len(diff_ids)} diff_ids for {len(descriptors)} layers"
        )
    return descriptors, diff_ids, list(base.config_json.get("history") or [])


def parse_manifest(data: bytes, media_type: str | None = None) -> dict[str, Any]:
    """A manifest or index document, checked for the fields this module relies on."""
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise InputError(f"manifest is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("schemaVersion") != 2:
        raise InputError("not a schemaVersion 2 manifest (docker schema 1 is not supported)")
    kind = document.get("mediaType") or media_type
    if kind not in INDEXES + IMAGE_MANIFESTS and "mediaType" not in document:
        kind = _guess_media_type(document)  # an OCI manifest may omit it
    document["mediaType"] = kind
    required = ("manifests",) if kind in INDEXES else ("config", "layers")
    if kind not in INDEXES + IMAGE_MANIFESTS or any(key not in document for key in required):
        raise InputError(f"unsupported or malformed manifest ({kind})")
    return document


def select_platform(
    index: Mapping[str, Any], *, architecture: str = "amd64", os: str = "linux"
) -> dict[str, Any]:
    """The descriptor of the ``os/architecture`` image in a multi-platform index."""
    available = []
    for descriptor in index.get("manifests", []):
        platform = descriptor.get("platform") or {}
        if platform.get("architecture") == architecture and platform.get("os") == os:
            return dict(descriptor)
        available.append(f"{platform.get('os', '?')}/{platform.get('architecture', '?')}")
    listed = ", ".join(available) or "none"
    raise InputError(f"no {os}/{architecture} image in the index (it has: {listed})")


def write_oci_layout(image: Image, directory: Path, tag: str) -> None:
    """Write ``image`` as an OCI image layout tagged ``tag``, replacing ``directory`` whole.

    The layout is built beside ``directory`` and renamed into place, so readers see the
    old layout or the new one, never a mix. A non-empty directory that is not a layout is
    left alone: this must never delete someone's files.
    """
    if not tag:
        raise InputError("an OCI layout tag must not be empty", path=directory)
    if directory.exists() and not _replaceable(directory):
        raise InputError("refusing to replace: not an OCI image layout", path=directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        staging.chmod(0o755)
        _write_layout(image, staging, tag)
        _swap_in(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def read_oci_layout(directory: Path, tag: str | None = None) -> Image:
    """Read the image tagged ``tag`` (or the only image) from an OCI image layout."""
    try:
        layout = json.loads((directory / "oci-layout").read_bytes())
        index = json.loads((directory / "index.json").read_bytes())
    except FileNotFoundError as exc:
        missing = Path(exc.filename).name
        raise InputError(f"not an OCI image layout: no {missing}", path=directory) from None
    except ValueError as exc:
        raise InputError(f"not an OCI image layout: {exc}", path=directory) from None
    if not isinstance(layout, dict) or layout.get("imageLayoutVersion") != LAYOUT_VERSION:
        raise InputError(f"unsupported OCI layout version (want {LAYOUT_VERSION})", path=directory)
    try:
        descriptor = _tagged(index, tag)
        return _read_layout_image(directory, descriptor)
    except InputError as exc:
        raise InputError(exc.message, path=directory) from None


def _image_path(path: str) -> str:
    parts = path.removeprefix("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InputError(f"bad image path {path!r}: want a/b/c without '.', '..' or '//'")
    return "/".join(parts)


def _parents(name: str) -> Iterable[str]:
    parts = name.split("/")
    return ("/".join(parts[:i]) for i in range(1, len(parts)))


def _tar_info(name: str, kind: bytes, mode: int, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _descriptor(media_type: str, data: bytes) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": digest_of(data), "size": len(data)}


def _guess_media_type(document: Mapping[str, Any]) -> str:
    return OCI_INDEX if "manifests" in document else OCI_MANIFEST


# -- reading layers ---------------------------------------------------------------------


def _apply_layer(state: dict[str, _Entry], blob: bytes, what: str) -> None:
    """Apply one layer: its whiteouts delete from the layers below, its entries overlay."""
    added: dict[str, _Entry] = {}
    if blob.startswith(_ZSTD_MAGIC):
        raise InputError(f"{what} is zstd-compressed; only gzip and plain tar are supported")
    mode = "r:gz" if blob.startswith(_GZIP_MAGIC) else "r:"
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode=mode) as tar:
            for member in tar:
                path = _member_path(member.name, what)
                if path is None:
                    continue
                parent, _, base = path.rpartition("/")
                if base == _OPAQUE:
                    _remove(state, parent, keep_self=True)
                elif base.startswith(_WHITEOUT):
                    _remove(state, posixpath.join(parent, base[len(_WHITEOUT) :]))
                elif (entry := _read_member(tar, member, state, added, what)) is not None:
                    added[path] = entry
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:  # OSError: BadGzipFile
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"{what} is not a readable (gzipped) tar: {problem}") from None
    for path, entry in added.items():
        if entry.kind != "dir":
            _remove(state, path, keep_self=True)
        state[path] = entry


def _member_path(name: str, what: str) -> str | None:
    if name.startswith("/"):
        raise InputError(f"{what}: absolute path {name!r} in layer")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise InputError(f"{what}: path {name!r} climbs out of the image root")
    return "/".join(parts) or None


def _read_member(
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    lower: Mapping[str, _Entry],
    added: Mapping[str, _Entry],
    what: str,
) -> _Entry | None:
    mode = member.mode & 0o7777
    if member.isdir():
        return _Entry("dir", mode)
    if member.issym():
        return _Entry("symlink", mode, target=member.linkname)
    if member.islnk():
        target = _member_path(member.linkname, what) or ""
        linked = added.get(target) or lower.get(target)
        if linked is None or linked.kind != "file":
            raise InputError(f"{what}: hard link {member.name!r} to missing {member.linkname!r}")
        return _Entry("file", mode, linked.data)
    if member.isreg():
        handle = tar.extractfile(member)
        return _Entry("file", mode, handle.read() if handle else b"")
    return None  # devices and fifos: nothing a bundle or a catalog can hold


def _remove(state: dict[str, _Entry], path: str, *, keep_self: bool = False) -> None:
    prefix = f"{path}/" if path else ""
    for name in [n for n in state if n.startswith(prefix) or (n == path and not keep_self)]:
        del state[name]


# -- extracting -------------------------------------------------------------------------


def _clear(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)


def _extract_dir(target: Path, entry: _Entry) -> None:
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        _clear(target)
    target.mkdir(exist_ok=True)
    target.chmod((entry.mode & 0o777) | 0o700)


def _extract_file(target: Path, entry: _Entry) -> None:
    _clear(target)
    target.write_bytes(entry.data)
    target.chmod((entry.mode & 0o777) | 0o200)


def _link_escapes(path: str, target: str) -> bool:
    """Whether a symlink at ``path`` pointing to ``target`` leads out of the image root."""
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return target.startswith("/") or resolved == ".." or resolved.startswith("../")


def _extract_symlink(target: Path, path: str, entry: _Entry, root: Path) -> None:
    _clear(target)
    target.symlink_to(entry.target)
    if not target.resolve().is_relative_to(root):
        target.unlink()
        raise InputError(f"image symlink {path!r} -> {entry.target!r} points outside the image")


# -- OCI image layout -------------------------------------------------------------------


def _replaceable(directory: Path) -> bool:
    if not directory.is_dir() or directory.is_symlink():
        return False
    return (directory / "oci-layout").is_file() or not any(directory.iterdir())


def _write_layout(image: Image, root: Path, tag: str) -> None:
    blobs = root / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    for data in (image.manifest, image.config, *image.layers):
        (blobs / digest_of(data).removeprefix("sha256:")).write_bytes(data)
    descriptor = _descriptor(image.media_type, image.manifest)
    descriptor["annotations"] = {REF_NAME: tag}
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [descriptor]}
    (root / "oci-layout").write_bytes(canonical_json({"imageLayoutVersion": LAYOUT_VERSION}))
    (root / "index.json").write_bytes(canonical_json(index))


def _swap_in(staging: Path, directory: Path) -> None:
    """Rename ``staging`` to ``directory``; an old ``directory`` is moved aside, then removed."""
    if not directory.exists():
        staging.rename(directory)
        return
    old = directory.with_name(f".{directory.name}.{uuid.uuid4().hex[:8]}.old")
    directory.rename(old)
    try:
        staging.rename(directory)
    except BaseException:
        old.rename(directory)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _tagged(index: Any, tag: str | None) -> dict[str, Any]:
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise InputError("index.json lists no images")
    tags = [str((m.get("annotations") or {}).get(REF_NAME, "")) for m in manifests]
    if tag is None:
        if len(manifests) == 1:
            return manifests[0]
        raise InputError(f"holds {len(manifests)} images; name one of the tags: {tags}")
    for descriptor, name in zip(manifests, tags, strict=True):
        if name == tag:
            return descriptor
    raise InputError(f"no image tagged {tag!r} (tags: {', '.join(filter(None, tags)) or 'none'})")


def _read_layout_image(directory: Path, descriptor: Mapping[str, Any]) -> Image:
    data = _read_blob(directory, descriptor)
    manifest = parse_manifest(data, descriptor.get("mediaType"))
    if manifest["mediaType"] in INDEXES:
        return _read_layout_image(directory, select_platform(manifest))
    config = _read_blob(directory, manifest["config"])
    layers = tuple(_read_blob(directory, layer) for layer in manifest["layers"])
    return Image(data, config, layers, manifest["mediaType"])


def _read_blob(directory: Path, descriptor: Mapping[str, Any]) -> bytes:
    digest = str(descriptor.get("digest", ""))
    if not _DIGEST.fullmatch(digest):
        raise InputError(f"unsupported or malformed digest {digest!r}")
    path = directory / "blobs" / "sha256" / digest.removeprefix("sha256:")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"missing blob {digest}") from None
    if digest_of(data) != digest:
        raise InputError(f"blob {digest} is corrupt (its content hashes to {digest_of(data)})")
    return data
