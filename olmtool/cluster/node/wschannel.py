"""Kubernetes' channel protocols over WebSocket (what the Python client's ``stream()``
and kubectl >= 1.30 speak for exec): every message starts with its channel, 0 stdin,
1 stdout, 2 stderr, 3 error (the status), 4 resize; ``v5.channel.k8s.io`` adds 255,
"close channel N" (how a v5 client ends stdin). The ``base64`` variants send text
messages: the channel as an ASCII digit, then the data in base64. Framing is
``wsproto``'s; this module adds the channels and an asyncio session.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Sequence

from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Message, Ping, TextMessage
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
V1 = "channel.k8s.io"
V1_BASE64 = "base64.channel.k8s.io"
PROTOCOLS = (V5, V4, V4_BASE64, V1, V1_BASE64)
CLOSE_WAIT = 5.0  # seconds to wait for the client's close frame


def choose_protocol(offered: Sequence[str]) -> str | None:
    """The first protocol the client offers that we speak; "" when it offers none (the
    binary channel protocol, as kubelet assumes); None when we speak none of them."""
    wanted = [p.strip() for value in offered for p in value.split(",") if p.strip()]
    if not wanted:
        return ""
    return next((p for p in wanted if p in PROTOCOLS), None)


def is_base64(protocol: str) -> bool:
    return protocol in (V4_BASE64, V1_BASE64)


def reports_json_status(protocol: str) -> bool:
    """v4 and v5 write a JSON metav1.Status on the error channel; older ones the text of
    a failure only."""
    return protocol in (V5, V4, V4_BASE64)


def encode_message(protocol: str, channel: int, data: bytes) -> bytes | str:
    if is_base64(protocol):
        return str(channel) + base64.b64encode(data).decode()
    return bytes([channel]) + data


def decode_message(protocol: str, message: bytes | str) -> tuple[int, bytes] | None:
    """(channel, data) of a client's message; None for an empty or malformed one. The
    frame type does not matter (the Python client sends text frames for str data):
    the protocol tells binary from base64."""
    if is_base64(protocol):
        text = message.decode(errors="replace") if isinstance(message, bytes) else message
        if not text or not text[0].isdigit():
            return None
        try:
            return int(text[0]), base64.b64decode(text[1:])
        except ValueError:
            return None
    raw = message.encode() if isinstance(message, str) else message
    if not raw:
        return None
    return raw[0], bytes(raw[1:])


class ChannelSession:
    """The server side of an upgraded WebSocket connection carrying channels."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        protocol: str,
        initial: bytes = b"",
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.protocol = protocol
        self._ws = Connection(ConnectionType.SERVER)
        self._initial = initial
        self._lock = asyncio.Lock()
        self.stdin = asyncio.StreamReader()
        self.resize = asyncio.StreamReader()
        self.closed = asyncio.Event()  # the client closed or went away
        self._parts: list[bytes | str] = []
        self._stdin_open = True

    # -- sending ----------------------------------------------------------------------

    async def _send(self, event: Message | CloseConnection | object) -> None:
        async with self._lock:
            if self._ws.state is not ConnectionState.OPEN and not isinstance(
                event, CloseConnection
            ):
                return
            try:
                data = self._ws.send(event)  # type: ignore[arg-type]
            except LocalProtocolError:
                return
            self._writer.write(data)
            await self._writer.drain()

    async def send(self, channel: int, data: bytes) -> None:
        message = encode_message(self.protocol, channel, data)
        if isinstance(message, str):
            await self._send(TextMessage(data=message))
        else:
            await self._send(BytesMessage(data=message))

    async def write_stdout(self, data: bytes) -> None:
        await self.send(STDOUT, data)

    async def write_stderr(self, data: bytes) -> None:
        await self.send(STDERR, data)

    async def close(self, code: int = 1000) -> None:
        """Send our close frame and wait (a little) for the client's."""
        with contextlib.suppress(ConnectionError, OSError):
            if self._ws.state is ConnectionState.OPEN:
                await self._send(CloseConnection(code=code))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closed.wait(), CLOSE_WAIT)

    # -- receiving --------------------------------------------------------------------

    async def serve(self) -> None:
        """Read until the client closes; feeds stdin and resize."""
        try:
            data = self._initial
            while True:
                if data:
                    self._ws.receive_data(data)
                    if not await self._handle_events():
                        return
                data = await self._reader.read(65536)
                if not data:
                    self._ws.receive_data(None)
                    return
        except (ConnectionError, OSError, RemoteProtocolError):
            return
        finally:
            self.closed.set()
            self._stdin_open = False
            self.stdin.feed_eof()
            self.resize.feed_eof()

    async def _handle_events(self) -> bool:
        for event in self._ws.events():
            if isinstance(event, CloseConnection):
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    await self._send(event.response())
                return False
            if isinstance(event, Ping):
                await self._send(event.response())
            elif isinstance(event, Message):
                self._parts.append(event.data)
                if event.message_finished:
                    joined = (
                        "".join(self._parts)  # type: ignore[arg-type]
                        if isinstance(event, TextMessage)
                        else b"".join(self._parts)  # type: ignore[arg-type]
                    )
                    self._parts = []
                    self._deliver(joined)
        return True

    def _deliver(self, message: bytes | str) -> None:
        decoded = decode_message(self.protocol, message)
        if decoded is None:
            return
        channel, data = decoded
        if channel == STDIN and data and self._stdin_open:
            self.stdin.feed_data(data)
        elif channel == RESIZE and data:
            self.resize.feed_data(data)
        elif channel == CLOSE and self.protocol == V5 and data[:1] == bytes([STDIN]):
            self._stdin_open = False
            self.stdin.feed_eof()
