"""Real opm v1.26 (``../shared/peers/opm``) for differential tests, and a registry it can
pull from without a container engine.

opm v1.26 renders bundle *images*, not bundle directories, so a bundle directory is built
into an image (:func:`olmtool.images.build_image`) and served by :class:`ImageServer`: a
read-only distribution API (manifests and blobs by digest or tag) on loopback, in a
thread. It is just enough for opm's containerd resolver (``--use-http``) and needs no
``docker-registry`` binary, so these tests stay unit tests. Tests using opm skip, with the
reason, where the peer is absent.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from olmtool.images import Image

REPO = Path(__file__).resolve().parents[2]
OPM = Path(os.environ.get("OPM") or REPO.parent / "shared" / "peers" / "opm")

requires_opm = pytest.mark.skipif(
    not OPM.is_file(), reason=f"no opm at {OPM} (the reference binaries are not on this machine)"
)

_PATH = re.compile(r"^/v2/(?P<name>.+)/(?P<kind>manifests|blobs)/(?P<ref>[^/]+)$")


class ImageServer:
    """Images by ``repository:tag``, served over plain HTTP on 127.0.0.1."""

    def __init__(self) -> None:
        self.manifests: dict[tuple[str, str], tuple[bytes, str]] = {}
        self.blobs: dict[str, bytes] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.address = f"127.0.0.1:{self._server.server_address[1]}"

    def add(self, repository: str, tag: str, image: Image) -> str:
        """Serve ``image``; returns the reference opm is given."""
        entry = (image.manifest, image.media_type)
        self.manifests[(repository, tag)] = entry
        self.manifests[(repository, image.digest)] = entry
        for blob in image.blobs():
            self.blobs[blob.digest] = blob.data
        return f"{self.address}/{repository}:{tag}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, *, body: bool) -> None:
                if self.path in ("/v2/", "/v2"):
                    return self._send(200, b"{}", "application/json", body=body)
                match = _PATH.match(self.path)
                found: tuple[bytes, str] | None = None
                if match and match["kind"] == "manifests":
                    found = server.manifests.get((match["name"], match["ref"]))
                elif match and match["ref"] in server.blobs:
                    found = (server.blobs[match["ref"]], "application/octet-stream")
                if found is None:
                    return self._send(404, b'{"errors":[{"code":"NOT_FOUND"}]}', "", body=body)
                self._send(200, found[0], found[1], body=body)

            def _send(self, status: int, data: bytes, media_type: str, *, body: bool) -> None:
                from olmtool.images import digest_of

                self.send_response(status)
                self.send_header("Content-Type", media_type or "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 200:
                    self.send_header("Docker-Content-Digest", digest_of(data))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        return Handler

    @contextmanager
    def running(self) -> Iterator[ImageServer]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()


def opm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run opm with a private HOME and TMPDIR so it reads no user config or cache."""
    home = Path(os.environ.get("TMPDIR", "/tmp"))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd or home), "TMPDIR": str(cwd or home)}
    return subprocess.run(
        [str(OPM), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
