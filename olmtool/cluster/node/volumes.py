"""Pod volumes as directories on the host, and how a container sees them.

Every volume becomes a directory: ``emptyDir``, ``configMap``, ``secret``,
``downwardAPI`` and ``projected`` volumes live under the Pod's directory in the agent
state dir (``<state>/pods/<ns>_<pod>_<uid>/.volumes/<name>``; the data files are written
atomically through a ``..data`` symlink as kubelet does, so updates are all-or-nothing);
``hostPath`` is the host path itself; a ``persistentVolumeClaim`` is the directory of the
bound PersistentVolume (``hostPath`` or ``local`` path).

Secrets stay with the Pod: service-account tokens and Secret files are 0600 and the
directories holding them 0700 (the Pod's processes run as root; when every container
runs as the same ``runAsUser``, they are that user's, with ``fsGroup``/``runAsGroup`` as
their group). A ``defaultMode`` or item ``mode`` is honoured, except that 0644 -- the
value the apiserver fills in when a Pod gives none -- means 0600 for Secret and token
files. ConfigMap and downward-API files keep 0644.

A container sees its volumes at their ``mountPath`` through bind mounts in its own mount
namespace (see :func:`plan_mounts`). A mount point that does not exist on the host is
created only under :data:`CREATABLE` (``/tmp``, ``/var/tmp``, ``/run``, ``/var/run``) or
inside another volume; any other missing mountPath (``/data``, ``/config``) is *rewritten*
instead: the mountPath prefix is replaced by the host directory in the container's
command, arguments, environment values and working directory (:func:`rewrite`).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmtool.cluster.node.env import PodFacts, data_bytes, field_value, resource_value
from olmtool.errors import InternalError

JSON = dict[str, Any]
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
CREATABLE = ("/tmp", "/var/tmp", "/run", "/var/run")
DEFAULT_MODE = 0o644  # ConfigMap and downward-API files; the apiserver's default
SECRET_MODE = 0o600  # tokens and Secret files
PRIVATE_DIR = 0o700  # directories that hold them
TOKEN_REFRESH = 0.8  # refresh a projected token after 80% of its lifetime


class VolumeError(InternalError):
    """A volume cannot be set up yet (missing ConfigMap, unbound claim, ...)."""


@dataclass
class VolumeContext:
    """What materialising volumes needs from the cluster (callables, so tests can fake)."""

    facts: PodFacts
    configmap: Callable[[str, str], JSON | None]
    secret: Callable[[str, str], JSON | None]
    claim_path: Callable[[str, str], Path]
    token: Callable[[str, str, JSON], tuple[str, float]]
    """``(namespace, serviceAccount, spec)`` -> (token, lifetime seconds)."""
    ca_bytes: bytes = b""

    @property
    def owner(self) -> tuple[int, int] | None:
        """``(uid, gid)`` for Secret and token files: see :func:`pod_owner`."""
        return pod_owner(self.facts.spec)


def pod_owner(spec: JSON) -> tuple[int, int] | None:
    """The user every container of the Pod runs as (``runAsUser``, the container's or the
    Pod's) and the group (``fsGroup``, else ``runAsGroup``; -1 keeps root's), or None
    when that is root, unset or differs between containers (as kubelet does for tokens)."""
    pod = spec.get("securityContext") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    users = {
        (c.get("securityContext") or {}).get("runAsUser", pod.get("runAsUser")) for c in containers
    }
    if len(users) != 1:
        return None
    user = users.pop()
    if not isinstance(user, int) or user <= 0:
        return None
    group = pod.get("fsGroup", pod.get("runAsGroup"))
    return user, group if isinstance(group, int) and group >= 0 else -1


@dataclass
class Volume:
    name: str
    path: Path
    refresh_at: float | None = None  # monotonic time after which to rewrite it (tokens)
    managed: bool = True  # written by the agent (as opposed to hostPath / PVC dirs)


@dataclass
class Mount:
    """One volume mount of a container: ``source`` on the host at ``target`` inside."""

    source: Path
    target: str
    read_only: bool = False
    bind: bool = True  # False: the target is rewritten to ``source`` instead
    is_file: bool = False


# -- atomic writer ----------------------------------------------------------------------


def atomic_write(
    directory: Path,
    files: Mapping[str, tuple[bytes, int]],
    *,
    private: bool = False,
    owner: tuple[int, int] | None = None,
) -> bool:
    """Make ``directory`` hold exactly ``files`` (relative path -> (data, mode)), switching
    a ``..data`` symlink so readers see the old set or the new, never a mix. Returns
    False when nothing changed. ``private``: the directories are 0700; ``owner``
    (uid, gid) gets the files and directories. Each file is created with its final
    mode, so none is readable by others for a moment."""
    directory.mkdir(parents=True, exist_ok=True)
    if private:
        directory.chmod(PRIVATE_DIR)
    data_link = directory / "..data"
    if data_link.is_symlink() and _same(directory / os.readlink(data_link), files):
        return False
    stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns() % 10**9}"
    version = directory / stamp
    version.mkdir(mode=PRIVATE_DIR if private else 0o777)
    for rel, (data, mode) in files.items():
        target = version / rel
        for parent in reversed(target.relative_to(version).parents[:-1]):
            (version / parent).mkdir(mode=PRIVATE_DIR if private else 0o777, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode & 0o777)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(target, mode & 0o777)  # whatever the umask
    if owner is not None:
        for path in (directory, version, *version.rglob("*")):
            os.chown(path, *owner, follow_symlinks=False)
    tmp_link = directory / "..data_tmp"
    if tmp_link.is_symlink():
        tmp_link.unlink()
    tmp_link.symlink_to(stamp)
    old = os.readlink(data_link) if data_link.is_symlink() else None
    os.replace(tmp_link, data_link)
    tops = {rel.split("/", 1)[0] for rel in files}
    for top in tops:
        link = directory / top
        if not link.is_symlink():
            if link.is_dir():
                shutil.rmtree(link)
            elif link.exists():
                link.unlink()
            link.symlink_to(f"..data/{top}")
    for entry in directory.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.is_symlink() and entry.name not in tops:
            entry.unlink()
    if old and old != stamp:
        shutil.rmtree(directory / old, ignore_errors=True)
    return True


def _same(current: Path, files: Mapping[str, tuple[bytes, int]]) -> bool:
    try:
        existing = {str(p.relative_to(current)) for p in current.rglob("*") if p.is_file()}
        if existing != set(files):
            return False
        for rel, (data, mode) in files.items():
            path = current / rel
            if path.read_bytes() != data or (path.stat().st_mode & 0o777) != (mode & 0o777):
                return False
    except OSError:
        return False
    return True


# -- sources ----------------------------------------------------------------------------


def _items(
    values: Mapping[str, bytes], items: Sequence[JSON] | None, mode: int, what: str
) -> dict[str, tuple[bytes, int]]:
    if not items:
        return {key: (value, mode) for key, value in values.items()}
    out = {}
    for item in items:
        key = str(item.get("key"))
        if key not in values:
            raise VolumeError(f"{what}: no key {key!r}")
        out[_safe_rel(str(item.get("path") or key))] = (values[key], int(item.get("mode") or mode))
    return out


def _safe_rel(path: str) -> str:
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or path.startswith("/"):
        raise VolumeError(f"invalid volume file path {path!r}")
    return "/".join(parts)


def _configmap_files(source: JSON, ctx: VolumeContext, kind: str, mode: int) -> JSON | None:
    name = str(source.get("name") or source.get("secretName") or "")
    lookup = ctx.configmap if kind == "ConfigMap" else ctx.secret
    obj = lookup(ctx.facts.namespace, name)
    what = f"{kind.lower()} {ctx.facts.namespace}/{name}"
    if obj is None:
        if source.get("optional"):
            return {}
        raise VolumeError(f'{kind.lower()} "{name}" not found')
    return _items(data_bytes(obj, kind), source.get("items"), mode, what)


def _downward_files(items: Sequence[JSON], ctx: VolumeContext, mode: int) -> JSON:
    out: dict[str, tuple[bytes, int]] = {}
    containers = {c.get("name"): c for c in ctx.facts.spec.get("containers") or []}
    for item in items:
        path = _safe_rel(str(item.get("path")))
        item_mode = int(item.get("mode") or mode)
        if "fieldRef" in item:
            value = field_value(ctx.facts, str(item["fieldRef"].get("fieldPath")))
        elif "resourceFieldRef" in item:
            ref = item["resourceFieldRef"]
            container = containers.get(ref.get("containerName")) or next(
                iter(containers.values()), {}
            )
            value = resource_value(ctx.facts, container, ref)
        else:
            continue
        out[path] = (value.encode(), item_mode)
    return out


def _token_files(
    source: JSON, ctx: VolumeContext, mode: int = SECRET_MODE
) -> tuple[dict[str, tuple[bytes, int]], float]:
    spec = ctx.facts.spec
    account = str(spec.get("serviceAccountName") or "default")
    try:
        token, lifetime = ctx.token(ctx.facts.namespace, account, source)
    except VolumeError:
        raise
    except Exception as exc:  # the TokenRequest failed: the volume is not ready yet
        raise VolumeError(
            f"token for service account {ctx.facts.namespace}/{account}: {exc}"
        ) from None
    path = _safe_rel(str(source.get("path") or "token"))
    return {path: (token.encode(), mode)}, lifetime


def service_account_files(
    ctx: VolumeContext,
) -> tuple[dict[str, tuple[bytes, int]], float]:
    """``token`` (0600), ``ca.crt`` and ``namespace``: what in-cluster clients read."""
    files, lifetime = _token_files({"path": "token", "expirationSeconds": 3600}, ctx)
    files["ca.crt"] = (ctx.ca_bytes, DEFAULT_MODE)
    files["namespace"] = (ctx.facts.namespace.encode(), DEFAULT_MODE)
    return files, lifetime


def _explicit_mode(source: JSON) -> int | None:
    """``defaultMode`` when the Pod set one: 0644 is also what the apiserver fills in, so
    it counts as unset (Secret and token files then get 0600)."""
    mode = source.get("defaultMode")
    if not isinstance(mode, int) or isinstance(mode, bool) or mode == DEFAULT_MODE:
        return None
    return mode & 0o777


def materialise(volume: JSON, root: Path, ctx: VolumeContext) -> Volume:
    """Set up one Pod volume under ``root`` (the Pod's ``.volumes`` dir); the directory
    the container gets. Raises :class:`VolumeError` when it cannot be set up yet."""
    name = str(volume.get("name"))
    target = root / name
    if "emptyDir" in volume:
        target.mkdir(parents=True, exist_ok=True)
        return Volume(name, target, managed=False)
    if "hostPath" in volume:
        return Volume(name, _host_path(volume["hostPath"]), managed=False)
    if "persistentVolumeClaim" in volume:
        claim = str(volume["persistentVolumeClaim"].get("claimName"))
        return Volume(name, ctx.claim_path(ctx.facts.namespace, claim), managed=False)
    refresh_at = None
    private = False  # holds a Secret or a token
    if "configMap" in volume or "secret" in volume:
        kind = "ConfigMap" if "configMap" in volume else "Secret"
        source = volume["configMap" if kind == "ConfigMap" else "secret"]
        private = kind == "Secret"
        mode = _explicit_mode(source) or (SECRET_MODE if private else DEFAULT_MODE)
        files = _configmap_files(source, ctx, kind, mode) or {}
    elif "downwardAPI" in volume:
        source = volume["downwardAPI"]
        files = _downward_files(
            source.get("items") or [], ctx, _explicit_mode(source) or DEFAULT_MODE
        )
    elif "projected" in volume:
        source = volume["projected"]
        explicit = _explicit_mode(source)
        plain, secret = explicit or DEFAULT_MODE, explicit or SECRET_MODE
        files = {}
        for part in source.get("sources") or []:
            if "configMap" in part:
                files.update(_configmap_files(part["configMap"], ctx, "ConfigMap", plain) or {})
            elif "secret" in part:
                private = True
                files.update(_configmap_files(part["secret"], ctx, "Secret", secret) or {})
            elif "downwardAPI" in part:
                files.update(_downward_files(part["downwardAPI"].get("items") or [], ctx, plain))
            elif "serviceAccountToken" in part:
                private = True
                token_files, lifetime = _token_files(part["serviceAccountToken"], ctx, secret)
                files.update(token_files)
                due = time.monotonic() + lifetime * TOKEN_REFRESH
                refresh_at = due if refresh_at is None else min(refresh_at, due)
    else:
        kinds = sorted(k for k in volume if k != "name")
        raise VolumeError(f"volume {name!r}: unsupported volume type {', '.join(kinds)}")
    atomic_write(target, files, private=private, owner=ctx.owner if private else None)
    return Volume(name, target, refresh_at=refresh_at)


def claim_directory(
    namespace: str,
    claim: str,
    claims: Callable[[str, str], JSON | None],
    volumes: Callable[[str], JSON | None],
) -> Path:
    """The host directory of a PersistentVolumeClaim: the ``hostPath`` or ``local`` path
    of the volume bound to it (``claims``/``volumes`` look the objects up, None when
    missing). Raises :class:`VolumeError` while there is none."""
    pvc = claims(namespace, claim)
    if pvc is None:
        raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
    if (pvc.get("status") or {}).get("phase") != "Bound":
        raise VolumeError(f'persistentvolumeclaim "{claim}" is not bound yet')
    name = str((pvc.get("spec") or {}).get("volumeName"))
    pv = volumes(name)
    if pv is None:
        raise VolumeError(f'persistentvolume "{name}" not found')
    spec = pv.get("spec") or {}
    source = spec.get("hostPath") or spec.get("local")
    if not source or not source.get("path"):
        raise VolumeError(f"persistentvolume {name}: only hostPath and local volumes work here")
    path = Path(str(source["path"]))
    if path.is_dir():
        return path
    if "hostPath" in spec and spec["hostPath"].get("type") in (None, "", "DirectoryOrCreate"):
        path.mkdir(parents=True, exist_ok=True)
        return path
    raise VolumeError(f"persistentvolume {name}: {path} is not a directory")


def _host_path(source: JSON) -> Path:
    path = Path(str(source.get("path")))
    kind = str(source.get("type") or "")
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate" and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    elif kind == "Directory" and not path.is_dir():
        raise VolumeError(f"hostPath {path} is not a directory")
    elif kind == "File" and not path.is_file():
        raise VolumeError(f"hostPath {path} is not a file")
    elif kind == "Socket" and not path.is_socket():
        raise VolumeError(f"hostPath {path} is not a socket")
    return path


# -- mounts -----------------------------------------------------------------------------


def can_create(path: str, creatable: Sequence[str] = CREATABLE) -> bool:
    """Whether a missing mount point may be created on the host at ``path``."""
    norm = os.path.normpath(path)
    return any(norm == c or norm.startswith(c.rstrip("/") + "/") for c in creatable)


def plan_mounts(
    wanted: Sequence[tuple[str, Path, bool, str]],
    *,
    isolated: bool,
    creatable: Sequence[str] = CREATABLE,
    visible: Sequence[Path] = (),
) -> list[Mount]:
    """Decide, for each ``(mountPath, host dir, readOnly, subPath)``, between a bind mount
    and the rewriting fallback, and create the host mount points the binds need.

    A bind never covers a host directory the container still needs: a volume's source
    or one of ``visible`` (the agent's state, where unpacked images live). An emptyDir
    at ``/tmp`` while the agent keeps its state under ``/tmp`` is rewritten instead."""
    mounts: list[Mount] = []
    bound: list[str] = []
    needed = [os.path.normpath(str(path)) for path in visible]
    needed += [os.path.normpath(str(source)) for _, source, _, _ in wanted]
    for target, source, read_only, sub_path in sorted(wanted, key=lambda w: _depth(w[0])):
        target = os.path.normpath(target)
        if sub_path:
            source = source / _safe_rel(sub_path)
            if not source.exists():
                source.mkdir(parents=True, exist_ok=True)
        is_file = source.is_file()
        hides = any(path == target or path.startswith(target.rstrip("/") + "/") for path in needed)
        bind = isolated and not hides and _bindable(target, is_file, bound, creatable)
        mounts.append(Mount(source, target, read_only, bind, is_file))
        if bind:
            bound.append(target)
    return mounts


def _bindable(target: str, is_file: bool, bound: Sequence[str], creatable: Sequence[str]) -> bool:
    if target == "/":
        return False
    if any(target.startswith(b.rstrip("/") + "/") for b in bound):
        return True  # created inside the parent volume, in the container's namespace
    if os.path.lexists(target):
        return os.path.isfile(target) == is_file or (not is_file and os.path.isdir(target))
    if not can_create(target, creatable):
        return False
    try:
        if is_file:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).touch()
        else:
            Path(target).mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return True


def _depth(path: str) -> int:
    return len([p for p in os.path.normpath(path).split("/") if p])


def rewrite_table(mounts: Sequence[Mount], extra: Mapping[str, str] | None = None) -> list:
    """``(container path, host path)`` pairs for the rewriting fallback, longest first."""
    table = [(m.target, str(m.source)) for m in mounts if not m.bind]
    table += list((extra or {}).items())
    table.sort(key=lambda pair: len(pair[0]), reverse=True)
    return table


def rewrite(value: str, table: Sequence[tuple[str, str]]) -> str:
    """Replace each container path prefix in ``value`` with its host directory, at path
    boundaries only (``/data`` and ``/data/x`` are rewritten, ``/database`` and
    ``/var/data`` are not)."""
    if not table:
        return value
    pattern = _pattern(tuple(t for t, _ in table))
    mapping = dict(table)
    return pattern.sub(lambda m: mapping[m.group(1)], value)


_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _pattern(targets: tuple[str, ...]) -> re.Pattern[str]:
    if targets not in _PATTERNS:
        alternatives = "|".join(re.escape(t) for t in targets)
        _PATTERNS[targets] = re.compile(rf"(?<![\w.\-/])({alternatives})(?=/|$|[^\w.\-])")
    return _PATTERNS[targets]
