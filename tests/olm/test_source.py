"""A CatalogSource read over gRPC gives the catalog the files hold, from olmtool's
server and (when the reference binaries exist) from real ``opm serve``."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.catalog import declcfg as dc
from olmtool.catalog import load_catalog_strict
from olmtool.olm.source import READY, TRANSIENT_FAILURE, fetch_config, fetch_manifests, probe
from olmtool.ports import free_port
from olmtool.serve import start_server

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "catalog"
OPM = Path(os.environ.get("OPM") or REPO.parent / "shared" / "peers" / "opm")


def _summary(config: dc.DeclarativeConfig) -> dict[str, object]:
    """What resolution needs: default channels, channel entries, bundle versions, images."""
    return {
        "packages": {p.name: p.default_channel for p in config.packages},
        "channels": {
            (c.package, c.name): sorted(
                (e.name, e.replaces, tuple(sorted(e.skips)), e.skip_range) for e in c.entries
            )
            for c in config.channels
        },
        "versions": {b.name: b.version for b in config.bundles},
        "images": {b.name: b.image for b in config.bundles},
    }


def _kinds_from_files(config: dc.DeclarativeConfig, name: str) -> list[str]:
    (bundle,) = [b for b in config.bundles if b.name == name]
    objects = [
        json.loads(base64.b64decode(p.value["data"]))
        for p in bundle.properties_of(dc.PROP_BUNDLE_OBJECT)
    ]
    objects.sort(key=lambda m: m.get("kind") != "ClusterServiceVersion")
    return [o["kind"] for o in objects]


def _check_manifests(address: str) -> None:
    files = load_catalog_strict(CATALOG)
    for entry in next(c for c in files.channels if c.name == "stable").entries:
        manifests = fetch_manifests(address, "etcd-operator", "stable", entry.name)
        assert manifests[0]["kind"] == "ClusterServiceVersion"
        assert manifests[0]["metadata"]["name"] == entry.name
        assert sorted(m["kind"] for m in manifests) == sorted(_kinds_from_files(files, entry.name))


def test_olmtool_server_serves_what_the_files_hold() -> None:
    with start_server(CATALOG, http_port=None) as server:
        assert probe(server.grpc_address).last_observed_state == READY
        fetched = fetch_config(server.grpc_address)
        _check_manifests(server.grpc_address)
    assert _summary(fetched) == _summary(load_catalog_strict(CATALOG))


def test_an_address_nobody_serves_is_a_transient_failure() -> None:
    assert probe(f"127.0.0.1:{free_port()}", timeout=0.5).last_observed_state == TRANSIENT_FAILURE


@contextlib.contextmanager
def _opm_serve(root: Path, cache: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [str(OPM), "serve", str(root), "--cache-dir", str(cache), "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.skipif(
    not OPM.is_file(), reason=f"no opm at {OPM} (the reference binaries are not on this machine)"
)
def test_real_opm_serve_reads_the_same(tmp_path: Path) -> None:
    with _opm_serve(CATALOG, tmp_path / "cache") as address:
        time.sleep(0.5)
        fetched = fetch_config(address)
        _check_manifests(address)
    assert _summary(fetched) == _summary(load_catalog_strict(CATALOG))


def test_the_default_channel_is_read_with_get_package() -> None:
    """What ``install`` and the upgrade run name in the Subscription when no channel is
    given: OLM v0 offers no upgrade to a Subscription without one."""
    from olmtool.actions.install import _channel
    from olmtool.olm.source import CatalogSourceUnavailable, default_channel

    with start_server(CATALOG, http_port=None) as server:
        assert default_channel(server.grpc_address, "etcd-operator") == "stable"
        assert _channel(server.grpc_address, "etcd-operator", "") == "stable"
        assert _channel(server.grpc_address, "etcd-operator", "beta") == "beta"
        with pytest.raises(CatalogSourceUnavailable):
            default_channel(server.grpc_address, "no-such-package")
    assert _channel(None, "etcd-operator", "") == ""  # an image catalog: not read
    with pytest.raises(CatalogSourceUnavailable):
        default_channel(f"127.0.0.1:{free_port()}", "etcd-operator", timeout=0.5)
