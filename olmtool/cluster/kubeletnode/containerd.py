"""containerd for one cluster's node: its own config, root, state and socket.

Nothing of the system's containerd is used or touched: the config, the content store and
snapshots (``root``), the runtime state and the runc root live under the node's directory;
only the sockets sit under ``/run/olmtool`` (a unix socket path is limited to 107 bytes,
which a cluster under a deep test directory would exceed). Images the kubelet asks for
under their upstream names (``quay.io/...``, ``docker.io/...``, ``localhost:5000/...``)
are pulled from the cluster's registry through ``hosts.toml`` mirrors, with its login.

>>> paths = ContainerdPaths.under(state_dir / "node")
>>> write_config(paths, cni_conf_dir=..., sandbox_image=PAUSE_IMAGE, registry=("127.0.0.1:5001", login))
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from olmtool.cluster.registryauth import RegistryLogin
from olmtool.errors import OlmtoolError

SOCKET_ROOT = Path("/run/olmtool/containerd")
K8S_NAMESPACE = "k8s.io"  # the containerd namespace the CRI plugin keeps Pods' images in
# Upstream registries the cluster's registry stands in for (images keep these names).
MIRRORED = ("docker.io", "quay.io", "registry.k8s.io", "k8s.gcr.io", "gcr.io", "localhost:5000")


class ContainerdError(OlmtoolError):
    """containerd could not be configured, started or fed an image."""


@dataclass(frozen=True)
class ContainerdPaths:
    """Where one node's containerd keeps everything."""

    directory: Path

    @classmethod
    def under(cls, node_dir: Path) -> ContainerdPaths:
        return cls(node_dir.resolve() / "containerd")

    @property
    def config(self) -> Path:
        return self.directory / "config.toml"

    @property
    def root(self) -> Path:
        return self.directory / "root"

    @property
    def state(self) -> Path:
        return self.directory / "state"

    @property
    def runc_root(self) -> Path:
        return self.directory / "runc"

    @property
    def hosts_dir(self) -> Path:
        return self.directory / "certs.d"

    @property
    def socket(self) -> Path:
        digest = hashlib.sha256(str(self.directory).encode()).hexdigest()[:16]
        return SOCKET_ROOT / f"{digest}.sock"

    @property
    def sockets(self) -> tuple[Path, ...]:
        """Every socket containerd makes (left behind when it is killed)."""
        return (self.socket, self.socket.with_name(f"{self.socket.name}.ttrpc"))

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"


def config(
    paths: ContainerdPaths, *, cni_conf_dir: Path, cni_bin_dir: Path, sandbox_image: str,
    registry: str | None,
    login: RegistryLogin | None,
) -> dict[str, object]:  # fmt: skip
    """containerd 1.6's config (version 2) for the node."""
    cri: dict[str, object] = {
        "sandbox_image": sandbox_image,
        # root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj to the
        # kubelet's -998 for sandboxes; this keeps it at containerd's own.
        "restrict_oom_score_adj": True,
        "enable_selinux": False,
        "max_container_log_line_size": 16384,
        "containerd": {
            "snapshotter": "overlayfs",
            "default_runtime_name": "runc",
            "runtimes": {
                "runc": {
                    "runtime_type": "io.containerd.runc.v2",
                    "options": {"SystemdCgroup": False, "Root": str(paths.runc_root)},
                }
            },
        },
        "cni": {"bin_dir": str(cni_bin_dir), "conf_dir": str(cni_conf_dir), "max_conf_num": 1},
        "registry": {"config_path": str(paths.hosts_dir)},
    }
    if registry and login:
        cri["registry"] = {
            "config_path": str(paths.hosts_dir),
            "configs": {
                registry: {"auth": {"username": login.username, "password": login.password}}
            },
        }
    return {
        "version": 2,
        "root": str(paths.root),
        "state": str(paths.state),
        "oom_score": 0,
        "grpc": {"address": str(paths.socket)},
        "ttrpc": {"address": f"{paths.socket}.ttrpc"},
        "debug": {"address": "", "level": "info"},  # no debug socket
        "metrics": {"address": ""},
        "plugins": {
            "io.containerd.grpc.v1.cri": cri,
            "io.containerd.internal.v1.opt": {"path": str(paths.directory / "opt")},
        },
    }


