"""Volumes as directories, bind mounts vs. path rewriting."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from olmtool.cluster.node.env import PodFacts
from olmtool.cluster.node.volumes import (
    Mount,
    VolumeContext,
    VolumeError,
    atomic_write,
    can_create,
    claim_directory,
    materialise,
    plan_mounts,
    pod_owner,
    rewrite,
    rewrite_table,
    service_account_files,
)

POD = {
    "metadata": {"name": "op-0", "namespace": "ops", "uid": "u1", "labels": {"app": "op"}},
    "spec": {"serviceAccountName": "op", "containers": [{"name": "main"}]},
}
CONFIGMAPS = {("ops", "conf"): {"data": {"a.yaml": "a: 1\n", "b.txt": "b"}}}
SECRETS = {("ops", "tls"): {"data": {"tls.key": base64.b64encode(b"KEY").decode()}}}


def context(tokens: list | None = None) -> VolumeContext:
    def token(namespace: str, account: str, source: dict) -> tuple[str, float]:
        if tokens is not None:
            tokens.append((namespace, account, source.get("audience")))
        return f"token-for-{account}", 3600.0

    return VolumeContext(
        facts=PodFacts(POD, pod_ip="127.1.0.5"),
        configmap=lambda ns, name: CONFIGMAPS.get((ns, name)),
        secret=lambda ns, name: SECRETS.get((ns, name)),
        claim_path=lambda ns, claim: Path("/nonexistent") / claim,
        token=token,
        ca_bytes=b"CA",
    )


def test_atomic_write_switches_whole_sets(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert atomic_write(target, {"a": (b"1", 0o644), "sub/b": (b"2", 0o600)})
    assert (target / "a").read_text() == "1" and (target / "sub/b").read_text() == "2"
    assert (target / "a").is_symlink() and os.readlink(target / "a") == "..data/a"
    assert not atomic_write(target, {"a": (b"1", 0o644), "sub/b": (b"2", 0o600)})
    first = os.readlink(target / "..data")
    assert atomic_write(target, {"a": (b"changed", 0o644)})
    assert (target / "a").read_text() == "changed"
    assert not (target / "sub").exists()  # dropped keys disappear
    assert not (target / first).exists()  # the old version is removed
    assert ((target / "a").stat().st_mode & 0o777) == 0o644


def test_configmap_and_secret_volumes(tmp_path: Path) -> None:
    ctx = context()
    whole = materialise({"name": "c", "configMap": {"name": "conf"}}, tmp_path, ctx)
    assert sorted(p.name for p in whole.path.iterdir() if not p.name.startswith("..")) == [
        "a.yaml",
        "b.txt",
    ]
    items = materialise(
        {
            "name": "i",
            "configMap": {
                "name": "conf",
                "items": [{"key": "a.yaml", "path": "cfg/app.yaml", "mode": 0o600}],
            },
        },
        tmp_path,
        ctx,
    )
    assert (items.path / "cfg/app.yaml").read_text() == "a: 1\n"
    assert ((items.path / "cfg/app.yaml").stat().st_mode & 0o777) == 0o600
    secret = materialise(
        {"name": "s", "secret": {"secretName": "tls", "defaultMode": 0o400}}, tmp_path, ctx
    )
    assert (secret.path / "tls.key").read_bytes() == b"KEY"
    assert ((secret.path / "tls.key").stat().st_mode & 0o777) == 0o400


def test_missing_sources(tmp_path: Path) -> None:
    ctx = context()
    with pytest.raises(VolumeError, match='configmap "nope" not found'):
        materialise({"name": "c", "configMap": {"name": "nope"}}, tmp_path, ctx)
    optional = materialise(
        {"name": "o", "configMap": {"name": "nope", "optional": True}}, tmp_path, ctx
    )
    assert optional.path.is_dir()
    with pytest.raises(VolumeError, match="unsupported volume type nfs"):
        materialise({"name": "n", "nfs": {"server": "x", "path": "/"}}, tmp_path, ctx)


def test_downward_api_and_projected_volumes(tmp_path: Path) -> None:
    tokens: list = []
    ctx = context(tokens)
    downward = materialise(
        {
            "name": "d",
            "downwardAPI": {
                "items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                ]
            },
        },
        tmp_path,
        ctx,
    )
    assert (downward.path / "labels").read_text() == 'app="op"'
    assert (downward.path / "name").read_text() == "op-0"
    projected = materialise(
        {
            "name": "p",
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "path": "token",
                            "audience": "vault",
                            "expirationSeconds": 600,
                        }
                    },
                    {"configMap": {"name": "conf", "items": [{"key": "b.txt", "path": "b"}]}},
                    {
                        "downwardAPI": {
                            "items": [
                                {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}
                            ]
                        }
                    },
                ]
            },
        },
        tmp_path,
        ctx,
    )
    assert (projected.path / "token").read_text() == "token-for-op"
    assert (projected.path / "b").read_text() == "b"
    assert (projected.path / "ns").read_text() == "ops"
    assert projected.refresh_at is not None  # tokens are renewed
    assert tokens == [("ops", "op", "vault")]


def test_service_account_files() -> None:
    files, lifetime = service_account_files(context())
    assert files["token"][0] == b"token-for-op"
    assert files["ca.crt"][0] == b"CA" and files["namespace"][0] == b"ops"
    assert lifetime == 3600.0


def test_empty_dir_and_host_path(tmp_path: Path) -> None:
    ctx = context()
    empty = materialise({"name": "e", "emptyDir": {}}, tmp_path, ctx)
    assert empty.path == tmp_path / "e" and empty.path.is_dir() and not empty.managed
    made = tmp_path / "host" / "made"
    host = materialise(
        {"name": "h", "hostPath": {"path": str(made), "type": "DirectoryOrCreate"}}, tmp_path, ctx
    )
    assert host.path == made and made.is_dir()
    with pytest.raises(VolumeError, match="is not a directory"):
        materialise(
            {"name": "x", "hostPath": {"path": str(tmp_path / "no"), "type": "Directory"}},
            tmp_path,
            ctx,
        )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/data", "/host/d"),
        ("/data/etcd", "/host/d/etcd"),
        ("--data-dir=/data/etcd", "--data-dir=/host/d/etcd"),
        ("/database", "/database"),
        ("/var/data", "/var/data"),
        ("a:/data:/config/x.yaml", "a:/host/d:/host/c/x.yaml"),
        ("/data.bak", "/data.bak"),
        ("file:///data", "file:///data"),  # not a path boundary we can tell apart safely
        ("/config/sub/deeper", "/host/sub-specific/deeper"),
    ],
)
def test_rewrite(value: str, expected: str) -> None:
    table = rewrite_table(
        [
            Mount(Path("/host/d"), "/data", bind=False),
            Mount(Path("/host/c"), "/config", bind=False),
            Mount(Path("/host/sub-specific"), "/config/sub", bind=False),
            Mount(Path("/host/bound"), "/tmp/bound", bind=True),
        ]
    )
    assert rewrite(value, table) == expected
    assert rewrite("/tmp/bound/x", table) == "/tmp/bound/x"  # bind mounts need no rewriting


def test_plan_mounts(tmp_path: Path) -> None:
    source = tmp_path / "vol"
    source.mkdir()
    creatable = (str(tmp_path / "scratch"),)
    existing = tmp_path / "exists"
    existing.mkdir()
    wanted = [
        ("/data", source, False, ""),  # cannot be created on the host: rewritten
        (str(tmp_path / "scratch/new/mnt"), source, True, ""),  # creatable: bound
        (str(tmp_path / "scratch/new/mnt/inner"), source, False, ""),  # inside a bound one
        (str(existing), source, False, ""),  # exists: bound
        (str(existing / "file.yaml"), source, False, "f.yaml"),  # subPath (a new dir here)
    ]
    mounts = {m.target: m for m in plan_mounts(wanted, isolated=True, creatable=creatable)}
    assert not mounts["/data"].bind
    assert mounts[str(tmp_path / "scratch/new/mnt")].bind
    assert (tmp_path / "scratch/new/mnt").is_dir()  # the host mount point was made
    assert mounts[str(tmp_path / "scratch/new/mnt")].read_only
    assert mounts[str(tmp_path / "scratch/new/mnt/inner")].bind
    assert mounts[str(existing)].bind
    assert mounts[str(existing / "file.yaml")].source == source / "f.yaml"
    # without mount namespaces everything is rewritten
    assert not any(m.bind for m in plan_mounts(wanted, isolated=False, creatable=creatable))


def test_file_sub_path_needs_a_file_mount_point(tmp_path: Path) -> None:
    source = tmp_path / "cm"
    source.mkdir()
    (source / "app.yaml").write_text("x")
    creatable = (str(tmp_path / "etc"),)
    [mount] = plan_mounts(
        [(str(tmp_path / "etc/app/app.yaml"), source, True, "app.yaml")],
        isolated=True,
        creatable=creatable,
    )
    assert mount.bind and mount.is_file and (tmp_path / "etc/app/app.yaml").is_file()


def test_can_create() -> None:
    assert can_create("/tmp/x") and can_create("/var/run/secrets/kubernetes.io/serviceaccount")
    assert not can_create("/data") and not can_create("/tmpfoo") and not can_create("/etc/x")


def test_claim_directory(tmp_path: Path) -> None:
    bound = {"status": {"phase": "Bound"}, "spec": {"volumeName": "pv"}}
    claims = {"data": bound, "pending": {"status": {"phase": "Pending"}}}
    made = tmp_path / "made"
    volumes = {
        "pv": {"spec": {"hostPath": {"path": str(made)}}},
    }
    path = claim_directory("ns", "data", lambda ns, n: claims.get(n), volumes.get)
    assert path == made and made.is_dir()  # DirectoryOrCreate by default
    for claim, problem in (("missing", "not found"), ("pending", "not bound yet")):
        with pytest.raises(VolumeError, match=problem):
            claim_directory("ns", claim, lambda ns, n: claims.get(n), volumes.get)
    volumes["pv"] = {"spec": {"nfs": {"server": "x"}}}
    with pytest.raises(VolumeError, match="only hostPath and local"):
        claim_directory("ns", "data", lambda ns, n: claims.get(n), volumes.get)
    volumes["pv"] = {"spec": {"local": {"path": str(tmp_path / "absent")}}}
    with pytest.raises(VolumeError, match="is not a directory"):
        claim_directory("ns", "data", lambda ns, n: claims.get(n), volumes.get)


def test_a_failed_token_request_is_a_volume_error(tmp_path: Path) -> None:
    def refuse(ns: str, account: str, source: dict) -> tuple[str, float]:
        raise RuntimeError("forbidden")

    ctx = context()
    ctx.token = refuse
    volume = {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}
    with pytest.raises(VolumeError, match="token for service account ops/op: forbidden"):
        materialise(volume, tmp_path, ctx)


def test_runtime_errors_are_internal_errors() -> None:
    from olmtool.cluster.node.env import ConfigError
    from olmtool.cluster.node.network import AddressesExhausted
    from olmtool.cluster.node.runtime import ImageError
    from olmtool.errors import InputError, InternalError

    for error in (ImageError, VolumeError, ConfigError, AddressesExhausted):
        assert issubclass(error, InternalError) and not issubclass(error, InputError)


# -- modes and owners of Secrets and tokens ------------------------------------------------


def _mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def test_tokens_and_secrets_are_readable_by_the_pod_only(tmp_path: Path) -> None:
    ctx = context()
    files, _ = service_account_files(ctx)
    assert files["token"][1] == 0o600
    assert files["ca.crt"][1] == files["namespace"][1] == 0o644
    # the apiserver fills in defaultMode 420 (0644): for a Secret that means 0600
    secret = materialise(
        {"name": "s", "secret": {"secretName": "tls", "defaultMode": 420}}, tmp_path, ctx
    )
    assert _mode(secret.path / "tls.key") == 0o600
    assert _mode(secret.path) == 0o700
    assert _mode(secret.path / os.readlink(secret.path / "..data")) == 0o700
    config = materialise(
        {"name": "c", "configMap": {"name": "conf", "defaultMode": 420}}, tmp_path, ctx
    )
    assert _mode(config.path / "a.yaml") == 0o644  # not a secret
    projected = materialise(
        {
            "name": "p",
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"path": "token"}},
                    {"secret": {"name": "tls"}},
                    {"configMap": {"name": "conf", "items": [{"key": "b.txt", "path": "b"}]}},
                ],
            },
        },
        tmp_path,
        ctx,
    )
    assert _mode(projected.path / "token") == _mode(projected.path / "tls.key") == 0o600
    assert _mode(projected.path / "b") == 0o644
    assert _mode(projected.path) == 0o700


def test_a_mode_the_pod_sets_is_honoured(tmp_path: Path) -> None:
    ctx = context()
    secret = materialise(
        {"name": "s", "secret": {"secretName": "tls", "defaultMode": 0o440}}, tmp_path, ctx
    )
    assert _mode(secret.path / "tls.key") == 0o440
    items = materialise(
        {
            "name": "i",
            "secret": {
                "secretName": "tls",
                "items": [{"key": "tls.key", "path": "k/key.pem", "mode": 0o644}],
            },
        },
        tmp_path,
        ctx,
    )
    assert _mode(items.path / "k" / "key.pem") == 0o644
    assert _mode(items.path / os.readlink(items.path / "..data") / "k") == 0o700


@pytest.mark.parametrize(
    ("spec", "owner"),
    [
        ({"containers": [{}]}, None),
        ({"securityContext": {"runAsUser": 1000}, "containers": [{}, {}]}, (1000, -1)),
        (
            {"securityContext": {"runAsUser": 1000, "fsGroup": 2000}, "containers": [{}]},
            (1000, 2000),
        ),
        (
            {
                "securityContext": {"runAsGroup": 3000},
                "containers": [{"securityContext": {"runAsUser": 7}}],
            },
            (7, 3000),
        ),
        (  # containers that differ: root keeps the files (kubelet does the same)
            {
                "securityContext": {"runAsUser": 1000},
                "containers": [{}, {"securityContext": {"runAsUser": 1001}}],
            },
            None,
        ),
        ({"securityContext": {"runAsUser": 0}, "containers": [{}]}, None),
    ],
)
def test_pod_owner(spec: dict, owner: tuple[int, int] | None) -> None:
    assert pod_owner(spec) == owner


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_secrets_belong_to_the_pods_user(tmp_path: Path) -> None:
    pod = {
        "metadata": POD["metadata"],
        "spec": {**POD["spec"], "securityContext": {"runAsUser": 1234, "fsGroup": 2345}},
    }
    ctx = context()
    ctx.facts = PodFacts(pod, pod_ip="127.1.0.5")
    secret = materialise({"name": "s", "secret": {"secretName": "tls"}}, tmp_path, ctx)
    for path in (secret.path, secret.path / "tls.key"):
        info = os.stat(path)
        assert (info.st_uid, info.st_gid) == (1234, 2345)
    assert _mode(secret.path / "tls.key") == 0o600


def test_a_bind_never_hides_what_the_container_still_needs(tmp_path: Path) -> None:
    """An emptyDir at a directory holding the agent's state (pytest's /tmp, say) or
    another volume's source is rewritten, not bound over them."""
    state = tmp_path / "scratch" / "agent"
    token = state / "pods" / "p" / "token"
    token.mkdir(parents=True)
    empty = state / "pods" / "p" / ".volumes" / "tmp"
    empty.mkdir(parents=True)
    creatable = (str(tmp_path / "scratch"),)
    wanted = [
        (str(tmp_path / "scratch"), empty, False, ""),  # would hide the state and the token
        (str(tmp_path / "scratch/sa"), token, True, ""),
        (str(tmp_path / "other"), empty, False, ""),
    ]
    (tmp_path / "other").mkdir()
    mounts = {
        m.target: m
        for m in plan_mounts(wanted, isolated=True, creatable=creatable, visible=[state])
    }
    assert not mounts[str(tmp_path / "scratch")].bind
    assert mounts[str(tmp_path / "scratch/sa")].bind
    assert mounts[str(tmp_path / "other")].bind
    without_state = plan_mounts(wanted[:1], isolated=True, creatable=creatable)
    assert not without_state[0].bind  # the volume's own source lies under it
