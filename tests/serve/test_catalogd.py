"""catalogd's HTTP API: /api/v1/all and /api/v1/metas over the fixture catalog."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from olmtool.serve import RunningServer

from .conftest import ETCD, PROMETHEUS_BLOBS

IDENTITY = {"Accept-Encoding": "identity"}


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    assert server.catalog_url == f"{server.http_url}/catalogs/operatorhub"
    with httpx.Client(base_url=server.catalog_url, timeout=10) as opened:
        yield opened


def lines(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines()]


def test_all_is_every_blob_compact_in_file_order(client: httpx.Client) -> None:
    response = client.get("/api/v1/all", headers=IDENTITY)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/jsonl"
    assert "content-encoding" not in response.headers
    assert int(response.headers["content-length"]) == len(response.content)
    assert lines(response) == ETCD + PROMETHEUS_BLOBS  # etcd/ sorts before prometheus/
    first = response.text.splitlines()[0]
    assert first.startswith('{"schema":"olm.package","name":"etcd","defaultChannel"')


def test_head_sends_headers_only(client: httpx.Client) -> None:
    got = client.get("/api/v1/all", headers=IDENTITY)
    head = client.head("/api/v1/all", headers=IDENTITY)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"]
    assert head.headers["last-modified"] == got.headers["last-modified"]


def test_gzip_when_accepted_and_large(server: RunningServer, client: httpx.Client) -> None:
    response = client.get("/api/v1/all", headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["vary"] == "Accept-Encoding"
    assert lines(response) == ETCD + PROMETHEUS_BLOBS  # httpx decompressed it
    url = f"{server.catalog_url}/api/v1/all"
    with httpx.stream("GET", url, headers={"Accept-Encoding": "gzip"}) as streamed:
        compressed = b"".join(streamed.iter_raw())
    assert len(compressed) < len(response.content)
    assert gzip.decompress(compressed) == response.content


def test_small_bodies_are_not_gzipped(client: httpx.Client) -> None:
    response = client.get("/api/v1/metas", params={"schema": "example.com.note"})
    assert "content-encoding" not in response.headers
    assert lines(response) == [ETCD[6]]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"schema": "olm.channel"}, [ETCD[1], ETCD[2], PROMETHEUS_BLOBS[1]]),
        ({"schema": "olm.channel", "package": "etcd"}, [ETCD[1], ETCD[2]]),
        ({"schema": "olm.package", "name": "prometheus"}, [PROMETHEUS_BLOBS[0]]),
        ({"package": "prometheus", "name": "beta"}, [PROMETHEUS_BLOBS[1]]),
        ({"schema": "olm.bundle", "name": "nothing"}, []),
        ({"schema": "", "package": ""}, ETCD + PROMETHEUS_BLOBS),  # empty matches anything
        ({}, ETCD + PROMETHEUS_BLOBS),
    ],
)
def test_metas_filters_in_file_order(
    client: httpx.Client, params: dict[str, str], expected: list[dict[str, Any]]
) -> None:
    response = client.get("/api/v1/metas", params=params)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/jsonl"
    assert lines(response) == expected


def test_metas_rejects_other_parameters(client: httpx.Client) -> None:
    response = client.get("/api/v1/metas", params={"schema": "olm.bundle", "channel": "stable"})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "path", ["/catalogs/other/api/v1/all", "/catalogs/operatorhub/api/v2/all", "/", "/catalogs"]
)
def test_unknown_catalogs_and_paths_are_404(server: RunningServer, path: str) -> None:
    assert httpx.get(f"{server.http_url}{path}").status_code == 404


def test_if_modified_since(client: httpx.Client) -> None:
    modified = client.get("/api/v1/all", headers=IDENTITY).headers["last-modified"]
    again = client.get("/api/v1/all", headers={"If-Modified-Since": modified})
    assert again.status_code == 304 and again.content == b""
    metas = client.get("/api/v1/metas?schema=olm.package", headers={"If-Modified-Since": modified})
    assert metas.status_code == 304
    stale = client.get(
        "/api/v1/all", headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}
    )
    assert stale.status_code == 200


def test_http_requests_are_logged(server: RunningServer, client: httpx.Client) -> None:
    client.get("/api/v1/metas", params={"bogus": "1"})
    lines: list[str] = server.log_lines  # type: ignore[attr-defined]
    assert any(
        line.startswith("http GET /catalogs/operatorhub/api/v1/metas?bogus=1 400 ")
        for line in lines
    )
