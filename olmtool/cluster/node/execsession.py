"""One exec session of the kubelet API, once the connection is upgraded: the client's
streams over SPDY/3.1 (one stream per ``streamtype``) or WebSocket (one channel byte per
message), the command run through :mod:`.containerexec`, and the final status written
as each protocol version expects it (a ``metav1.Status`` JSON from v4 on, else text).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from olmtool.cluster.node import containerexec, spdy, wschannel
from olmtool.cluster.node.containerexec import ExecError, ExecOptions

if TYPE_CHECKING:
    from olmtool.cluster.node.containers import Container

log = logging.getLogger(__name__)

JSON = dict[str, Any]
STREAM_CREATION_TIMEOUT = 30.0  # kubelet's: the client opens its SPDY streams by then
SPDY_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")


async def over_spdy(
    session: spdy.Session, protocol: str | None, options: ExecOptions, container: Container
) -> None:
    """Serve ``session`` until the command ran and its status is written (nothing when
    the client does not open its streams in time)."""
    serving = asyncio.create_task(session.serve())
    try:
        streams = await spdy_streams(session, options, protocol or "channel.k8s.io")
        if streams is None:
            return
        status = await execute(container, options, streams)
        await streams.finish(status, json_status=protocol == "v4.channel.k8s.io")
        await session.go_away()
        with contextlib.suppress(TimeoutError):  # let the client close first
            await asyncio.wait_for(session.closed.wait(), wschannel.CLOSE_WAIT)
    finally:
        serving.cancel()


async def over_websocket(
    session: wschannel.ChannelSession,
    protocol: str | None,
    options: ExecOptions,
    container: Container,
) -> None:
    """Serve ``session`` until the command ran, its status is sent and the socket closed."""
    serving = asyncio.create_task(session.serve())
    try:
        # an empty message on the first output channel tells the client we are ready
        first = (
            wschannel.STDOUT
            if options.stdout
            else wschannel.STDERR
            if options.stderr
            else wschannel.ERROR
        )
        await session.send(first, b"")
        status = await execute(container, options, WebSocketStreams(session, options))
        if wschannel.reports_json_status(protocol):
            await session.send(wschannel.ERROR, containerexec.status_json(status))
        elif text := containerexec.status_text(status):
            await session.send(wschannel.ERROR, text)
        await session.close()
    finally:
        serving.cancel()


async def execute(
    container: Container, options: ExecOptions, streams: containerexec.ExecStreams
) -> JSON:
    """Run the command; the status to report (an internal error when it cannot run, as
    a runtime reports a missing executable)."""
    try:
        invoked = containerexec.invocation(container, options.command, options.tty)
        code = await containerexec.run(invoked, options, streams)
    except ExecError as exc:
        return containerexec.exec_status(None, options.command, str(exc))
    return containerexec.exec_status(code, options.command)


class SpdyStreams:
    """The client's SPDY streams of an exec session, by ``streamtype``."""

    def __init__(self, by_type: dict[str, spdy.Stream]) -> None:
        self.by_type = by_type
        stdin, resize = by_type.get("stdin"), by_type.get("resize")
        self.stdin = stdin.reader if stdin else None
        self.resize = resize.reader if resize else None

    async def write_stdout(self, data: bytes) -> None:
        if stream := self.by_type.get("stdout"):
            await stream.write(data)

    async def write_stderr(self, data: bytes) -> None:
        if stream := self.by_type.get("stderr"):
            await stream.write(data)

    async def finish(self, status: JSON, *, json_status: bool) -> None:
        """End the output streams, then report ``status`` on the error stream."""
        for kind in ("stdout", "stderr", "stdin", "resize"):
            if stream := self.by_type.get(kind):
                await stream.close()
        error = self.by_type.get("error")
        if error is not None:
            body = (
                containerexec.status_json(status)
                if json_status
                else containerexec.status_text(status)
            )
            if body:
                await error.write(body)
            await error.close()


async def spdy_streams(
    session: spdy.Session, options: ExecOptions, protocol: str
) -> SpdyStreams | None:
    """Wait for the streams the client must open (error, one per requested stream, and
    resize with a tty from v3 on); None when they do not come in time."""
    expected = 1 + options.stdin + options.stdout + options.stderr
    if options.tty and protocol in ("v4.channel.k8s.io", "v3.channel.k8s.io"):
        expected += 1
    by_type: dict[str, spdy.Stream] = {}
    deadline = time.monotonic() + STREAM_CREATION_TIMEOUT
    while len(by_type) < expected:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or session.closed.is_set():
            log.debug("exec: the client did not open its streams")
            return None
        try:
            stream = await asyncio.wait_for(session.new_streams.get(), remaining)
        except TimeoutError:
            continue
        kind = stream.header("streamtype")
        if kind in ("error", "stdin", "stdout", "stderr", "resize"):
            by_type[kind] = stream
    return SpdyStreams(by_type)


class WebSocketStreams:
    def __init__(self, session: wschannel.ChannelSession, options: ExecOptions) -> None:
        self.session = session
        self.stdin = session.stdin if options.stdin else None
        self.resize = session.resize if options.tty else None
        self._options = options

    async def write_stdout(self, data: bytes) -> None:
        if self._options.stdout:
            await self.session.write_stdout(data)

    async def write_stderr(self, data: bytes) -> None:
        if self._options.stderr:
            await self.session.write_stderr(data)
