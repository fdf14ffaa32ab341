"""The local cluster registry's login: htpasswd, docker config, and how clients find it."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import bcrypt
import pytest

from olmtool.cluster.registryauth import (
    RegistryLogin,
    cluster_registry_credentials,
    docker_config,
    ensure_registry_auth,
    read_login,
    registry_addresses,
)
from olmtool.images.distribution import Credentials, default_credentials


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_docker_config_names_every_address() -> None:
    login = RegistryLogin("olmtool", "s3cret")
    assert registry_addresses("127.0.0.1:5000") == ["127.0.0.1:5000", "localhost:5000"]
    assert registry_addresses("registry.example:443") == ["registry.example:443"]
    auth = base64.b64encode(b"olmtool:s3cret").decode()
    assert docker_config(registry_addresses("127.0.0.1:5000"), login) == {
        "auths": {"127.0.0.1:5000": {"auth": auth}, "localhost:5000": {"auth": auth}}
    }


def test_read_login(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    assert read_login(config) is None
    config.write_text(json.dumps({"auths": {"x": {"username": "u", "password": "p"}}}))
    assert read_login(config) == RegistryLogin("u", "p")
    config.write_text(json.dumps({"auths": {"x": {"auth": "not base64!"}, "y": "z"}}))
    assert read_login(config) is None


def test_a_random_login_is_made_once_and_kept(tmp_path: Path) -> None:
    auth = ensure_registry_auth(tmp_path, "127.0.0.1:5000")
    login = auth.login
    assert login.username == "olmtool" and len(login.password) >= 24
    user, _, hashed = auth.htpasswd.read_text().strip().partition(":")
    assert user == "olmtool" and hashed.startswith("$2")
    assert bcrypt.checkpw(login.password.encode(), hashed.encode())
    for path in (auth.htpasswd, auth.docker_config):
        assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert auth.docker_config == tmp_path / "docker" / "config.json"
    assert set(json.loads(auth.docker_config.read_text())["auths"]) == {
        "127.0.0.1:5000",
        "localhost:5000",
    }
    again = ensure_registry_auth(tmp_path, "127.0.0.1:5001")  # a restart on another port
    assert again.login == login
    assert set(json.loads(again.docker_config.read_text())["auths"]) == {
        "127.0.0.1:5001",
        "localhost:5001",
    }
    auth.htpasswd.write_text("olmtool:$2b$04$broken\n")  # no longer matches: a new login
    assert ensure_registry_auth(tmp_path, "127.0.0.1:5001").login != login


def _cluster(root: Path, name: str, registry: str | None) -> RegistryLogin:
    state = root / name
    state.mkdir(parents=True)
    (state / "cluster.json").write_text(json.dumps({"name": name, "registry": registry}))
    return ensure_registry_auth(state, registry or "127.0.0.1:1").login


def test_clients_find_the_login_of_the_cluster_whose_registry_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _cluster(tmp_path, "a", "127.0.0.1:5000")
    b = _cluster(tmp_path, "b", "127.0.0.1:41234")
    _cluster(tmp_path, "none", None)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "cluster.json").write_text("[")
    assert cluster_registry_credentials("127.0.0.1:5000", tmp_path) == a
    assert cluster_registry_credentials("localhost:41234", tmp_path) == b
    assert cluster_registry_credentials("127.0.0.1:5001", tmp_path) is None
    assert cluster_registry_credentials("quay.io", tmp_path) is None
    assert cluster_registry_credentials("example.com:5000", tmp_path) is None
    assert cluster_registry_credentials("127.0.0.1:5000", tmp_path / "missing") is None

    # the registry client's fallback, after the user's docker config
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "no-such-config.json"))
    assert default_credentials("127.0.0.1:41234", "op/bundle") == Credentials(
        b.username, b.password
    )
    assert default_credentials("quay.io", "op/bundle") is None
    user_config = tmp_path / "user.json"
    user_config.write_text(json.dumps({"auths": {"127.0.0.1:41234": {"auth": "dTpw"}}}))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(user_config))
    assert default_credentials("127.0.0.1:41234") == Credentials("u", "p")  # the user's wins


def test_clusters_this_process_started_elsewhere_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from olmtool.cluster import registryauth

    monkeypatch.setattr(registryauth, "_started_roots", [])
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path / "default-root"))
    login = _cluster(tmp_path / "bench", "c", "127.0.0.1:45678")
    assert cluster_registry_credentials("127.0.0.1:45678") is None
    registryauth.remember_root(tmp_path / "bench")  # what up(root=...) does
    assert cluster_registry_credentials("127.0.0.1:45678") == login
