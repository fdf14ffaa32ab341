"""Credentials of a local cluster's image registry.

Every cluster's registry requires a user and password (htpasswd, bcrypt): anonymous
pulls, pushes and deletes are refused. The password is random, made at the first
``cluster up`` and kept in the cluster's state directory (files 0600, directories 0700):

* ``<state>/registry/htpasswd`` -- what ``docker-registry`` checks;
* ``<state>/docker/config.json`` -- a docker config (``auths``) for the registry's
  address, as ``127.0.0.1:PORT`` and ``localhost:PORT``: point ``DOCKER_CONFIG`` at its
  folder, or ``REGISTRY_AUTH_FILE`` (podman, skopeo) at the file. ``cluster status``
  shows its path.

olmtool finds them on its own: :func:`registry_credentials` is the registry client's
credential source for a loopback registry (:func:`olmtool.images.add_credential_source`,
added when this module is imported, as the CLI does at start), so ``--push`` to the
local cluster's registry, the node's pulls (containerd's CRI config) and the OLM engine's
all authenticate without set-up. The login is that of the *running* cluster whose registry has the port:
a stopped cluster's state keeps its recorded registry address (``down`` without
``--delete``), and a new cluster may take the same port (5000 by default) with a login
of its own.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from olmtool.cluster.defaults import STATE_FILE, clusters_root
from olmtool.errors import OlmtoolError
from olmtool.images import Credentials, add_credential_source

USERNAME = "olmtool"
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
# roots of clusters this process started elsewhere than clusters_root() (`up(root=...)`)
_started_roots: list[Path] = []


def remember_root(root: Path) -> None:
    """Make :func:`cluster_login` look under ``root`` too, for the rest of
    this process (a cluster started with ``up(root=...)`` and then pushed to)."""
    if root not in _started_roots:
        _started_roots.append(root)


@dataclass(frozen=True)
class RegistryLogin:
    username: str
    password: str


@dataclass(frozen=True)
class RegistryAuth:
    """The files of a cluster's registry credentials, and the credentials."""

    htpasswd: Path
    docker_config: Path
    login: RegistryLogin


def docker_config_path(state_dir: Path) -> Path:
    return Path(state_dir) / "docker" / "config.json"


def htpasswd_path(state_dir: Path) -> Path:
    return Path(state_dir) / "registry" / "htpasswd"


def docker_config(addresses: list[str], login: RegistryLogin) -> dict[str, object]:
    """A docker config whose ``auths`` hold ``login`` for each address."""
    token = base64.b64encode(f"{login.username}:{login.password}".encode()).decode()
    return {"auths": {address: {"auth": token} for address in addresses}}


def registry_addresses(address: str) -> list[str]:
    """``127.0.0.1:PORT`` and ``localhost:PORT``: the names a client may use for it."""
    host, _, port = address.rpartition(":")
    if host not in LOOPBACK_NAMES:
        return [address]
    return [f"{name}:{port}" for name in LOOPBACK_NAMES]


def read_login(config_file: Path) -> RegistryLogin | None:
    """The first login a docker config file holds (``auth`` or username/password)."""
    try:
        data = json.loads(config_file.read_text())
    except (OSError, ValueError):
        return None
    auths = data.get("auths") if isinstance(data, dict) else None
    for entry in auths.values() if isinstance(auths, dict) else ():
        if not isinstance(entry, dict):
            continue
        if entry.get("username") and entry.get("password"):
            return RegistryLogin(str(entry["username"]), str(entry["password"]))
        try:
            user, colon, password = base64.b64decode(str(entry.get("auth"))).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if colon and user and password:
            return RegistryLogin(user, password)
    return None


def bcrypt_hash(password: str) -> str:
    try:
        import bcrypt
    except ImportError:  # a dependency of olmtool; missing only in a broken install
        raise OlmtoolError(
            "the registry's htpasswd needs bcrypt hashes: pip install bcrypt"
        ) from None
    # The registry checks the hash on every request. The password is 192 random bits:
    # bcrypt's work factor protects guessable passwords, not this one, so the lowest
    # cost keeps each request fast (cost 12 adds ~0.25 s to every blob of a push).
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def _htpasswd_matches(path: Path, login: RegistryLogin) -> bool:
    try:
        user, _, hashed = path.read_text().strip().partition(":")
        import bcrypt

        return user == login.username and bcrypt.checkpw(login.password.encode(), hashed.encode())
    except (OSError, ValueError, ImportError):
        return False


