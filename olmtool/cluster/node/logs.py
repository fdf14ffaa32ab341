"""Container logs on disk: ``<state>/pods/<ns>_<pod>_<uid>/<container>/<restart>.log``.

Each container instance (restart) writes its stdout and stderr, interleaved as written,
to its own file; :func:`read_logs` reads the current (or previous) instance, as
``kubectl logs [--previous]`` does.

The processes write their files directly (no pipe through the agent, so they outlive an
agent restart), which leaves lines without timestamps. The kubelet API samples the size
of every running container's log about once a second into ``<restart>.times``
(:class:`TimeIndex`); a line gets the time of the first sample that covers it, else the
file's modification time, so ``timestamps`` and ``sinceTime`` are accurate to about a
second. :class:`LogOptions` and :class:`LogFilter` apply kubelet's query parameters.
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
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


def instance_logs(directory: Path, container: str) -> list[Path]:
    """The log files of a container's instances, oldest first."""
    numbers = sorted(int(p.stem) for p in (directory / container).glob("*.log") if p.stem.isdigit())
    return [log_path(directory, container, n) for n in numbers]


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
    files = instance_logs(directory, container)
    if previous:
        if len(files) < 2:
            raise LogsError(f'previous terminated container "{container}" in pod "{pod}" not found')
        return files[-2].read_text(errors="replace")
    return files[-1].read_text(errors="replace") if files else ""  # "": not started yet


