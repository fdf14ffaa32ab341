"""The local cluster registry's login: htpasswd, docker config, and how clients find it."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import bcrypt
import httpx
import pytest

from olmtool.cluster.processes import start_time as _start_time
from olmtool.cluster.registryauth import (
    RegistryLogin,
    cluster_login,
    cluster_registry_credentials,
    docker_config,
    ensure_registry_auth,
    read_login,
    registry_addresses,
)
from olmtool.images.distribution import (
    Credentials,
    RegistryClient,
    RegistryError,
    default_credentials,
)
from olmtool.images.reference import parse_reference


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


def _registry_process(state: str) -> dict[str, object]:
    """cluster.json's record of the registry: this test's own process when "running";
    none after ``down`` ("stopped"); a pid whose start time differs when it "died"."""
    pid = os.getpid()
    started = _start_time(pid)
    assert started is not None
    if state == "running":
        return {"registry": {"pid": pid, "started": started}}
    if state == "died":  # a crash or reboot: the record stays, the process is gone
        return {"registry": {"pid": pid, "started": started + 1}}
    return {}


def _cluster(root: Path, name: str, registry: str | None, state: str = "running") -> RegistryLogin:
    folder = root / name
    folder.mkdir(parents=True)
    record = {"name": name, "registry": registry, "components": _registry_process(state)}
    (folder / "cluster.json").write_text(json.dumps(record))
    return ensure_registry_auth(folder, registry or "127.0.0.1:1").login


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
    auths = {"127.0.0.1:41234": {"auth": "dTpw"}, "127.0.0.1:5001": {"auth": "dTpw"}}
    user_config.write_text(json.dumps({"auths": auths}))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(user_config))
    # the running cluster's htpasswd holds only its own login: it wins for its address
    assert default_credentials("127.0.0.1:41234") == Credentials(b.username, b.password)
    found = default_credentials("127.0.0.1:5001")  # no cluster serves it: the user's
    assert found == Credentials("u", "p")
    assert (
        found is not None and found.source == f"login from {user_config} (auths['127.0.0.1:5001'])"
    )


def test_the_running_clusters_login_wins_over_a_stopped_one_on_the_same_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "a" stopped without --delete (its state keeps 127.0.0.1:5000), "c" died without
    # `down`; "olmtool", the new default cluster, runs its registry on the same port.
    # "a" and "c" sort first: the look-up must not take the first folder it reads.
    stopped = _cluster(tmp_path, "a", "127.0.0.1:5000", state="stopped")
    died = _cluster(tmp_path, "c", "127.0.0.1:5000", state="died")
    running = _cluster(tmp_path, "olmtool", "127.0.0.1:5000")
    assert len({stopped, died, running}) == 3  # each made a random login of its own
    found = cluster_login("127.0.0.1:5000", tmp_path)
    assert found is not None
    assert (found.cluster, found.login) == ("olmtool", running)
    assert found.docker_config == tmp_path / "olmtool" / "docker" / "config.json"
    assert cluster_registry_credentials("localhost:5000", tmp_path) == running

    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    # even a user's docker config holding the stopped cluster's login (its file, as
    # `cluster status` once suggested exporting) yields to the running cluster's
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "a" / "docker" / "config.json"))
    credentials = default_credentials("127.0.0.1:5000", "olmtool/etcd-operator")
    assert credentials == Credentials(running.username, running.password)
    assert credentials is not None
    assert credentials.source == (
        f"login of local cluster 'olmtool' from {tmp_path / 'olmtool' / 'docker' / 'config.json'}"
    )


def test_no_running_cluster_no_cluster_login(tmp_path: Path) -> None:
    _cluster(tmp_path, "a", "127.0.0.1:5000", state="stopped")
    _cluster(tmp_path, "c", "127.0.0.1:5000", state="died")
    assert cluster_login("127.0.0.1:5000", tmp_path) is None
    assert cluster_registry_credentials("127.0.0.1:5000", tmp_path) is None


def _unauthorized(request: httpx.Request) -> httpx.Response:
    body = {"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}
    headers = {"WWW-Authenticate": 'Basic realm="basic-realm"'}
    return httpx.Response(401, json=body, headers=headers)


def test_a_401_names_the_login_sent_and_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cluster(tmp_path, "a", "127.0.0.1:5000", state="stopped")
    running = _cluster(tmp_path, "olmtool", "127.0.0.1:5000")
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(tmp_path))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "no-such-config.json"))
    ref = parse_reference("127.0.0.1:5000/olmtool/etcd-operator:0.3.0")
    transport = httpx.MockTransport(_unauthorized)
    with RegistryClient(ref, "push", transport=transport) as client:
        assert client.credentials == Credentials(running.username, running.password)
        with pytest.raises(RegistryError) as caught:
            client.ping()
    config = tmp_path / "olmtool" / "docker" / "config.json"
    assert str(caught.value) == (
        f"push {ref} refused: 401 UNAUTHORIZED: authentication required (user 'olmtool', "
        f"login of local cluster 'olmtool' from {config})"
    )


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
