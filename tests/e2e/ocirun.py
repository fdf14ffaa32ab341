"""Run OCI image layouts under a real OCI runtime (runc), for the e2e tests.

Independent of olmtool's image code on purpose: a layout is unpacked by umoci (``umoci
raw unpack`` for the root filesystem, ``umoci raw runtime-config`` for the runtime
bundle's ``config.json``, exactly what ``umoci unpack`` writes, without its mtree
manifest), and runc runs it. The image's config (entrypoint, user, env, working dir)
reaches the container only through umoci's translation, as it would through any
container engine's.

>>> bundle = unpack(layout, "3.11", tmp_path / "python")
>>> done = run(bundle, ["python3", "-c", "print(1)"], user=65532)
>>> done.returncode, done.stdout
(0, '1\\n')
>>> with network_namespace() as netns, detached(bundle, args, netns=netns) as box:
...     box.exec("etcdctl", "endpoint", "health")

A bundle's ``rootfs`` is shared by every run: each run gets a fresh runtime bundle of its
own (a ``config.json`` in a temporary directory whose ``root.path`` is the unpacked
rootfs), so one unpack serves many runs, and a read-only run (the default) cannot change
the next. Containers get unique ids (``olmtool-test-<random>``) and are always killed and
deleted, whatever happens.

Needs root, ``runc``, ``umoci`` and ``ip`` (iproute2); :func:`require_runtime` skips
without them, except in CI (``CI`` set), where a missing runtime is a failure.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

Spec = dict[str, Any]  # an OCI runtime config (config.json)
User = int | tuple[int, int]  # uid, or (uid, gid)
TOOLS = ("runc", "umoci", "ip")
ID_PREFIX = "olmtool-test-"
NETNS_DIR = Path("/var/run/netns")
TMPFS_OPTIONS = ("nosuid", "nodev", "mode=1777")
_RLIMITS = {
    "RLIMIT_NOFILE": resource.RLIMIT_NOFILE,
    "RLIMIT_NPROC": resource.RLIMIT_NPROC,
    "RLIMIT_CORE": resource.RLIMIT_CORE,
    "RLIMIT_MEMLOCK": resource.RLIMIT_MEMLOCK,
    "RLIMIT_STACK": resource.RLIMIT_STACK,
}


# --- availability -------------------------------------------------------------------------


def runtime_blocker() -> str | None:
    """Why containers cannot run here (None: they can)."""
    if os.geteuid() != 0:
        return "running OCI images under runc needs root"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not on PATH (Debian: apt-get install runc umoci iproute2)"
    return None


def require_runtime() -> None:
    """Skip the calling test when runc cannot run here, with the reason; in CI (``CI``
    set, as ``tests/e2e/conftest.py`` treats it) fail instead: CI must run these."""
    reason = runtime_blocker()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but the OCI runtime tests cannot run: {reason}")
    pytest.skip(reason)


# --- unpacking ----------------------------------------------------------------------------


def unpack(layout: Path, tag: str, dest: Path) -> Path:
    """Unpack the image ``tag`` of the OCI layout ``layout`` with umoci into the runtime
    bundle ``dest`` (``dest/rootfs`` and umoci's ``dest/config.json``); returns ``dest``."""
    if dest.exists():
        raise FileExistsError(dest)
    dest.mkdir(parents=True)
    image = f"{layout}:{tag}"
    _check(["umoci", "raw", "unpack", "--image", image, str(dest / "rootfs")], "umoci unpack")
    _check(
        [
            "umoci",
            "raw",
            "runtime-config",
            "--image",
            image,
            "--rootfs",
            str(dest / "rootfs"),
            str(dest / "config.json"),
        ],
        "umoci runtime-config",
    )
    return dest


def image_config(layout: Path, tag: str) -> dict[str, Any]:
    """The ``config`` of the image config (Entrypoint, Cmd, User, Env, WorkingDir,
    Labels) of the image ``tag`` in the OCI layout, read as plain JSON (index, manifest,
    config blob), without olmtool's code."""

    def blob(digest: str) -> Any:
        algorithm, _, value = digest.partition(":")
        return json.loads((layout / "blobs" / algorithm / value).read_bytes())

    index = json.loads((layout / "index.json").read_bytes())
    tagged = [
        m
        for m in index["manifests"]
        if (m.get("annotations") or {}).get("org.opencontainers.image.ref.name") == tag
    ]
    if len(tagged) != 1:
        raise LookupError(f"{layout}: {len(tagged)} manifests tagged {tag!r}")
    manifest = blob(tagged[0]["digest"])
    config: dict[str, Any] = blob(manifest["config"]["digest"]).get("config") or {}
    return config


def image_process(bundle: Path) -> dict[str, Any]:
    """The ``process`` umoci derived from the image config: ``args`` (Entrypoint + Cmd;
    umoci's default ``["sh"]`` when the image has neither), ``user`` (``uid``/``gid``),
    ``env``, ``cwd``."""
    process: dict[str, Any] = _read_spec(bundle)["process"]
    return process


def rootfs_path(bundle: Path, path: str) -> Path | None:
    """Where ``path`` of the container is in the bundle's rootfs, symlinks resolved as
    inside the container (absolute targets from the rootfs); None if it does not exist."""
    root = (bundle / "rootfs").resolve()
    parts = [part for part in path.split("/") if part not in ("", ".")]
    current, hops = root, 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            current = current.parent if current != root else root
            continue
        candidate = current / part
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                return None
            target = os.readlink(candidate)
            if target.startswith("/"):
                current = root
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
        elif candidate.exists():
            current = candidate
        else:
            return None
    return current


def which(bundle: Path, name: str) -> str | None:
    """The container path of the command ``name`` on the image's PATH (as umoci put it
    into ``process.env``), or None."""
    env = dict(item.partition("=")[::2] for item in image_process(bundle).get("env") or [])
    for directory in env.get("PATH", "").split(":"):
        found = rootfs_path(bundle, f"{directory}/{name}")
        if found is not None and found.is_file() and os.access(found, os.X_OK):
            return f"{directory}/{name}"
    return None


# --- runtime config -----------------------------------------------------------------------


def spec(
    bundle: Path,
    args: Sequence[str] | None = None,
    *,
    user: User | None = None,
    readonly: bool = True,
    tmpfs: Iterable[str] = ("/tmp",),
    netns: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    edit: Callable[[Spec], None] | None = None,
) -> Spec:
    """umoci's config for ``bundle`` made runnable non-interactively, with:

    * ``args`` as the process arguments (None: the image's Entrypoint + Cmd);
    * ``user`` as uid or (uid, gid) (None: the image's User, as umoci resolved it);
    * ``readonly`` as ``root.readonly``;
    * a tmpfs at each ``tmpfs`` entry, ``PATH`` or ``PATH:opt,opt`` (Docker's ``--tmpfs``
      syntax; options are appended to ``nosuid,nodev,mode=1777``, so ``mode=0700`` wins);
    * the network namespace ``netns`` (a name of ``ip netns``) instead of a fresh one;
    * ``env`` over the image's environment, ``cwd`` instead of its working directory;
    * ``edit`` called last on the whole config (securityContext translations, mounts).

    Resource limits are clamped to this process's hard limits (runc cannot raise them);
    ``oomScoreAdj`` is dropped (it needs CAP_SYS_RESOURCE, which root may lack here).
    """
    config = copy.deepcopy(_read_spec(bundle))
    config["root"] = {"path": str((bundle / "rootfs").resolve()), "readonly": readonly}
    process = config["process"]
    process["terminal"] = False
    process.pop("consoleSize", None)
    process.pop("oomScoreAdj", None)
    if args is not None:
        process["args"] = list(args)
    if user is not None:
        uid, gid = (user, user) if isinstance(user, int) else user
        process["user"] = {"uid": uid, "gid": gid}
    if env:
        merged = dict(item.partition("=")[::2] for item in process.get("env") or [])
        merged.update(env)
        process["env"] = [f"{name}={value}" for name, value in merged.items()]
    if cwd is not None:
        process["cwd"] = cwd
    process["rlimits"] = [_clamped(limit) for limit in process.get("rlimits") or []]
    config["hostname"] = "olmtool-test"
    for entry in tmpfs:
        destination, _, options = entry.partition(":")
        config["mounts"].append(
            {
                "destination": destination,
                "type": "tmpfs",
                "source": "tmpfs",
                "options": [*TMPFS_OPTIONS, *filter(None, options.split(","))],
            }
        )
    if netns is not None:
        path = NETNS_DIR / netns
        if not path.exists():
            raise FileNotFoundError(f"no network namespace {netns!r} ({path})")
        namespaces = [n for n in config["linux"]["namespaces"] if n["type"] != "network"]
        config["linux"]["namespaces"] = [*namespaces, {"type": "network", "path": str(path)}]
    if edit is not None:
        edit(config)
    return config


def run(
    bundle: Path,
    args: Sequence[str] | None = None,
    *,
    user: User | None = None,
    readonly: bool = True,
    tmpfs: Iterable[str] = ("/tmp",),
    netns: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    edit: Callable[[Spec], None] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run one container of ``bundle`` to completion (``runc run``), stdin empty, stdout
    and stderr captured. The options are :func:`spec`'s. On timeout the container is
    killed and :class:`subprocess.TimeoutExpired` raised; it is deleted in any case."""
    config = spec(
        bundle,
        args,
        user=user,
        readonly=readonly,
        tmpfs=tmpfs,
        netns=netns,
        env=env,
        cwd=cwd,
        edit=edit,
    )
    with _runtime_bundle(bundle, config) as (container_id, runtime):
        return subprocess.run(
            ["runc", "run", "--bundle", str(runtime), container_id],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


# --- detached containers ------------------------------------------------------------------


@dataclass
class Container:
    """A running detached container (see :func:`detached`)."""

    id: str
    runtime: Path  # its runtime bundle: config.json, stdout.log, stderr.log

    @property
    def stdout(self) -> Path:
        return self.runtime / "stdout.log"

    @property
    def stderr(self) -> Path:
        return self.runtime / "stderr.log"

    def logs(self) -> str:
        """What the container's process wrote so far (stdout, then stderr)."""
        return _text(self.stdout) + _text(self.stderr)

    def exec(
        self,
        *args: str,
        user: User | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``args`` inside the container (``runc exec``), output captured."""
        command = ["runc", "exec"]
        if user is not None:
            uid, gid = (user, user) if isinstance(user, int) else user
            command += ["--user", f"{uid}:{gid}"]
        for name, value in (env or {}).items():
            command += ["--env", f"{name}={value}"]
        return subprocess.run(
            [*command, self.id, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def state(self) -> dict[str, Any]:
        """``runc state``: ``status`` (created, running, stopped), ``pid``, ..."""
        done = _check(["runc", "state", self.id], "runc state")
        state: dict[str, Any] = json.loads(done.stdout)
        return state

    def running(self) -> bool:
        try:
            return self.state().get("status") == "running"
        except RuntimeError:
            return False

    def wait_until(
        self, check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1
    ) -> None:
        """Poll ``check`` until true; fail with the container's logs if it stops running
        or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            if check():
                return
            if not self.running():
                raise AssertionError(f"container stopped before {what}:\n{self.logs()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what}:\n{self.logs()[-3000:]}"
                )
            time.sleep(interval)


@contextlib.contextmanager
def detached(
    bundle: Path,
    args: Sequence[str] | None = None,
    *,
    user: User | None = None,
    readonly: bool = True,
    tmpfs: Iterable[str] = ("/tmp",),
    netns: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    edit: Callable[[Spec], None] | None = None,
) -> Iterator[Container]:
    """Start a container of ``bundle`` in the background (``runc run -d``, stdout and
    stderr to files) and yield it; on exit it is killed (SIGKILL) and deleted, and its
    runtime bundle removed. Options as :func:`spec`."""
    config = spec(
        bundle,
        args,
        user=user,
        readonly=readonly,
        tmpfs=tmpfs,
        netns=netns,
        env=env,
        cwd=cwd,
        edit=edit,
    )
    with _runtime_bundle(bundle, config) as (container_id, runtime):
        container = Container(container_id, runtime)
        with container.stdout.open("wb") as out, container.stderr.open("wb") as err:
            done = subprocess.run(
                ["runc", "run", "--detach", "--bundle", str(runtime), container_id],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                timeout=60,
            )
        if done.returncode != 0:
            raise RuntimeError(f"runc run -d failed ({done.returncode}): {container.logs()}")
        yield container


# --- network namespaces -------------------------------------------------------------------


@contextlib.contextmanager
def network_namespace() -> Iterator[str]:
    """A fresh named network namespace (``ip netns add olmtool-test-<random>``) with its
    loopback up; yields its name, deletes it on exit. Containers join it with
    ``netns=NAME``; host-side clients reach them with :func:`netns_exec`."""
    name = f"{ID_PREFIX}{secrets.token_hex(4)}"
    _check(["ip", "netns", "add", name], "ip netns add")
    try:
        _check(["ip", "-n", name, "link", "set", "lo", "up"], "ip link set lo up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)


def netns_exec(
    netns: str, args: Sequence[str], *, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run a host command inside the network namespace ``netns`` (``ip netns exec``)."""
    return subprocess.run(
        ["ip", "netns", "exec", netns, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- internals ----------------------------------------------------------------------------


@contextlib.contextmanager
def _runtime_bundle(bundle: Path, config: Spec) -> Iterator[tuple[str, Path]]:
    """A container id and a runtime bundle directory holding ``config``; afterwards the
    container (if any) is killed and deleted and the directory removed."""
    container_id = f"{ID_PREFIX}{secrets.token_hex(6)}"
    runtime = Path(tempfile.mkdtemp(prefix=".run-", dir=bundle))
    try:
        (runtime / "config.json").write_text(json.dumps(config, indent=1))
        yield container_id, runtime
    finally:
        _destroy(container_id)
        shutil.rmtree(runtime, ignore_errors=True)


def _destroy(container_id: str) -> None:
    """Kill and delete the container; quiet when it does not exist (anymore)."""
    for command in (["kill", container_id, "KILL"], ["delete", "--force", container_id]):
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(["runc", *command], capture_output=True, timeout=30)


def _read_spec(bundle: Path) -> Spec:
    config: Spec = json.loads((bundle / "config.json").read_text())
    return config


def _clamped(limit: Mapping[str, Any]) -> dict[str, Any]:
    which = _RLIMITS.get(limit["type"])
    if which is None:
        return dict(limit)
    _, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY:
        return dict(limit)
    return {**limit, "hard": min(limit["hard"], hard), "soft": min(limit["soft"], hard)}


def _check(command: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
