"""Images of the reference binaries in ``../shared/peers``, for tests that run real OLM.

Test helpers only, never a product dependency. OLM v0.18.3's catalog operator runs pods
from two upstream images a local cluster cannot pull (``../shared/peers/README.md``):

* :func:`opm_image`, ``quay.io/operator-framework/opm:v1.26.0``: the peer ``opm`` (linked
  against glibc and libsqlite3) at ``/bin/opm`` on olmtool's Python base
  (:func:`olmtool.images.debian.python_base`, which has both libraries), entrypoint
  ``/bin/opm`` and ``/etc/nsswitch.conf`` like upstream's ``opm.Dockerfile``, and
  ``/bin/grpc_health_probe`` like upstream opm images: the very probe of olmtool's
  catalog image (:mod:`olmtool.images.catalogimage`: its script over
  :mod:`olmtool.serve.healthprobe`, olmtool in ``/app`` and grpcio in
  ``/app/site-packages``, in two layers under opm's). Where that module is missing the
  image has no probe and :attr:`PeerImage.notes` says so. It also stands in for
  ``-configmapServerImage``: unpack Jobs only need ``opm`` on PATH.
* :func:`util_image`, ``quay.io/operator-framework/olm:v0.18.3`` as the ``-util-image``:
  ``/bin/cpb``. Bundle unpack Jobs run ``/bin/cp -Rv /bin/cpb /util/cpb``, so the image
  needs ``/bin/cp`` too: upstream builds on ``distroless/static:debug`` (busybox) and links
  ``/bin/cp`` to busybox; a static ``cpb`` goes on olmtool's busybox image (static) the
  same way, a dynamic one on the Python base (glibc, but no ``cp``: noted).

Both are deterministic (fixed time, :func:`olmtool.images.layer_tar`, gzip without a
timestamp, the base's layers byte for byte) and cached as OCI layouts under
``<olmtool cache>/peer-images/<name>/<fingerprint>``, the fingerprint covering the peer
binaries, the base image, the probe's layers and this module. Tests skip, with the reason,
without ``../shared/peers`` (``OLMTOOL_PEERS`` overrides the directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from olmtool.images import (
    Image,
    gzip_layer,
    layer_tar,
    parse_reference,
    read_oci_layout,
    stack_image,
    write_oci_layout,
)
from olmtool.images.build.wheels import cache_dir
from olmtool.images.debian import RECIPES, BuiltImage, build_recipe, python_base
from olmtool.images.image import EPOCH, digest_of

REPO = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("OLMTOOL_PEERS", REPO.parent / "shared" / "peers"))
# What the catalog image's grpc_health_probe imports (olmtool.serve.healthprobe).
HEALTH_PROBE_REQUIREMENTS = ("grpcio", "grpcio-health-checking")
OPM_REFERENCE = "quay.io/operator-framework/opm:v1.26.0"
UTIL_REFERENCE = "quay.io/operator-framework/olm:v0.18.3"
BUSYBOX = "busybox-1.35"
UTIL_USER = "1001"  # upstream's olm image runs as 1001


@dataclass(frozen=True)
class PeerImage:
    reference: str  # the upstream image this one stands in for
    layout: Path  # an OCI layout tagged with the reference's tag
    image: Image
    cached: bool
    notes: tuple[str, ...] = ()  # where it differs from upstream

    @property
    def tag(self) -> str:
        return parse_reference(self.reference).tag or "latest"

    @property
    def digest(self) -> str:
        return self.image.digest


@dataclass(frozen=True)
class Layer:
    """One layer to stack: what it holds (its history line) and its uncompressed tar."""

    name: str
    tar: bytes


@dataclass(frozen=True)
class _Recipe:
    name: str
    reference: str
    base: BuiltImage
    layers: tuple[Layer, ...]
    config: dict[str, Any]
    notes: tuple[str, ...]


def peers_blocker(*names: str, peers: Path = PEERS) -> str | None:
    """Why the peer images cannot be built here (None: they can)."""
    missing = [name for name in names if not (peers / name).is_file()]
    if missing:
        return f"no {', '.join(missing)} in {peers} (the reference binaries; set OLMTOOL_PEERS)"
    return None


def require_peers(*names: str, peers: Path = PEERS) -> None:
    """Skip the calling test without the peer binaries ``names``: a fresh machine has no
    ``../shared`` (also in CI; the README demands a clean skip)."""
    reason = peers_blocker(*names, peers=peers)
    if reason:
        pytest.skip(reason)


def is_static(binary: Path) -> bool:
    """Whether the ELF ``binary`` is statically linked (has no ``PT_INTERP``), read from
    its program headers (what ``ldd`` reports as "not a dynamic executable")."""
    with binary.open("rb") as handle:
        header = handle.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:  # ELFCLASS64 only
            raise ValueError(f"{binary} is not a 64-bit ELF file")
        order = "<" if header[5] == 1 else ">"
        (phoff,) = struct.unpack_from(f"{order}Q", header, 0x20)
        phentsize, phnum = struct.unpack_from(f"{order}HH", header, 0x36)
        handle.seek(phoff)
        table = handle.read(phentsize * phnum)
    types = (struct.unpack_from(f"{order}I", table, i * phentsize)[0] for i in range(phnum))
    return 3 not in types  # PT_INTERP


def opm_image(*, peers: Path = PEERS, cache: Path | None = None) -> PeerImage:
    """The opm image (cached), see the module docstring."""
    return _build(_opm_recipe(peers), cache)


def util_image(*, peers: Path = PEERS, cache: Path | None = None) -> PeerImage:
    """OLM's util image (cached), see the module docstring."""
    return _build(_util_recipe(peers), cache)


