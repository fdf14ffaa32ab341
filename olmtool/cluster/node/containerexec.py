"""``kubectl exec``: running a command in a running container, as its runtime would.

The command sees the container's environment (its launch spec), its paths (an image
path or volume mountPath is rewritten as in the container's own command) and its
namespaces: ``nsenter`` joins every namespace of the container's main process that
differs from the agent's own (mount and UTS today; network, IPC or PID when the node
gives Pods those), with the process's working directory. The streams are those of
:class:`ExecStreams`, which the SPDY and WebSocket sessions of :mod:`.kubeletapi`
implement; the outcome is reported as the ``metav1.Status`` remotecommand v4 defines.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import logging
import os
import pty
import shlex
import shutil
import signal
import struct
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from olmtool.cluster.node.process import SYSTEM_PATH
from olmtool.cluster.node.runtime import DEFAULT_PATH, ImageError
from olmtool.cluster.node.status import exit_code_of
from olmtool.cluster.node.volumes import rewrite

if TYPE_CHECKING:
    from olmtool.cluster.node.containers import Container

log = logging.getLogger(__name__)

JSON = dict[str, Any]
READ_SIZE = 32 * 1024
OUTPUT_DRAIN = 2.0  # seconds to read what is left in the pipes once the command exited
# /proc/<pid>/ns entries and the nsenter flag that joins each (user namespaces are left
# alone: containers here run as the agent's user)
NAMESPACES = (("mnt", "-m"), ("uts", "-u"), ("ipc", "-i"), ("net", "-n"), ("pid", "-p"))


class ExecError(Exception):
    """The command cannot be run (the message is what the client is told)."""


@dataclass(frozen=True)
class ExecOptions:
    """What an exec request asks for (``command``, ``input``/``output``/``error``/``tty``
    as the apiserver forwards them; ``stdin``/``stdout``/``stderr`` as clients send)."""

    command: tuple[str, ...]
    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> ExecOptions:
        def flag(*names: str) -> bool:
            for name in names:
                for value in query.get(name) or []:
                    if value.lower() in ("1", "true"):
                        return True
            return False

        tty = flag("tty")
        options = cls(
            command=tuple(query.get("command") or ()),
            stdin=flag("input", "stdin"),
            stdout=flag("output", "stdout"),
            # kubelet drops stderr with a tty: the terminal carries both
            stderr=flag("error", "stderr") and not tty,
            tty=tty,
        )
        if not options.command:
            raise ExecError("you must specify at least one command for the container")
        if not (options.stdin or options.stdout or options.stderr):
            raise ExecError("you must specify at least 1 of stdin, stdout, stderr")
        return options


class ExecStreams(Protocol):
    """The client's side of an exec session, whatever the wire protocol."""

    stdin: asyncio.StreamReader | None  # what the client types, EOF when it is done
    resize: asyncio.StreamReader | None  # JSON {"Width": w, "Height": h} objects

    async def write_stdout(self, data: bytes) -> None: ...

    async def write_stderr(self, data: bytes) -> None: ...


# -- the status reported at the end -------------------------------------------------------


def exec_status(exit_code: int | None, command: Sequence[str], error: str | None = None) -> JSON:
    """The ``metav1.Status`` kubelet writes on the error stream: Success, Failure with
    reason ``NonZeroExitCode`` and the code as an ``ExitCode`` cause, or an internal
    error (the command could not run)."""
    if error is not None:
        error = f"error executing command in container: {error}"
        return {
            "metadata": {},
            "status": "Failure",
            "message": f"Internal error occurred: {error}",
            "reason": "InternalError",
            "details": {"causes": [{"message": error}]},
            "code": 500,
        }
    if exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    shown = shlex.join(command)
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            f"command terminated with non-zero exit code: error executing command "
            f"[{shown}], exit code {exit_code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]},
    }


def status_text(status: JSON) -> bytes:
    """The error stream's content in protocols before v4: the message of a failure."""
    return b"" if status.get("status") == "Success" else str(status.get("message", "")).encode()


def status_json(status: JSON) -> bytes:
    return json.dumps(status, separators=(",", ":")).encode()


# -- what runs --------------------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: str | None


def namespace_flags(pid: int, own: int | None = None) -> list[str]:
    """nsenter flags for the namespaces of ``pid`` that differ from those of ``own``
    (this process); raises ExecError when ``pid`` is gone."""
    flags = []
    for name, flag in NAMESPACES:
        try:
            theirs = os.readlink(f"/proc/{pid}/ns/{name}")
        except FileNotFoundError:
            raise ExecError("container not running") from None
        except OSError:
            continue  # a namespace kind this kernel lacks
        try:
            ours = os.readlink(f"/proc/{own or 'self'}/ns/{name}")
        except OSError:
            ours = ""
        if theirs != ours:
            flags.append(flag)
    return flags


def check_running(container: Container) -> None:
    """ExecError (kubelet's "container not found") unless ``container`` runs."""
    proc = container.process
    if (
        container.image is None
        or container.launch is None
        or proc is None
        or proc.poll() is not None
    ):
        raise ExecError(f'container not found ("{container.name}")')


