"""The list-then-watch loop: events in order, relist after 410 Gone, stop ends it."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from olmtool.cluster.node.kube import PodApi, Streams, watch_forever


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


class FakeKube:
    """Answers requests from a table of ``(method, path)`` -> answer (or ApiException)."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str, Any]] = []

    def _answer(self, method: str, path: str, body: Any = None) -> dict:
        self.sent.append((method, path, body))
        answer = self.answers.get((method, path), ApiException(status=404))
        if isinstance(answer, Exception):
            raise answer
        return answer

    def get_or_none(self, path: str) -> dict | None:
        try:
            return self._answer("GET", path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, path: str, body: dict) -> dict:
        return self._answer("POST", path, body)

    def patch(self, path: str, body: Any, content_type: str = "") -> dict:
        return self._answer("PATCH", path, body)

    def delete(self, path: str, body: dict | None = None) -> dict:
        return self._answer("DELETE", path, body)


def pod_api(answers: dict[tuple[str, str], Any]) -> tuple[PodApi, FakeKube]:
    kube = FakeKube(answers)
    return PodApi(kube), kube  # type: ignore[arg-type]


def test_pod_api_look_ups() -> None:
    cm = {"data": {"k": "v"}}
    api, _ = pod_api({("GET", "/api/v1/namespaces/ns/configmaps/cm"): cm})
    assert api.configmap("ns", "cm") == cm
    assert api.secret("ns", "cm") is None
    assert api.claim("ns", "data") is None
    assert api.persistent_volume("pv") is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"automountServiceAccountToken": False}, False),
        ({}, True),
        (ApiException(status=404), True),
        (ApiException(status=500), True),  # unreadable: the admission default
    ],
)
def test_automount_token(answer: Any, expected: bool) -> None:
    api, _ = pod_api({("GET", "/api/v1/namespaces/ns/serviceaccounts/sa"): answer})
    assert api.automount_token("ns", "sa") is expected


def test_request_token_binds_the_pod() -> None:
    path = "/api/v1/namespaces/ns/serviceaccounts/sa/token"
    api, kube = pod_api({("POST", path): {"status": {"token": "abc"}}})
    pod = {"metadata": {"name": "p", "uid": "u1"}}
    token, lifetime = api.request_token("ns", "sa", {"audience": "vault"}, pod)
    assert (token, lifetime) == ("abc", 3600.0)
    spec = kube.sent[0][2]["spec"]
    assert spec["boundObjectRef"]["uid"] == "u1"
    assert spec["audiences"] == ["vault"]


def test_patch_status_says_when_the_pod_is_gone() -> None:
    path = "/api/v1/namespaces/ns/pods/p/status"
    api, _ = pod_api({("PATCH", path): {}})
    assert api.patch_status("ns", "p", {"phase": "Running"}) is True
    gone, _ = pod_api({})
    assert gone.patch_status("ns", "p", {}) is False
    failing, _ = pod_api({("PATCH", path): ApiException(status=500)})
    with pytest.raises(ApiException):
        failing.patch_status("ns", "p", {})


@pytest.mark.parametrize("code", [404, 409])
def test_delete_pod_leaves_a_gone_or_replaced_pod_alone(code: int) -> None:
    path = "/api/v1/namespaces/ns/pods/p"
    api, kube = pod_api({("DELETE", path): ApiException(status=code)})
    api.delete_pod("ns", "p", "u1")
    body = kube.sent[0][2]
    assert body["gracePeriodSeconds"] == 0 and body["preconditions"] == {"uid": "u1"}