def assemble_opm(*, peers: Path = PEERS) -> Image:
    """The opm image built afresh (no layout cache): same inputs, same digest."""
    return _assemble(_opm_recipe(peers))


def assemble_util(*, peers: Path = PEERS) -> Image:
    """OLM's util image built afresh (no layout cache)."""
    return _assemble(_util_recipe(peers))


def health_probe_layers() -> tuple[Layer, ...]:
    """The catalog image's ``grpc_health_probe`` as layers: grpcio and its health
    service in ``/app/site-packages``, then olmtool in ``/app`` and the probe script at
    ``/usr/bin/grpc_health_probe``; empty while :mod:`olmtool.images.catalogimage` (or
    its probe) does not exist."""
    try:
        from olmtool.images.catalogimage import build as catalog_image
    except ImportError:
        return ()
    try:
        pins = catalog_image.runtime_pins(HEALTH_PROBE_REQUIREMENTS)
        files, executable = catalog_image.olmtool_files()
        files[catalog_image.PROBE_PATH] = catalog_image.PROBE_SCRIPT
        executable.add(catalog_image.PROBE_PATH)
        site = catalog_image.site_packages_tar(pins)
    except AttributeError:  # its interface changed under us
        return ()
    return (
        Layer(f"grpcio ({' '.join(pins)})", site),
        Layer("olmtool and grpc_health_probe", layer_tar(files, executable=executable)),
    )


def _opm_recipe(peers: Path) -> _Recipe:
    base = python_base()
    layers = list(health_probe_layers())
    notes = [] if layers else ["no grpc_health_probe: olmtool.images.catalogimage is missing"]
    files = {
        "usr/bin/opm": (peers / "opm").read_bytes(),
        "etc/nsswitch.conf": b"hosts: files dns\n",
    }
    layers.append(Layer("opm v1.26.0", layer_tar(files, executable=["usr/bin/opm"])))
    config = _config(base, entrypoint=["/bin/opm"], cmd=None, user=None, reference=OPM_REFERENCE)
    return _Recipe("opm", OPM_REFERENCE, base, tuple(layers), config, tuple(notes))


def _util_recipe(peers: Path) -> _Recipe:
    binary = peers / "cpb"
    notes: list[str] = []
    if is_static(binary):
        base = build_recipe(RECIPES[BUSYBOX])  # static too: /bin/cp is busybox's
    else:
        base = python_base()
        notes.append("cpb is dynamic: on the Python base, which has no /bin/cp")
    tar = layer_tar({"usr/bin/cpb": binary.read_bytes()}, executable=["usr/bin/cpb"])
    config = _config(
        base, entrypoint=None, cmd=["/bin/cpb"], user=UTIL_USER, reference=UTIL_REFERENCE
    )
    layers = (Layer("cpb of OLM v0.18.3", tar),)
    return _Recipe("olm-util", UTIL_REFERENCE, base, layers, config, tuple(notes))


def _config(
    base: BuiltImage,
    *,
    entrypoint: list[str] | None,
    cmd: list[str] | None,
    user: str | None,
    reference: str,
) -> dict[str, Any]:
    """The base's config with our command (replacing the base's Entrypoint and Cmd, as
    a Dockerfile's ENTRYPOINT does) and labels."""
    config = dict(base.image.config_json.get("config") or {})
    config.pop("Entrypoint", None)
    config.pop("Cmd", None)
    if entrypoint:
        config["Entrypoint"] = entrypoint
    if cmd:
        config["Cmd"] = cmd
    if user is not None:
        config["User"] = user
    config["Labels"] = {
        **(config.get("Labels") or {}),
        "org.opencontainers.image.base.name": base.reference,
        "org.opencontainers.image.ref.name": reference,
    }
    return config


def _assemble(recipe: _Recipe) -> Image:
    history = [
        {"created": EPOCH, "created_by": f"tests/e2e/peerimages.py: {layer.name}"}
        for layer in recipe.layers
    ]
    blobs = [gzip_layer(layer.tar) for layer in recipe.layers]
    diff_ids = [digest_of(layer.tar) for layer in recipe.layers]
    return stack_image(recipe.base.image, blobs, diff_ids, recipe.config, history, EPOCH)


def _build(recipe: _Recipe, cache: Path | None) -> PeerImage:
    root = cache if cache is not None else cache_dir() / "peer-images"
    layout = root / recipe.name / _fingerprint(recipe)
    tag = parse_reference(recipe.reference).tag or "latest"
    try:
        return PeerImage(recipe.reference, layout, read_oci_layout(layout, tag), True, recipe.notes)
    except Exception:  # not built yet (or a broken layout: rebuilt)
        pass
    image = _assemble(recipe)
    write_oci_layout(image, layout, tag)
    return PeerImage(recipe.reference, layout, image, False, recipe.notes)


def _fingerprint(recipe: _Recipe) -> str:
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    digest.update(recipe.base.digest.encode())
    for layer in recipe.layers:
        digest.update(f"\0{layer.name}\0".encode() + hashlib.sha256(layer.tar).digest())
    digest.update(_canonical(recipe.config))
    return digest.hexdigest()[:16]


def _canonical(config: Mapping[str, Any]) -> bytes:
    return json.dumps(config, sort_keys=True).encode()
