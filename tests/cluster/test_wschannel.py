"""Kubernetes' WebSocket channel protocols (v1, v4, v5, base64) over wsproto."""

from __future__ import annotations

import asyncio
import socket

from wsproto.connection import Connection, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, TextMessage

from olmtool.cluster.node import wschannel
from olmtool.cluster.node.wschannel import (
    V1,
    V4,
    V4_BASE64,
    V5,
    ChannelSession,
    choose_protocol,
    decode_message,
    encode_message,
)


def test_protocol_choice_follows_the_client_order() -> None:
    assert choose_protocol(["v5.channel.k8s.io,v4.channel.k8s.io"]) == V5
    assert choose_protocol(["v4.channel.k8s.io", "v5.channel.k8s.io"]) == V4
    assert choose_protocol(["x.k8s.io, base64.channel.k8s.io"]) == "base64.channel.k8s.io"
    assert choose_protocol([]) == ""
    assert choose_protocol(["v9.channel.k8s.io"]) is None
    assert wschannel.reports_json_status(V4) and not wschannel.reports_json_status(V1)


def test_channel_framing() -> None:
    assert encode_message(V4, wschannel.STDOUT, b"hi") == b"\x01hi"
    assert encode_message(V4_BASE64, wschannel.STDERR, b"hi") == "2aGk="
    assert decode_message(V4, b"\x00abc") == (0, b"abc")
    assert decode_message(V5, "\x00abc") == (0, b"abc")  # text frames of the Python client
    assert decode_message(V4_BASE64, "0aGk=") == (0, b"hi")
    assert decode_message(V4_BASE64, "zz") is None
    assert decode_message(V4, b"") is None


def test_session_feeds_stdin_until_the_v5_close_and_sends_channels() -> None:
    async def scenario() -> None:
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=ours)
        client = Connection(ConnectionType.CLIENT)
        session = ChannelSession(reader, writer, V5)
        serving = asyncio.create_task(session.serve())
        raw_client = theirs
        raw_client.sendall(
            client.send(BytesMessage(data=b"\x00typed"))
            + client.send(BytesMessage(data=b'\x04{"Width":80,"Height":24}'))
            + client.send(BytesMessage(data=bytes([wschannel.CLOSE, wschannel.STDIN])))
        )
        raw_client.setblocking(False)  # read through the loop below
        assert await asyncio.wait_for(session.stdin.read(), 5) == b"typed"
        assert await session.resize.read(100) == b'{"Width":80,"Height":24}'

        await session.write_stdout(b"out")
        await session.send(wschannel.ERROR, b"{}")
        closing = asyncio.create_task(session.close())
        received: list[object] = []
        loop = asyncio.get_running_loop()
        while not any(isinstance(e, CloseConnection) for e in received):
            data = await asyncio.wait_for(loop.sock_recv(raw_client, 65536), 5)
            client.receive_data(data)
            received.extend(client.events())
        messages = [e.data for e in received if isinstance(e, BytesMessage | TextMessage)]
        assert messages == [b"\x01out", b"\x03{}"]
        close = next(e for e in received if isinstance(e, CloseConnection))
        await loop.sock_sendall(raw_client, client.send(close.response()))
        await asyncio.wait_for(closing, 5)
        await asyncio.wait_for(serving, 5)
        writer.close()
        raw_client.close()

    asyncio.run(scenario())
