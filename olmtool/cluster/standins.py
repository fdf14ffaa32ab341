"""Upstream images the local cluster serves from its own registry, under their own names.

The machine reaches no upstream registry, so olmtool builds stand-ins from Debian
packages and wheels (:mod:`olmtool.images.debian`: Python 3.11, etcd 3.4.23 and 3.5.1,
busybox) and ``cluster up`` pushes them to the cluster's registry at the path their
upstream name has (``quay.io/coreos/etcd:v3.5.1`` -> ``<registry>/coreos/etcd:v3.5.1``).
The node's containerd mirrors ``quay.io``, ``docker.io``, ... to that registry, so
Pods, CSVs and tests keep the upstream names. Built once (cached); a push sends only
what the registry lacks.

``load`` puts a user's own image into the node's image store under the name Pods use,
as ``kind load`` does.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from olmtool.cluster.registryauth import RegistryLogin
from olmtool.errors import InputError
from olmtool.images import parse_reference

Progress = Callable[[str], None]


def mirror_path(reference: str) -> str:
    """Where an upstream reference lives in the cluster's registry (its repository and
    tag: the mirror asks for the same path whatever the upstream host)."""
    parsed = parse_reference(reference)
    return f"{parsed.repository}:{parsed.tag or 'latest'}"


def push_standins(
    registry: str, login: RegistryLogin | None, progress: Progress | None = None
) -> list[str]:
    """Build (or find cached) every stand-in and push it with the registry's ``login``;
    the upstream references."""
    from olmtool.images import Credentials, push
    from olmtool.images.debian import RECIPES, build_recipe

    auth = Credentials(login.username, login.password) if login else None

    pushed = []
    for recipe in sorted(RECIPES.values(), key=lambda r: r.reference):
        built = build_recipe(recipe, progress=progress)
        push(built.image, f"{registry}/{mirror_path(recipe.reference)}", auth=auth)
        pushed.append(recipe.reference)
    return pushed


def layout_of(source: Path, scratch: Path) -> Path:
    """``source`` as an OCI layout directory: itself, or an OCI archive (a tar of a
    layout, as ``skopeo copy ... oci-archive:`` writes) unpacked into ``scratch``."""
    if (source / "oci-layout").is_file():
        return source
    if source.is_file() and tarfile.is_tarfile(source):
        with tarfile.open(source) as archive:
            archive.extractall(scratch, filter="data")
        if (scratch / "oci-layout").is_file():
            return scratch
        if (scratch / "manifest.json").is_file():
            raise InputError(
                "a docker-archive is not loaded: convert it with `skopeo copy "
                f"docker-archive:{source} oci:DIR` and load DIR",
                path=source,
            )
    raise InputError("not an OCI image layout or OCI archive", path=source)


def load(source: Path, reference: str, import_layout: Callable[[Path, str], None]) -> str:
    """Import the image of ``source`` (its only or first manifest) into the node as
    ``reference`` (normalised, ``docker.io/library/`` added as Kubernetes does)."""
    from olmtool.images import read_oci_layout, write_oci_layout

    parsed = parse_reference(reference)
    if parsed.digest:
        raise InputError(f"{reference}: load an image under a tag, not a digest")
    normalised = f"{parsed.name}:{parsed.tag or 'latest'}"
    with tempfile.TemporaryDirectory(prefix="olmtool-load-") as tmp:
        image = read_oci_layout(layout_of(source, Path(tmp) / "unpacked"))
        tagged = Path(tmp) / "tagged"
        write_oci_layout(image, tagged, parsed.tag or "latest")
        import_layout(tagged, normalised)
    return normalised
