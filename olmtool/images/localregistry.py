"""A registry on loopback for tests and local clusters: Debian's ``docker-registry``.

>>> with start_registry(Path("/tmp/registry")) as registry:
...     push(image, f"{registry.address}/etcd/bundle:0.1.0")

It is distribution 2.8 (the registry behind Docker Hub), so what works against it works
against real registries. Its htpasswd file must hold bcrypt hashes; Basic auth is
accepted over plain HTTP as well as TLS.
"""

from __future__ import annotations

import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from olmtool import yamlwrite
from olmtool.errors import OlmtoolError, PortTaken
from olmtool.ports import LOOPBACK, free_port

BINARY = "docker-registry"
DEBIAN_BINARY = Path("/usr/bin/docker-registry")
INSTALL_HINT = "apt-get install docker-registry"
_PORT_ATTEMPTS = 3


class LocalRegistryError(OlmtoolError):
    """The local registry is not installed, or did not start."""


@dataclass
class LocalRegistry:
    """A running ``docker-registry``; push to ``f"{address}/repo:tag"``."""

    state_dir: Path
    address: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL if it outlives ``grace`` seconds."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> LocalRegistry:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def find_registry_binary() -> Path | None:
    found = shutil.which(BINARY)
    if found:
        return Path(found)
    return DEBIAN_BINARY if DEBIAN_BINARY.is_file() else None


def start_registry(
    state_dir: Path,
    *,
    port: int = 0,
    htpasswd: Path | None = None,
    tls: tuple[Path, Path] | None = None,
    timeout: float = 15.0,
) -> LocalRegistry:
    """Start ``docker-registry`` on 127.0.0.1 storing under ``state_dir``; wait until it serves.

    ``port`` 0 picks a free one (retrying if another process grabs it first);
    ``htpasswd`` turns on Basic auth; ``tls`` is ``(certificate, key)``.
    """
    binary = find_registry_binary()
    if binary is None:
        raise LocalRegistryError(f"{BINARY} is not installed; install it: {INSTALL_HINT}")
    for path in (htpasswd, *(tls or ())):
        if path is not None and not path.is_file():
            raise LocalRegistryError(f"no such file: {path}")
    state_dir.mkdir(parents=True, exist_ok=True)
    attempts = 1 if port else _PORT_ATTEMPTS
    for attempt in range(1, attempts + 1):
        try:
            return _launch(binary, state_dir, port or free_port(), htpasswd, tls, timeout)
        except PortTaken:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def registry_config(
    state_dir: Path, port: int, htpasswd: Path | None, tls: tuple[Path, Path] | None
) -> dict[str, object]:
    """The registry's config.yml: quiet logs, deletes allowed, storage in ``state_dir``."""
    http: dict[str, object] = {"addr": f"{LOOPBACK}:{port}", "secret": secrets.token_hex(16)}
    if tls is not None:
        certificate, key = tls
        http["tls"] = {"certificate": str(certificate.resolve()), "key": str(key.resolve())}
    config: dict[str, object] = {
        "version": "0.1",
        "log": {"level": "warn", "formatter": "text", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(state_dir.resolve() / "data")},
            "delete": {"enabled": True},
        },
        "http": http,
    }
    if htpasswd is not None:
        config["auth"] = {"htpasswd": {"realm": "olmtool", "path": str(htpasswd.resolve())}}
    return config


def _launch(
    binary: Path,
    state_dir: Path,
    port: int,
    htpasswd: Path | None,
    tls: tuple[Path, Path] | None,
    timeout: float,
) -> LocalRegistry:
    config = state_dir / "config.yml"
    config.write_text(yamlwrite.dump(registry_config(state_dir, port, htpasswd, tls)))
    config.chmod(0o600)  # it holds the upload-state secret
    log = state_dir / "registry.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(binary), "serve", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal does not reach it first
        )
    address = f"{LOOPBACK}:{port}"
    registry = LocalRegistry(
        state_dir, address, f"{'https' if tls else 'http'}://{address}", process, log
    )
    try:
        _wait_ready(registry, timeout)
    except BaseException:
        registry.stop()
        raise
    return registry


def _wait_ready(registry: LocalRegistry, timeout: float) -> None:
    """Poll ``/v2/`` until it answers 200 or 401 (auth on); fail fast if the process dies."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    with httpx.Client(verify=False, timeout=2.0) as client:  # loopback liveness only
        while time.monotonic() < deadline:
            if registry.process.poll() is not None:
                tail = _log_tail(registry.log)
                message = (
                    f"{BINARY} exited with code {registry.process.returncode}: {tail}"
                    f" (log: {registry.log})"
                )
                if "address already in use" in tail:
                    raise PortTaken(message, port=int(registry.address.rpartition(":")[2]))
                raise LocalRegistryError(message)
            try:
                if client.get(f"{registry.url}/v2/").status_code in (200, 401):
                    return
            except httpx.TransportError as exc:
                last = str(exc) or type(exc).__name__
            time.sleep(0.05)
    raise LocalRegistryError(
        f"{BINARY} not serving {registry.url} after {timeout:.0f}s ({last}); see {registry.log}"
    )


def _log_tail(log: Path, lines: int = 2) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "no log"
    tail = [line.strip()[:300] for line in text.splitlines() if line.strip()][-lines:]
    return " / ".join(tail) or "empty log"