def _meta(directory: Path) -> dict | None:
    try:
        value = json.loads((directory / META).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# -- kubelet's log options ------------------------------------------------------------


class LogOptionsError(ValueError):
    """A query parameter kubelet would refuse (the message is what it says)."""


@dataclass(frozen=True)
class LogOptions:
    """``GET /containerLogs`` query parameters (``v1.PodLogOptions``)."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since: float | None = None  # unix time: lines written before it are left out

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]], now: float) -> LogOptions:
        """Parse (and validate as the apiserver does) a query; raises LogOptionsError."""

        def last(name: str) -> str | None:
            values = query.get(name) or []
            return values[-1] if values else None

        def flag(name: str) -> bool:
            return (last(name) or "false").lower() in ("true", "1")

        def number(name: str, minimum: int) -> int | None:
            text = last(name)
            if text is None or text == "":
                return None
            try:
                value = int(text)
            except ValueError:
                raise LogOptionsError(
                    f"{name}: invalid value {text!r}: must be an integer"
                ) from None
            if value < minimum:
                relation = "greater than or equal to" if minimum == 0 else "greater than"
                raise LogOptionsError(f"{name}: must be {relation} {minimum - (minimum > 0)}")
            return value

        seconds = number("sinceSeconds", 1)
        stamp = last("sinceTime")
        if seconds is not None and stamp:
            raise LogOptionsError("at most one of `sinceTime` or `sinceSeconds` may be specified")
        since = now - seconds if seconds is not None else None
        if stamp:
            try:
                since = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise LogOptionsError(f"sinceTime: invalid RFC 3339 time {stamp!r}") from None
        return cls(
            follow=flag("follow"),
            previous=flag("previous"),
            timestamps=flag("timestamps"),
            tail_lines=number("tailLines", 0),
            limit_bytes=number("limitBytes", 1),
            since=since,
        )


def rfc3339_nano(when: float) -> str:
    """Go's ``time.RFC3339Nano`` in UTC (trailing zeros of the fraction dropped)."""
    moment = datetime.fromtimestamp(when, UTC)
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


class LogFilter:
    """Applies ``sinceTime``, ``timestamps`` and ``limitBytes`` to log bytes fed in order,
    each piece with the time it was written; lines may span pieces (a line is kept or
    dropped, and stamped, by the time of its first byte)."""

    def __init__(self, options: LogOptions) -> None:
        self.options = options
        self.remaining = options.limit_bytes
        self._line_start = True
        self._keep = True

    @property
    def done(self) -> bool:
        """The byte limit was reached: nothing more will be written."""
        return self.remaining is not None and self.remaining <= 0

    def feed(self, data: bytes, when: float) -> bytes:
        out = bytearray()
        for piece in _split_keep_newlines(data):
            if self._line_start:
                since = self.options.since
                self._keep = since is None or when >= since
                if self._keep and self.options.timestamps:
                    out += rfc3339_nano(when).encode() + b" "
            if self._keep:
                out += piece
            self._line_start = piece.endswith(b"\n")
        return self.limit(bytes(out))

    def limit(self, data: bytes) -> bytes:
        """``data`` cut to what ``limitBytes`` still allows."""
        if self.remaining is None:
            return data
        data = data[: max(self.remaining, 0)]
        self.remaining -= len(data)
        return data


def _split_keep_newlines(data: bytes) -> Iterator[bytes]:
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def tail_start(data: bytes, lines: int | None) -> int:
    """The offset where the last ``lines`` lines of ``data`` begin (a last line without
    its newline counts, as kubelet counts it)."""
    if lines is None:
        return 0
    if lines == 0:
        return len(data)
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    for _ in range(lines):
        found = data.rfind(b"\n", 0, end)
        if found < 0:
            return 0
        end = found
    return end + 1


class TimeIndex:
    """``<restart>.times`` beside a log file: "<size> <unix time>" lines, appended while
    the file grows, so each line's write time can be told afterwards."""

    def __init__(self, log_file: Path) -> None:
        self.path = log_file.with_suffix(".times")
        self.log_file = log_file
        self.last_size = -1

    def sample(self, when: float) -> None:
        """Record the log's size now, if it grew since the last sample."""
        try:
            size = self.log_file.stat().st_size
        except OSError:
            return
        if size <= self.last_size:
            return
        if self.last_size < 0:  # a fresh index (or a restarted agent): continue the file
            self.last_size = max((s for s, _ in self.samples()), default=0)
            if size <= self.last_size:
                return
        try:
            with self.path.open("a") as out:
                out.write(f"{size} {when:.6f}\n")
        except OSError:  # the Pod's directory was removed meanwhile
            return
        self.last_size = size

    def samples(self) -> list[tuple[int, float]]:
        try:
            text = self.path.read_text()
        except OSError:
            return []
        found = []
        for line in text.splitlines():
            size, _, when = line.partition(" ")
            try:
                found.append((int(size), float(when)))
            except ValueError:
                continue
        return found


def line_times(
    data: bytes, base: int, samples: Sequence[tuple[int, float]], mtime: float
) -> list[tuple[bytes, float]]:
    """The lines of ``data`` (which starts at offset ``base`` of its file), each with
    the time of the first sample whose size covers the line's first byte (the line
    existed by then), else ``mtime`` (the file's last write)."""
    sizes = [size for size, _ in samples]
    out = []
    offset = base
    for line in _split_keep_newlines(data):
        index = bisect.bisect_right(sizes, offset)
        out.append((line, samples[index][1] if index < len(samples) else mtime))
        offset += len(line)
    return out


def render_log(log_file: Path, options: LogOptions) -> tuple[bytes, int, LogFilter]:
    """The log as ``GET /containerLogs`` returns it now (tail, since, timestamps,
    limit), the offset read up to (where a ``follow`` goes on) and the filter's state."""
    with log_file.open("rb") as handle:
        data = handle.read()
        mtime = os.fstat(handle.fileno()).st_mtime
    start = tail_start(data, options.tail_lines)
    log_filter = LogFilter(options)
    if options.since is None and not options.timestamps:  # no line needs its time
        return log_filter.limit(data[start:]), len(data), log_filter
    out = bytearray()
    samples = TimeIndex(log_file).samples()
    for line, when in line_times(data[start:], start, samples, mtime):
        out += log_filter.feed(line, when)
        if log_filter.done:
            break
    return bytes(out), len(data), log_filter
