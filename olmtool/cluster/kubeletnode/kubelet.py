"""The kubelet of a cluster's node: its identity, its configuration file and its flags.

The kubelet authenticates as ``system:node:<name>`` (group ``system:nodes``) with a client
certificate from the cluster CA, so the apiserver's Node authorizer and NodeRestriction
admission hold it to its own Node and Pods, as on any kubeadm cluster. It serves its API
(logs, exec, port-forward) on the node's address with a serving certificate from the same
CA, and authenticates and authorizes callers through the apiserver (webhook), anonymous
access off.

Pods' cgroups go under ``/olmtool-<network index>`` in every hierarchy (a name the
network's machine-wide claim makes unique), so two nodes' kubelets never manage each
other's Pods; their logs are the node's own too (:mod:`.mountns`).
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from olmtool import yamlwrite
from olmtool.cluster import pki
from olmtool.cluster.controlplane import write_kubeconfig
from olmtool.cluster.kubeletnode.mountns import mount_points
from olmtool.cluster.network import NodeNetwork

CGROUP_FS = Path("/sys/fs/cgroup")
CLUSTER_DOMAIN = "cluster.local"


KUBELET_ROOTS = Path("/var/lib/olmtool/kubelet")


@dataclass(frozen=True)
class KubeletPaths:
    directory: Path  # <node>/kubelet

    @property
    def config(self) -> Path:
        return self.directory / "config.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def root(self) -> Path:
        """``--root-dir``: Pods' volumes, and unix sockets whose path is limited to 107
        bytes, so a short path of its own rather than one under the cluster's state."""
        digest = hashlib.sha256(str(self.directory).encode()).hexdigest()[:16]
        return KUBELET_ROOTS / digest

    @property
    def resolv_conf(self) -> Path:
        return self.directory / "resolv.conf"


def node_identity(pki_dir: Path, ca: pki.KeyPair, node: str) -> pki.KeyPair:
    """``kubelet-client-<node>.crt/.key``: the kubelet's user, reused while the CA signed
    it (one per node: the Node authorizer holds each kubelet to its own Node)."""
    stem = f"kubelet-client-{node}"
    pair = pki.KeyPair(pki_dir / f"{stem}.crt", pki_dir / f"{stem}.key")
    if pki.issued_by(pair, ca):
        return pair
    return pki.create_client_cert(
        pki_dir, ca, f"system:node:{node}", organization="system:nodes", file_stem=stem
    )


def serving_cert(pki_dir: Path, ca: pki.KeyPair, node: str, address: str) -> pki.KeyPair:
    """``kubelet-serving-<node>.crt/.key`` for the node's name and address."""
    stem = f"kubelet-serving-{node}"
    pair = pki.KeyPair(pki_dir / f"{stem}.crt", pki_dir / f"{stem}.key")
    if pki.issued_by(pair, ca) and address in pki.certificate_ips(pair.cert):
        return pair
    return pki.create_serving_cert(pki_dir, ca, stem, hosts=(node,), ips=(address,))


def cgroup_root(key: str) -> str:
    """The Pods' parent cgroup of the node whose machine-wide name is ``key``: a kubelet
    kills what runs in its cgroup root's Pod cgroups that it does not know, so two nodes
    never share one."""
    return f"/{key}"


def ensure_cgroup_root(key: str) -> None:
    """The Pods' parent cgroup in every v1 hierarchy (the kubelet requires it to exist)."""
    for hierarchy in _hierarchies():
        (hierarchy / cgroup_root(key).lstrip("/")).mkdir(exist_ok=True)


def remove_cgroup_root(key: str) -> None:
    """What is left of the cluster's cgroups once its Pods are gone (deepest first: a
    cgroup directory is removed with rmdir, and only when empty)."""
    for hierarchy in _hierarchies():
        top = hierarchy / cgroup_root(key).lstrip("/")
        if not top.is_dir():
            continue
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), reverse=True):
            try:
                directory.rmdir()
            except OSError:
                continue
        try:
            top.rmdir()
        except OSError:
            continue


def _hierarchies() -> list[Path]:
    if not CGROUP_FS.is_dir():
        return []
    return sorted(p for p in CGROUP_FS.iterdir() if p.is_dir() and not p.is_symlink())


def kubelet_config(
    *,
    address: str,
    port: int,
    healthz_port: int,
    ca_file: Path,
    serving: pki.KeyPair,
    network: NodeNetwork,
    cgroup_root: str,
    resolv_conf: Path,
) -> dict[str, object]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": address,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(serving.cert),
        "tlsPrivateKeyFile": str(serving.key),
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [network.dns_ip],
        "resolvConf": str(resolv_conf),
        "failSwapOn": False,
        # a busy development machine's full disk must not evict the cluster's Pods
        "evictionHard": {
            "memory.available": "0%",
            "nodefs.available": "0%",
            "imagefs.available": "0%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "protectKernelDefaults": False,
        # how often the kubelet looks at its node's status, and posts it when it changed
        # (else every 5 minutes; heartbeats are the Lease's): Ready is seen a second after
        # the runtime is, not at the next 10 s tick
        "nodeStatusUpdateFrequency": "1s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "20s",
        "maxPods": 110,
    }


def write_files(
    paths: KubeletPaths,
    *,
    server: str,
    ca_file: Path,
    identity: pki.KeyPair,
    config: dict[str, object],
    nameserver: str,
) -> None:
    for directory in (paths.directory, paths.root):
        directory.mkdir(parents=True, exist_ok=True)
    # Pods' secrets are mounted below: only root may enter (the kubelet makes its own
    # folders 0750, and hostPath users need not see other clusters' Pods)
    KUBELET_ROOTS.chmod(0o700)
    write_kubeconfig(paths.kubeconfig, server=server, ca_file=ca_file, client=identity)
    pki.write_private(paths.config, yamlwrite.dump(config).encode())
    # Pods with dnsPolicy Default (and the kubelet's own upstream for ClusterFirst)
    paths.resolv_conf.write_text(f"nameserver {nameserver}\n")


def kubelet_args(
    paths: KubeletPaths, *, node: str, address: str, runtime_endpoint: str, pause_image: str
) -> list[str]:
    return [
        f"--config={paths.config}",
        f"--kubeconfig={paths.kubeconfig}",
        f"--root-dir={paths.root}",
        f"--cert-dir={paths.directory / 'pki'}",
        f"--hostname-override={node}",
        f"--node-ip={address}",
        "--container-runtime=remote",
        f"--container-runtime-endpoint={runtime_endpoint}",
        f"--image-service-endpoint={runtime_endpoint}",
        f"--pod-infra-container-image={pause_image}",
        "--runtime-request-timeout=5m",
        "--v=1",
    ]


def unmount_under(root: Path) -> None:
    """Every mount at or below ``root`` (Pods' secret and projected volumes), deepest first: the
    kubelet unmounts them only for Pods it removes, and ``down`` stops Pods without it."""
    prefix = f"{root}/"
    points = list(mount_points())
    # the kubelet also bind-mounts its root onto itself (for mount propagation)
    inside = [p for p in points if p.startswith(prefix) or p == str(root)]
    for point in sorted(inside, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def remove_root(root: Path) -> None:
    """The kubelet's root directory, once nothing is mounted below it (its Pods' logs are
    in the node's folder, :mod:`.mountns`)."""
    unmount_under(root)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(root)], check=False)