def ensure_registry_auth(state_dir: Path, address: str) -> RegistryAuth:
    """The cluster's registry login (made now at the first start), its htpasswd and its
    docker config for ``address`` (``host:port``), all written 0600 in 0700 folders."""
    from olmtool.cluster import pki  # cryptography: not needed by the look-up

    config = docker_config_path(state_dir)
    htpasswd = htpasswd_path(state_dir)
    pki.private_dir(config.parent)
    pki.private_dir(htpasswd.parent)
    login = read_login(config)
    if login is None or not _htpasswd_matches(htpasswd, login):
        login = RegistryLogin(USERNAME, secrets.token_urlsafe(24))
        pki.write_private(htpasswd, f"{login.username}:{bcrypt_hash(login.password)}\n".encode())
    content = json.dumps(docker_config(registry_addresses(address), login), indent=1) + "\n"
    pki.write_private(config, content.encode())
    return RegistryAuth(htpasswd, config, login)


@dataclass(frozen=True)
class ClusterLogin:
    """A running local cluster's registry login, and where it was read."""

    cluster: str  # the cluster's name (its state folder's)
    docker_config: Path
    login: RegistryLogin

    @property
    def source(self) -> str:
        """Where the login comes from, for messages (a 401 names it)."""
        return f"login of local cluster {self.cluster!r} from {self.docker_config}"


def cluster_login(registry: str, root: Path | None = None) -> ClusterLogin | None:
    """The login of the *running* local cluster (under ``root``, default
    :func:`clusters_root` and the roots this process started clusters in) whose registry
    is ``registry`` (``127.0.0.1:PORT`` or ``localhost:PORT``); None for any other
    address, or when no running cluster this user can read serves it. A cluster runs
    its registry when the process ``cluster.json`` records for it is alive (its pid
    with the same start time): a stopped cluster (``down`` clears its processes) or one
    whose registry died never lends its login to the cluster now on the port."""
    host, _, port = registry.rpartition(":")
    if host not in LOOPBACK_NAMES or not port.isdigit():
        return None
    folders: list[Path] = []
    for base in [root] if root else [clusters_root(), *_started_roots]:
        with contextlib.suppress(OSError):
            folders += sorted(base.iterdir())
    for folder in folders:
        try:
            state = json.loads((folder / STATE_FILE).read_text())
            recorded = state.get("registry")
            process = (state.get("components") or {}).get("registry")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(recorded, str) or recorded.rpartition(":")[2] != port:
            continue
        if not _alive(process):
            continue
        config = docker_config_path(folder)
        login = read_login(config)
        if login is not None:
            return ClusterLogin(folder.name, config, login)
    return None


def cluster_registry_credentials(registry: str, root: Path | None = None) -> RegistryLogin | None:
    """The login of :func:`cluster_login` (the running cluster serving ``registry``)."""
    found = cluster_login(registry, root)
    return found.login if found else None


def registry_credentials(registry: str) -> Credentials | None:
    """The registry client's credential source (:func:`olmtool.images.add_credential_source`)
    for local clusters' registries."""
    found = cluster_login(registry)
    if found is None:
        return None
    return Credentials(found.login.username, found.login.password, found.source)


add_credential_source(registry_credentials)  # wherever clusters are used, pushes log in


def _alive(process: object) -> bool:
    """Whether ``cluster.json``'s record of a process (``{"pid", "started"}``) names one
    that still runs: the pid exists, is no zombie and started when recorded (a recycled
    pid starts later), as :class:`olmtool.cluster.processes.Component` decides."""
    if not isinstance(process, dict):
        return False
    pid, started = process.get("pid"), process.get("started")
    if not isinstance(pid, int) or not isinstance(started, int) or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()
    try:
        return fields[0] != "Z" and int(fields[19]) == started
    except (IndexError, ValueError):
        return False