def hosts_toml(upstream: str, registry: str) -> str:
    """``certs.d/<upstream>/hosts.toml``: pull ``upstream``'s images from ``registry``,
    its only endpoint: the registry is both the mirror and the server. (With the upstream
    as the server, containerd falls back to it after the registry's 404, and a missing
    image fails with the upstream's "connection refused" instead of "not found"; with a
    server alone and no host, containerd 1.6 dials the upstream.)"""
    endpoint = f"http://{registry}"
    return tomli_w.dumps(
        {"server": endpoint, "host": {endpoint: {"capabilities": ["pull", "resolve"]}}}
    )


def write_config(
    paths: ContainerdPaths, *, cni_conf_dir: Path, cni_bin_dir: Path, sandbox_image: str,
    registry: str | None,
    login: RegistryLogin | None,
) -> Path:  # fmt: skip
    """The config file and the mirrors' ``hosts.toml`` files (rewritten at every start:
    the registry's port is the cluster's)."""
    for directory in (paths.root, paths.state, paths.runc_root, paths.hosts_dir):
        directory.mkdir(parents=True, exist_ok=True)
    SOCKET_ROOT.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = tomli_w.dumps(
        config(paths, cni_conf_dir=cni_conf_dir, cni_bin_dir=cni_bin_dir, sandbox_image=sandbox_image,
               registry=registry, login=login)
    )  # fmt: skip
    _write(paths.config, text)
    if registry:
        for upstream in (*MIRRORED, registry):
            _write(paths.hosts_dir / upstream / "hosts.toml", hosts_toml(upstream, registry))
    return paths.config


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    tmp.replace(path)


def command(paths: ContainerdPaths) -> list[str]:
    return ["containerd", "--config", str(paths.config)]


def ctr(paths: ContainerdPaths, *args: str, timeout: float = 120.0) -> str:
    """Run ``ctr`` against this node's containerd in the CRI namespace."""
    argv = ["ctr", "--address", str(paths.socket), "--namespace", K8S_NAMESPACE, *args]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise ContainerdError(f"ctr {args[0]}: {message[-1] if message else 'failed'}")
    return result.stdout


def import_layout(paths: ContainerdPaths, layout: Path, reference: str) -> None:
    """Put the OCI layout's image (tagged with ``reference``'s tag) into the node's image
    store as ``reference``, as ``kind load`` does: no registry involved, so the kubelet
    finds it present."""
    name, _, tag = reference.rpartition(":")
    with tempfile.TemporaryDirectory(prefix="olmtool-import-") as tmp:
        archive = Path(tmp) / "image.tar"
        with tarfile.open(archive, "w") as tar:
            for entry in sorted(layout.iterdir()):
                tar.add(entry, arcname=entry.name)
        # the layout's index names the tag alone: --base-name makes it name:tag
        ctr(paths, "images", "import", "--base-name", name, str(archive))
    if reference not in ctr(paths, "images", "list", "--quiet").split():
        raise ContainerdError(f"importing {layout} did not give {reference} (tag {tag!r})")


def sandbox_netns(paths: ContainerdPaths, container_id: str) -> str | None:
    """The network namespace a Pod sandbox container holds (None: not a sandbox)."""
    try:
        info = json.loads(ctr(paths, "containers", "info", container_id))
    except (ContainerdError, ValueError):
        return None
    if (info.get("Labels") or {}).get("io.cri-containerd.kind") != "sandbox":
        return None
    namespaces = ((info.get("Spec") or {}).get("linux") or {}).get("namespaces") or []
    for namespace in namespaces:
        if namespace.get("type") == "network" and namespace.get("path"):
            return str(namespace["path"])
    return None


def kill_task(paths: ContainerdPaths, container_id: str, timeout: float = 10.0) -> None:
    """SIGKILL the container's processes and delete its task (gone already: nothing)."""
    with contextlib.suppress(ContainerdError):
        ctr(paths, "tasks", "kill", "--all", "--signal", "SIGKILL", container_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ctr(paths, "tasks", "delete", container_id)
            return
        except ContainerdError as exc:
            if "not found" in str(exc):
                return
            time.sleep(0.1)
