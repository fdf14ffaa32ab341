"""SPDY/3.1, as much of it as ``kubectl exec`` (client-go's ``spdystream``) uses: the
server side of one upgraded connection whose client opens every stream.

No maintained Python SPDY library exists (PyPI has ``spdy-py`` 0.2.0 of 2021 and
``python-spdylay`` of 2012, both abandoned), and the subset is small: frames are an
8-byte header and a payload; header blocks are length-prefixed name/value pairs,
compressed with one zlib stream per direction primed with the SPDY/3 dictionary.
Flow control (WINDOW_UPDATE) is not implemented, as ``spdystream`` does not either.

>>> codec = FrameCodec()
>>> frame = codec.decode_one(codec.encode(SynReply(1, {"streamtype": ["error"]})))
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

VERSION = 3
MAX_DATA = 32 * 1024  # bytes per DATA frame we send
MAX_FRAME = 16 * 1024 * 1024  # 24-bit length field

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
RST_PROTOCOL_ERROR = 1
RST_CANCEL = 5

# The SPDY/3 header compression dictionary (draft 3, section 2.6.10.1), 1423 bytes.
DICTIONARY = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04p"
    b"ost\x00\x00\x00\x03put\x00\x00\x00\x06delete\x00\x00\x00\x05trac"
    b"e\x00\x00\x00\x06accept\x00\x00\x00\x0eaccept-charset\x00\x00\x00"
    b"\x0faccept-encoding\x00\x00\x00\x0faccept-language\x00\x00\x00\ra"
    b"ccept-ranges\x00\x00\x00\x03age\x00\x00\x00\x05allow\x00\x00\x00\r"
    b"authorization\x00\x00\x00\rcache-control\x00\x00\x00\nconnection"
    b"\x00\x00\x00\x0ccontent-base\x00\x00\x00\x10content-encoding"
    b"\x00\x00\x00\x10content-language\x00\x00\x00\x0econtent-leng"
    b"th\x00\x00\x00\x10content-location\x00\x00\x00\x0bcontent-md"
    b"5\x00\x00\x00\rcontent-range\x00\x00\x00\x0ccontent-type\x00\x00"
    b"\x00\x04date\x00\x00\x00\x04etag\x00\x00\x00\x06expect"
    b"\x00\x00\x00\x07expires\x00\x00\x00\x04from\x00\x00\x00\x04h"
    b"ost\x00\x00\x00\x08if-match\x00\x00\x00\x11if-modified-since"
    b"\x00\x00\x00\rif-none-match\x00\x00\x00\x08if-range\x00\x00\x00"
    b"\x13if-unmodified-since\x00\x00\x00\rlast-modified\x00\x00\x00"
    b"\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00"
    b"\x00\x00\x12proxy-authenticate\x00\x00\x00\x13proxy-authorization"
    b"\x00\x00\x00\x05range\x00\x00\x00\x07referer\x00\x00\x00\x0bretr"
    b"y-after\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07t"
    b"railer\x00\x00\x00\x11transfer-encoding\x00\x00\x00\x07upgra"
    b"de\x00\x00\x00\nuser-agent\x00\x00\x00\x04vary\x00\x00\x00\x03"
    b"via\x00\x00\x00\x07warning\x00\x00\x00\x10www-authenticate\x00\x00"
    b"\x00\x06method\x00\x00\x00\x03get\x00\x00\x00\x06statu"
    b"s\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HT"
    b"TP/1.1\x00\x00\x00\x03url\x00\x00\x00\x06public\x00\x00\x00\nset-c"
    b"ookie\x00\x00\x00\nkeep-alive\x00\x00\x00\x06origin100101201202205"
    b"2063003023033043053063074024054064074084094104114124134144154164"
    b"17502504505203 Non-Authoritative Information204 No Content301 Mo"
    b"ved Permanently400 Bad Request401 Unauthorized403 Forbidden404 N"
    b"ot Found500 Internal Server Error501 Not Implemented503 Service "
    b"UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:0"
    b"0:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,ima"
    b"ge/png,image/jpg,image/gif,application/xml,application/xhtml+xml"
    b",text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sd"
    b"chcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)

Headers = dict[str, list[str]]


class SpdyError(Exception):
    """The peer broke the protocol; the connection is closed."""


# -- frames ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    associated: int = 0
    priority: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True)
class Ignored:
    """A control frame we have no use for (SETTINGS, WINDOW_UPDATE, unknown types)."""

    kind: int


Frame = Data | SynStream | SynReply | RstStream | Ping | GoAway | HeadersFrame | Ignored


def encode_header_block(headers: Mapping[str, Sequence[str]]) -> bytes:
    """The uncompressed name/value block: count, then length-prefixed lowercase names
    and NUL-joined values (32-bit lengths in SPDY/3)."""
    out = bytearray(struct.pack(">I", len(headers)))
    for name, values in headers.items():
        raw_name = name.lower().encode()
        raw_value = b"\x00".join(v.encode() for v in values)
        out += struct.pack(">I", len(raw_name)) + raw_name
        out += struct.pack(">I", len(raw_value)) + raw_value
    return bytes(out)


def decode_header_block(block: bytes) -> Headers:
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        offset = 4
        headers: Headers = {}
        for _ in range(count):
            (size,) = struct.unpack_from(">I", block, offset)
            name = block[offset + 4 : offset + 4 + size].decode().lower()
            offset += 4 + size
            (size,) = struct.unpack_from(">I", block, offset)
            value = block[offset + 4 : offset + 4 + size].decode()
            offset += 4 + size
            headers.setdefault(name, []).extend(value.split("\x00"))
    except (struct.error, UnicodeDecodeError) as exc:
        raise SpdyError(f"malformed header block: {exc}") from None
    return headers


class FrameCodec:
    """Encodes and decodes frames of one direction pair: header compression is a zlib
    stream per direction that lives as long as the connection."""

    def __init__(self) -> None:
        self._compress = zlib.compressobj(
            9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY
        )
        self._decompress = zlib.decompressobj(15, DICTIONARY)

    # -- writing --------------------------------------------------------------------

    def compress(self, headers: Mapping[str, Sequence[str]]) -> bytes:
        block = encode_header_block(headers)
        return self._compress.compress(block) + self._compress.flush(zlib.Z_SYNC_FLUSH)

    def encode(self, frame: Frame) -> bytes:
        if isinstance(frame, Data):
            if not 0 < frame.stream_id < 2**31 or len(frame.data) >= MAX_FRAME:
                raise ValueError("invalid DATA frame")
            flags = FLAG_FIN if frame.fin else 0
            return struct.pack(">II", frame.stream_id, flags << 24 | len(frame.data)) + frame.data
        if isinstance(frame, SynStream):
            flags = (FLAG_FIN if frame.fin else 0) | (0x02 if frame.unidirectional else 0)
            body = struct.pack(">IIBB", frame.stream_id, frame.associated, frame.priority << 5, 0)
            return _control(SYN_STREAM, flags, body + self.compress(frame.headers))
        if isinstance(frame, SynReply):
            body = struct.pack(">I", frame.stream_id) + self.compress(frame.headers)
            return _control(SYN_REPLY, FLAG_FIN if frame.fin else 0, body)
        if isinstance(frame, HeadersFrame):
            body = struct.pack(">I", frame.stream_id) + self.compress(frame.headers)
            return _control(HEADERS, FLAG_FIN if frame.fin else 0, body)
        if isinstance(frame, RstStream):
            return _control(RST_STREAM, 0, struct.pack(">II", frame.stream_id, frame.status))
        if isinstance(frame, Ping):
            return _control(PING, 0, struct.pack(">I", frame.ping_id))
        if isinstance(frame, GoAway):
            body = struct.pack(">II", frame.last_good_stream_id, frame.status)
            return _control(GOAWAY, 0, body)
        raise TypeError(f"cannot encode {frame!r}")

    # -- reading --------------------------------------------------------------------

    def decompress(self, payload: bytes) -> Headers:
        try:
            block = self._decompress.decompress(payload)
        except zlib.error as exc:
            raise SpdyError(f"header decompression failed: {exc}") from None
        return decode_header_block(block)

    def decode(self, head: bytes, payload: bytes) -> Frame:
        """One frame from its 8-byte header and its payload."""
        first, flags_length = struct.unpack(">II", head)
        flags = flags_length >> 24
        if not first & 0x80000000:
            return Data(first & 0x7FFFFFFF, payload, bool(flags & FLAG_FIN))
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        try:
            return self._decode_control(kind, flags, payload)
        except struct.error:
            raise SpdyError(f"short control frame of type {kind}") from None

    def _decode_control(self, kind: int, flags: int, payload: bytes) -> Frame:
        fin = bool(flags & FLAG_FIN)
        if kind == SYN_STREAM:
            stream_id, associated, priority = struct.unpack_from(">IIB", payload)
            headers = self.decompress(payload[10:])
            return SynStream(
                stream_id & 0x7FFFFFFF, headers, associated & 0x7FFFFFFF, priority >> 5,
                fin, bool(flags & 0x02),
            )  # fmt: skip
        if kind in (SYN_REPLY, HEADERS):
            (stream_id,) = struct.unpack_from(">I", payload)
            headers = self.decompress(payload[4:])
            if kind == SYN_REPLY:
                return SynReply(stream_id & 0x7FFFFFFF, headers, fin)
            return HeadersFrame(stream_id & 0x7FFFFFFF, headers, fin)
        if kind == RST_STREAM:
            stream_id, status = struct.unpack_from(">II", payload)
            return RstStream(stream_id & 0x7FFFFFFF, status)
        if kind == PING:
            return Ping(struct.unpack_from(">I", payload)[0])
        if kind == GOAWAY:
            last, status = struct.unpack_from(">II", payload)
            return GoAway(last & 0x7FFFFFFF, status)
        return Ignored(kind)

    def decode_one(self, wire: bytes) -> Frame:
        """Decode a single whole frame (tests)."""
        length = struct.unpack_from(">I", wire, 4)[0] & 0xFFFFFF
        return self.decode(wire[:8], wire[8 : 8 + length])


def _control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, flags << 24 | len(body)) + body


# -- a server-side session ------------------------------------------------------------


class Stream:
    """A stream the client opened: its headers, what it sent (``reader``), and writing
    back on it."""

    def __init__(self, session: Session, stream_id: int, headers: Headers) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self.reader = asyncio.StreamReader()
        self.closed = False  # we sent FIN (or the stream was reset)
        self.remote_closed = False  # the client sent FIN (or went away)

    def end_remote(self) -> None:
        if not self.remote_closed:
            self.remote_closed = True
            self.reader.feed_eof()

    def receive(self, data: bytes) -> None:
        if data and not self.remote_closed:
            self.reader.feed_data(data)

    def header(self, name: str) -> str:
        return (self.headers.get(name.lower()) or [""])[0]

    async def write(self, data: bytes) -> None:
        if self.closed:
            return
        for start in range(0, len(data), MAX_DATA):
            await self.session.send(Data(self.id, data[start : start + MAX_DATA]))

    async def close(self) -> None:
        """Half-close: FIN on our side (the client's reads end)."""
        if not self.closed:
            self.closed = True
            await self.session.send(Data(self.id, b"", fin=True))


class Session:
    """The server side of a SPDY/3.1 connection (after the HTTP upgrade): replies to
    every stream the client opens and hands it to ``accept``; answers PINGs."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, initial: bytes = b""
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._codec = FrameCodec()
        self._write_lock = asyncio.Lock()
        self._buffer = bytearray(initial)  # bytes read past the HTTP request
        self.streams: dict[int, Stream] = {}
        self.new_streams: asyncio.Queue[Stream] = asyncio.Queue()
        self.closed = asyncio.Event()  # the client went away (EOF, GOAWAY, error)
        self.last_stream_id = 0

    async def send(self, frame: Frame) -> None:
        async with self._write_lock:  # header compression state is order-dependent
            self._writer.write(self._codec.encode(frame))
            await self._writer.drain()

    async def _read_exactly(self, size: int) -> bytes:
        if len(self._buffer) >= size:
            out = bytes(self._buffer[:size])
            del self._buffer[:size]
            return out
        out = bytes(self._buffer) + await self._reader.readexactly(size - len(self._buffer))
        self._buffer.clear()
        return out

    async def read_frame(self) -> Frame:
        head = await self._read_exactly(8)
        length = struct.unpack_from(">I", head, 4)[0] & 0xFFFFFF
        return self._codec.decode(head, await self._read_exactly(length))

    async def serve(self) -> None:
        """Read frames until the client goes away; then every stream's reader ends."""
        try:
            while True:
                frame = await self.read_frame()
                await self._dispatch(frame)
                if isinstance(frame, GoAway):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, OSError, SpdyError):
            pass
        finally:
            self.closed.set()
            for stream in self.streams.values():
                stream.end_remote()

    async def _dispatch(self, frame: Frame) -> None:
        if isinstance(frame, SynStream):
            await self._open(frame)
        elif isinstance(frame, Data):
            stream = self.streams.get(frame.stream_id)
            if stream is None:
                return
            stream.receive(frame.data)
            if frame.fin:
                stream.end_remote()
        elif isinstance(frame, RstStream):
            stream = self.streams.get(frame.stream_id)
            if stream is not None:
                stream.closed = True
                stream.end_remote()
        elif isinstance(frame, Ping) and frame.ping_id % 2 == 1:
            await self.send(frame)  # the client's ping: echo it

    async def _open(self, frame: SynStream) -> None:
        if frame.stream_id % 2 == 0 or frame.stream_id <= self.last_stream_id:
            await self.send(RstStream(frame.stream_id, RST_PROTOCOL_ERROR))
            return
        self.last_stream_id = frame.stream_id
        stream = Stream(self, frame.stream_id, frame.headers)
        if frame.fin:
            stream.end_remote()
        self.streams[frame.stream_id] = stream
        await self.send(SynReply(frame.stream_id))
        self.new_streams.put_nowait(stream)

    async def go_away(self) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            await self.send(GoAway(self.last_stream_id))
