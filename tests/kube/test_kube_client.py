"""The list-then-watch loop: events in order, relist after 410 Gone, stop ends it."""

from __future__ import annotations

import json
import threading
from typing import Any

from olmtool.kube import Streams, watch_forever


class FakeResponse:
    def __init__(self, data: bytes = b"", lines: list[dict] | None = None, status: int = 200):
        self.data = data
        self.status = status
        self.reason = "OK"
        self.lines = lines or []
        self.closed = False

    def stream(self, amt: Any = None, decode_content: bool = False):
        for line in self.lines:
            yield (json.dumps(line) + "\n").encode()

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


def pod(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv}}


def test_list_watch_relist_and_stop() -> None:
    stop = threading.Event()
    calls: list[dict] = []
    watches = [
        # first watch: two events, then the server says the version is too old
        [
            {"type": "ADDED", "object": pod("b", "11")},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
            {"type": "ERROR", "object": {"code": 410, "reason": "Expired"}},
        ],
        # after the relist: one change, then the test stops the loop
        [{"type": "DELETED", "object": pod("a", "21")}],
    ]
    lists = [[pod("a", "9")], [pod("a", "20")]]
    events: list[tuple[str, str]] = []
    syncs: list[list[str]] = []

    def list_func(**kwargs: Any) -> FakeResponse:
        calls.append(kwargs)
        if kwargs.get("watch"):
            lines = watches.pop(0)
            if not watches:
                stop.set()
            return FakeResponse(lines=lines)
        items = lists.pop(0)
        rv = items[0]["metadata"]["resourceVersion"]
        return FakeResponse(
            json.dumps({"metadata": {"resourceVersion": rv}, "items": items}).encode()
        )

    watch_forever(
        list_func,
        lambda kind, obj: events.append((kind, obj["metadata"]["name"])),
        lambda items: syncs.append([i["metadata"]["name"] for i in items]),
        stop,
        what="pods",
        streams=Streams(),
        field_selector="spec.nodeName=n",
    )
    assert syncs == [["a"], ["a"]]
    assert events == [("ADDED", "b")]  # the DELETED came after stop was set
    watch_calls = [c for c in calls if c.get("watch")]
    assert [c["resource_version"] for c in watch_calls] == ["9", "20"]
    assert all(c["field_selector"] == "spec.nodeName=n" for c in calls)


def test_streams_close_open_responses() -> None:
    streams = Streams()
    response = FakeResponse()
    streams.add(response)
    streams.close()
    assert response.closed
