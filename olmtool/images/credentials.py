"""Registry logins: given, from a credential source (a running local cluster's, for
its loopback registry), or from the docker/podman config file."""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmtool.errors import InputError
from olmtool.images.reference import DOCKER_HUB, is_loopback

_DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    # where they were found, for a 401's message ("" = given as the auth argument)
    source: str = field(default="", compare=False, repr=False)

    def describe(self) -> str:
        """``user 'u', login of local cluster 'x' from /path/config.json``."""
        return f"user {self.username!r}, {self.source or 'login given as the auth argument'}"


def docker_credentials(registry: str, repository: str = "") -> Credentials | None:
    """Credentials for ``registry`` from the docker/podman config file, if it has any.

    The file is ``$REGISTRY_AUTH_FILE``, else ``$DOCKER_CONFIG/config.json``, else
    ``~/.docker/config.json``; credential helpers are not consulted.
    """
    path = auth_file()
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read registry credentials: {exc}", path=path) from None
    auths = config.get("auths") if isinstance(config, dict) else None
    if not isinstance(auths, dict):
        return None
    for key in _auth_keys(registry, repository):
        entry = auths.get(key)
        if isinstance(entry, dict) and (credentials := _decode_auth(entry, key, path)):
            return credentials
    return None


# Where logins of loopback registries come from, asked before the docker config: a
# source takes the registry's address and gives its login (None: not one it serves). The
# local cluster adds its own (:mod:`olmtool.cluster.registryauth`); this client knows no
# cluster.
CredentialSource = Callable[[str], "Credentials | None"]
_loopback_sources: list[CredentialSource] = []


def add_credential_source(source: CredentialSource) -> None:
    """Ask ``source`` first for a loopback registry's login (once per source)."""
    if source not in _loopback_sources:
        _loopback_sources.append(source)


def default_credentials(registry: str, repository: str = "") -> Credentials | None:
    """For a loopback registry, the login a credential source gives (a running local
    cluster's: its htpasswd holds no other, so a login the docker config keeps for the
    address cannot work there). Else the docker/podman config's credentials for
    ``registry``."""
    if is_loopback(registry):
        for source in _loopback_sources:
            if (found := source(registry)) is not None:
                return found
    return docker_credentials(registry, repository)


def auth_file() -> Path:
    if explicit := os.environ.get("REGISTRY_AUTH_FILE"):
        return Path(explicit)
    if config_dir := os.environ.get("DOCKER_CONFIG"):
        return Path(config_dir) / "config.json"
    return Path.home() / ".docker" / "config.json"


def _auth_keys(registry: str, repository: str) -> Iterator[str]:
    """Config keys that may hold ``registry``'s credentials, most specific first."""
    parts = repository.split("/") if repository else []
    for end in range(len(parts), 0, -1):
        yield f"{registry}/{'/'.join(parts[:end])}"
    yield registry
    for prefix in ("https://", "http://"):
        yield f"{prefix}{registry}"
        yield f"{prefix}{registry}/v1/"
        yield f"{prefix}{registry}/v2/"
    if registry == DOCKER_HUB:
        yield from _DOCKER_HUB_KEYS


def _decode_auth(entry: Mapping[str, Any], key: str, path: Path) -> Credentials | None:
    source = f"login from {path} (auths[{key!r}])"
    if entry.get("username") and entry.get("password"):
        return Credentials(str(entry["username"]), str(entry["password"]), source)
    encoded = entry.get("auth")
    if not encoded:
        return None
    try:
        username, colon, password = base64.b64decode(encoded).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError, TypeError):
        colon = ""
    if not colon:
        raise InputError(f"auths[{key!r}].auth is not base64 of user:password", path=path)
    return Credentials(username, password, source)