def invocation(container: Container, command: Sequence[str], tty: bool) -> Invocation:
    """How to run ``command`` in ``container``; ExecError when it cannot be."""
    check_running(container)
    image, launch, proc = container.image, container.launch, container.process
    assert image is not None and launch is not None and proc is not None
    env = dict(launch.env)
    if tty:
        env.setdefault("TERM", "xterm")
    argv = [rewrite(a, container.exec_table) for a in command]
    try:
        argv = image.resolve_executable(argv, env.get("PATH", DEFAULT_PATH))
    except ImageError as exc:
        raise ExecError(str(exc)) from None
    flags = namespace_flags(proc.pid)
    if not flags:
        cwd = launch.cwd if launch.cwd and os.path.isdir(launch.cwd) else "/"
        return Invocation(argv, env, cwd)
    nsenter = shutil.which("nsenter", path=SYSTEM_PATH) or "nsenter"
    # --wd without a value: the working directory of the container's process
    return Invocation([nsenter, "-t", str(proc.pid), *flags, "--wd", "--", *argv], env, None)


# -- running it -------------------------------------------------------------------------


async def run(invoked: Invocation, options: ExecOptions, streams: ExecStreams) -> int:
    """Run the command with the client's streams; its exit code (128+N if killed by
    signal N). Raises ExecError when it cannot start. Cancelling kills it."""
    if options.tty:
        return await _run_tty(invoked, options, streams)
    try:
        proc = await asyncio.create_subprocess_exec(
            *invoked.argv,
            stdin=asyncio.subprocess.PIPE if options.stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if options.stdout else asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE if options.stderr else asyncio.subprocess.DEVNULL,
            env=invoked.env,
            cwd=invoked.cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise ExecError(f"starting {invoked.argv[0]}: {exc}") from None
    pumps = []
    if proc.stdout is not None:
        pumps.append(asyncio.create_task(_pump(proc.stdout, streams.write_stdout)))
    if proc.stderr is not None:
        pumps.append(asyncio.create_task(_pump(proc.stderr, streams.write_stderr)))
    feeder = None
    if proc.stdin is not None and streams.stdin is not None:
        feeder = asyncio.create_task(_feed_pipe(streams.stdin, proc.stdin))
    try:
        returncode = await proc.wait()
        await _drain(pumps)
    finally:
        _kill_group(proc.pid)
        for task in [*pumps, *([feeder] if feeder else [])]:
            task.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    return exit_code_of(returncode)


async def _run_tty(invoked: Invocation, options: ExecOptions, streams: ExecStreams) -> int:
    master, slave = pty.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            *invoked.argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=invoked.env,
            cwd=invoked.cwd,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
    except OSError as exc:
        os.close(master)
        raise ExecError(f"starting {invoked.argv[0]}: {exc}") from None
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    tasks = [asyncio.create_task(_pump_tty(master, streams.write_stdout))]
    if options.stdin and streams.stdin is not None:
        tasks.append(asyncio.create_task(_feed_tty(streams.stdin, master)))
    if streams.resize is not None:
        tasks.append(asyncio.create_task(_resize_tty(streams.resize, master)))
    try:
        returncode = await proc.wait()
        await _drain(tasks[:1])
    finally:
        _kill_group(proc.pid)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        os.close(master)
    return exit_code_of(returncode)


def _take_terminal() -> None:
    """In the child (after setsid): the pty on fd 0 becomes its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


async def _drain(tasks: list[asyncio.Task[None]]) -> None:
    """Let the output pumps read what the command left in its pipes; a background
    process that keeps them open does not hold the session for longer."""
    if tasks:
        await asyncio.wait(tasks, timeout=OUTPUT_DRAIN)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _pump(source: asyncio.StreamReader, write: Any) -> None:
    while chunk := await source.read(READ_SIZE):
        await write(chunk)


async def _feed_pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(READ_SIZE):
            sink.write(chunk)
            await sink.drain()
    except (ConnectionError, BrokenPipeError):
        return  # the command stopped reading
    finally:
        with contextlib.suppress(OSError):
            sink.close()  # EOF: `cat` ends


async def _pump_tty(master: int, write: Any) -> None:
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    loop.add_reader(master, ready.set)
    try:
        while True:
            await ready.wait()
            ready.clear()
            try:
                chunk = os.read(master, READ_SIZE)
            except BlockingIOError:
                continue
            except OSError as exc:  # EIO: every holder of the terminal is gone
                if exc.errno == errno.EIO:
                    return
                raise
            if not chunk:
                return
            await write(chunk)
    finally:
        loop.remove_reader(master)


async def _feed_tty(source: asyncio.StreamReader, master: int) -> None:
    while chunk := await source.read(READ_SIZE):
        while chunk:
            try:
                written = os.write(master, chunk)
            except BlockingIOError:
                await asyncio.sleep(0.01)  # the terminal's input queue is full
                continue
            except OSError:
                return
            chunk = chunk[written:]


async def _resize_tty(source: asyncio.StreamReader, master: int) -> None:
    decoder = json.JSONDecoder()
    buffer = ""
    while chunk := await source.read(4096):
        buffer += chunk.decode(errors="replace")
        while buffer.strip():
            try:
                size, end = decoder.raw_decode(buffer.lstrip())
            except ValueError:
                break  # an incomplete object: wait for more
            buffer = buffer.lstrip()[end:]
            if isinstance(size, dict):
                with contextlib.suppress(TypeError, ValueError):
                    width, height = int(size.get("Width") or 0), int(size.get("Height") or 0)
                    set_window_size(master, width, height)


def set_window_size(fd: int, width: int, height: int) -> None:
    if width > 0 and height > 0:
        with contextlib.suppress(OSError):
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
