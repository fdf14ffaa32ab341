"""SPDY/3.1 as kubectl exec speaks it: frames, header compression, the server session."""

from __future__ import annotations

import asyncio
import socket
import struct
import zlib

import pytest

from olmtool.cluster.node import spdy
from olmtool.cluster.node.spdy import (
    Data,
    FrameCodec,
    GoAway,
    HeadersFrame,
    Ignored,
    Ping,
    RstStream,
    Session,
    SpdyError,
    SynReply,
    SynStream,
)


def test_dictionary_is_the_spdy3_one() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options")
    assert spdy.DICTIONARY.endswith(b"enq=0.")


def test_frames_round_trip_with_stateful_header_compression() -> None:
    sender, receiver = FrameCodec(), FrameCodec()
    frames = [
        SynStream(1, {"streamtype": ["error"]}),
        SynStream(3, {"streamtype": ["stdin"], "x-multi": ["a", "b"]}, priority=2),
        SynReply(3, {"streamtype": ["stdin"]}),  # repeated headers compress against history
        HeadersFrame(5, {"a": ["b"]}, fin=True),
        Data(3, b"hello", fin=True),
        Data(1, b""),
        RstStream(7, spdy.RST_CANCEL),
        Ping(2),
        GoAway(5),
    ]
    for frame in frames:
        assert receiver.decode_one(sender.encode(frame)) == frame


def test_header_block_and_wire_layout() -> None:
    block = spdy.encode_header_block({"StreamType": ["stdout"]})
    assert block == b"\x00\x00\x00\x01\x00\x00\x00\x0astreamtype\x00\x00\x00\x06stdout"
    assert spdy.decode_header_block(block) == {"streamtype": ["stdout"]}
    wire = FrameCodec().encode(SynReply(1))
    assert wire[:4] == b"\x80\x03\x00\x02"  # control bit, version 3, type SYN_REPLY
    # the header block is deflate with the SPDY dictionary (zlib header names it)
    payload = wire[12:]
    decompressor = zlib.decompressobj(zdict=spdy.DICTIONARY)
    assert spdy.decode_header_block(decompressor.decompress(payload)) == {}
    assert Data(9, b"x").stream_id == struct.unpack(">I", FrameCodec().encode(Data(9, b"x"))[:4])[0]


def test_unknown_control_frames_are_ignored_and_garbage_refused() -> None:
    codec = FrameCodec()
    settings = struct.pack(">HHI", 0x8003, spdy.SETTINGS, 4) + b"\x00\x00\x00\x00"
    assert codec.decode_one(settings) == Ignored(spdy.SETTINGS)
    with pytest.raises(SpdyError, match="version"):
        codec.decode_one(struct.pack(">HHI", 0x8002, spdy.PING, 4) + b"\x00\x00\x00\x01")
    with pytest.raises(SpdyError, match="decompression"):
        codec.decode(struct.pack(">HHI", 0x8003, spdy.SYN_REPLY, 8), b"\x00\x00\x00\x01junk")


async def _read_frame(reader: asyncio.StreamReader, codec: FrameCodec) -> spdy.Frame:
    head = await reader.readexactly(8)
    length = struct.unpack_from(">I", head, 4)[0] & 0xFFFFFF
    return codec.decode(head, await reader.readexactly(length))


def test_session_replies_to_streams_feeds_data_and_answers_pings() -> None:
    async def scenario() -> None:
        ours, theirs = socket.socketpair()
        server_reader, server_writer = await asyncio.open_connection(sock=ours)
        client_reader, client_writer = await asyncio.open_connection(sock=theirs)
        client = FrameCodec()
        first = client.encode(SynStream(1, {"streamtype": ["error"]}))
        # bytes read past the HTTP request are handed over as ``initial``
        session = Session(server_reader, server_writer, initial=first)
        serving = asyncio.create_task(session.serve())
        client_writer.write(client.encode(SynStream(3, {"streamtype": ["stdin"]})))
        client_writer.write(client.encode(Data(3, b"typed", fin=True)))
        client_writer.write(client.encode(Ping(1)))
        await client_writer.drain()

        assert await _read_frame(client_reader, client) == SynReply(1, {})
        assert await _read_frame(client_reader, client) == SynReply(3, {})
        assert await _read_frame(client_reader, client) == Ping(1)
        error = await session.new_streams.get()
        stdin = await session.new_streams.get()
        assert (error.header("streamtype"), stdin.header("streamtype")) == ("error", "stdin")
        assert await stdin.reader.read() == b"typed"

        await error.write(b"x" * (spdy.MAX_DATA + 1))  # split in frames
        await error.close()
        assert await _read_frame(client_reader, client) == Data(1, b"x" * spdy.MAX_DATA)
        assert await _read_frame(client_reader, client) == Data(1, b"x")
        assert await _read_frame(client_reader, client) == Data(1, b"", fin=True)

        # a stream id that goes backwards is refused
        client_writer.write(client.encode(SynStream(1, {})))
        await client_writer.drain()
        assert await _read_frame(client_reader, client) == RstStream(1, spdy.RST_PROTOCOL_ERROR)

        await session.go_away()
        assert await _read_frame(client_reader, client) == GoAway(3)
        client_writer.close()
        await asyncio.wait_for(serving, 5)
        assert session.closed.is_set()
        server_writer.close()

    asyncio.run(scenario())
