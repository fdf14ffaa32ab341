"""Container logs on disk: ``<state>/pods/<ns>_<pod>_<uid>/<container>/<restart>.log``.

Each container instance (restart) writes its stdout and stderr, interleaved as written,
to its own file; :func:`read_logs` reads the current (or previous) instance, as
``kubectl logs [--previous]`` does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from olmtool.errors import OlmtoolError

PODS = "pods"
META = ".pod.json"  # written in each Pod dir: namespace, name, uid, container names
DELETED = ".deleted"  # marks the dir of a Pod that no longer exists (its logs are kept)
KEEP_DELETED = 100


class LogsError(OlmtoolError):
    """No such Pod or container on this node, or it has no logs yet."""


def pod_dir(state_dir: Path, namespace: str, name: str, uid: str) -> Path:
    return state_dir / PODS / f"{namespace}_{name}_{uid}"


def log_path(directory: Path, container: str, restart: int) -> Path:
    return directory / container / f"{restart}.log"


def write_pod_meta(directory: Path, namespace: str, name: str, uid: str, containers: list) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    meta = {"namespace": namespace, "name": name, "uid": uid, "containers": containers}
    (directory / META).write_text(json.dumps(meta))


def mark_deleted(directory: Path) -> None:
    if directory.is_dir():
        (directory / DELETED).touch()


def prune(state_dir: Path, keep: int = KEEP_DELETED) -> int:
    """Remove the dirs (logs) of deleted Pods beyond the ``keep`` most recently deleted."""
    root = state_dir / PODS
    if not root.is_dir():
        return 0
    deleted = []
    for entry in root.iterdir():
        try:
            deleted.append(((entry / DELETED).stat().st_mtime, entry))
        except OSError:
            continue
    deleted.sort(reverse=True)
    for _, entry in deleted[keep:]:
        shutil.rmtree(entry, ignore_errors=True)
    return max(len(deleted) - keep, 0)


def find_pod_dirs(state_dir: Path, namespace: str, pod: str) -> list[Path]:
    """The directories of every Pod ``namespace/pod`` this node ran, newest last."""
    root = state_dir / PODS
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        meta = _meta(entry)
        if meta and meta.get("namespace") == namespace and meta.get("name") == pod:
            found.append(entry)
    return sorted(found, key=lambda p: (p / META).stat().st_mtime)


def read_logs(
    state_dir: Path,
    namespace: str,
    pod: str,
    container: str | None = None,
    *,
    previous: bool = False,
) -> str:
    """The log of a container of the newest Pod named ``namespace/pod``; ``container``
    defaults to the Pod's first container. ``previous`` gives the instance before the
    current one. Raises :class:`LogsError` with what there is when nothing matches."""
    dirs = find_pod_dirs(Path(state_dir), namespace, pod)
    if not dirs:
        raise LogsError(f'pod "{pod}" not found in namespace "{namespace}" on this node')
    directory = dirs[-1]
    meta = _meta(directory) or {}
    names = [str(n) for n in meta.get("containers") or []]
    if container is None:
        if not names:
            raise LogsError(f'pod "{pod}" has no containers')
        container = names[0]
    elif container not in names:
        raise LogsError(
            f'container "{container}" is not valid for pod "{pod}"; choose one of: '
            + ", ".join(names)
        )
    restarts = sorted(
        (int(p.stem) for p in (directory / container).glob("*.log") if p.stem.isdigit()),
    )
    if previous:
        if len(restarts) < 2:
            raise LogsError(f'previous terminated container "{container}" in pod "{pod}" not found')
        wanted = restarts[-2]
    elif restarts:
        wanted = restarts[-1]
    else:
        return ""  # not started yet
    return log_path(directory, container, wanted).read_text(errors="replace")


def _meta(directory: Path) -> dict | None:
    try:
        value = json.loads((directory / META).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
