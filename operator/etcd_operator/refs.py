"""What every object an EtcdCluster owns is made from (pure): the names, labels,
annotations, ports and paths they share, the cluster's reference (:class:`ClusterRef`:
the names, labels and URLs of its objects) and how one member starts (:class:`MemberSpec`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]

GROUP = "etcd.olmtool.dev"
CLIENT_PORT, PEER_PORT, METRICS_PORT = 2379, 2380, 2381
DATA_DIR = "/var/lib/etcd"
BACKUP_DIR = "/backups"
MEMBER_LABEL = f"{GROUP}/member"
VERSION_LABEL = f"{GROUP}/version"
HOSTNAME = "kubernetes.io/hostname"  # the node label members spread over
BACKUP_REQUEST = f"{GROUP}/backup-request"
DEFRAG_REQUEST = f"{GROUP}/defragment-request"
STATE_ANNOTATION = f"{GROUP}/initial-cluster-state"
# a digest of the member settings a Pod was made with (spec.options); none: the defaults
CONFIG_ANNOTATION = f"{GROUP}/config"
# a member's TLS stage: none (plain), "ready" (plain, but holds the peer certificates to
# dial peers that serve TLS), "on" (serves clients and peers with TLS only)
TLS_ANNOTATION = f"{GROUP}/tls"
TLS_DIR = "/etc/etcd/tls"
CLIENT_TLS_DIR = "/etc/etcd/client-tls"


@dataclass(frozen=True)
class ClusterRef:
    """The EtcdCluster the objects belong to, and what they all need from it."""

    name: str
    namespace: str
    uid: str
    api_version: str = f"{GROUP}/v1beta1"
    etcd_image: str = "quay.io/coreos/etcd"
    backup_image: str = "quay.io/coreos/etcd:v3.5.1"
    # the Secret with the client certificate (tls.crt, tls.key, ca.crt) when spec.tls is
    # set: clients (the backup Jobs) reach the cluster over https with it
    client_tls: str | None = None

    def labels(self, component: str = "member") -> dict[str, str]:
        return {
            "app.kubernetes.io/name": "etcd",
            "app.kubernetes.io/instance": self.name,
            "app.kubernetes.io/managed-by": "etcd-operator",
            "app.kubernetes.io/component": component,
        }

    def selector(self, component: str = "member") -> dict[str, str]:
        return {
            "app.kubernetes.io/name": "etcd",
            "app.kubernetes.io/instance": self.name,
            "app.kubernetes.io/component": component,
        }

    def label_selector(self, component: str = "member") -> str:
        """:meth:`selector` as a list call's ``labelSelector``."""
        return ",".join(f"{k}={v}" for k, v in self.selector(component).items())

    def owner(self) -> JSON:
        return {
            "apiVersion": self.api_version,
            "kind": "EtcdCluster",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            # no blockOwnerDeletion: it needs etcdclusters/finalizers rights, which the
            # RBAC of older releases lacks; background deletion cascades without it
        }

    def meta(self, name: str, component: str = "member", owned: bool = True) -> JSON:
        meta: JSON = {"name": name, "namespace": self.namespace, "labels": self.labels(component)}
        if owned:
            meta["ownerReferences"] = [self.owner()]
        return meta

    # -- names -----------------------------------------------------------------------

    @property
    def peer_service(self) -> str:
        return self.name

    @property
    def client_service(self) -> str:
        return f"{self.name}-client"

    @property
    def metrics_service(self) -> str:
        return f"{self.name}-metrics"

    @property
    def bootstrap_config(self) -> str:
        return f"{self.name}-bootstrap"

    @property
    def backup_claim(self) -> str:
        return f"{self.name}-backups"

    @property
    def backup_cronjob(self) -> str:
        return f"{self.name}-backup"

    def client_url(self, secure: bool = False) -> str:
        return f"{_scheme(secure)}://{self.client_host}:{CLIENT_PORT}"

    @property
    def client_host(self) -> str:
        return f"{self.client_service}.{self.namespace}.svc"

    def host(self, member: str) -> str:
        return f"{member}.{self.peer_service}.{self.namespace}.svc"

    def peer_url(self, member: str, secure: bool = False) -> str:
        return f"{_scheme(secure)}://{self.host(member)}:{PEER_PORT}"

    def member_client_url(self, member: str, secure: bool = False) -> str:
        return f"{_scheme(secure)}://{self.host(member)}:{CLIENT_PORT}"

    # -- TLS (spec.tls) --------------------------------------------------------------

    @property
    def ca_secret(self) -> str:
        return f"{self.name}-ca"

    @property
    def client_secret(self) -> str:
        """The client certificate the operator and the backup Jobs present (mode auto)."""
        return f"{self.name}-client-tls"

    def member_secret(self, member: str) -> str:
        """A member's serving and peer certificates (mode auto)."""
        return f"{member}-tls"

    def server_names(self, member: str) -> list[str]:
        """What a member's serving certificate names: the member, and the client Service
        by every name a Pod resolves it by."""
        client = self.client_service
        return [
            self.host(member),
            f"{self.host(member)}.cluster.local",
            client,
            f"{client}.{self.namespace}",
            self.client_host,
            f"{self.client_host}.cluster.local",
            "localhost",
            "127.0.0.1",
        ]

    def peer_names(self, member: str) -> list[str]:
        return [self.host(member), f"{self.host(member)}.cluster.local"]

    def data_claim(self, member: str) -> str:
        return f"{member}-data"

    def image(self, version: str) -> str:
        return f"{self.etcd_image}:v{version}"


def _scheme(secure: bool) -> str:
    return "https" if secure else "http"


@dataclass(frozen=True)
class MemberSpec:
    """How to start one member."""

    name: str
    version: str
    # every member etcd knows, by name (the new one included), for --initial-cluster
    initial_cluster: Sequence[str]
    state: str  # "new" or "existing"
    resources: Mapping[str, Any] | None = None
    restore: Mapping[str, str] | None = None  # {"claimName", "snapshot"} for the seed
    placement: Mapping[str, Any] | None = None  # spec.placement
    options: Mapping[str, Any] | None = None  # spec.options (checked)
    tls: str = ""  # the TLS stage it starts in: "", "ready" or "on" (TLS_ANNOTATION)
    # spec.tls.secretRefs ({"server", "peer", "client"}); None: the member's own Secret
    tls_refs: Mapping[str, str] | None = None
    # the peer URL etcd has for each other member (scheme included), by name
    peer_urls: Mapping[str, str] | None = None

    @property
    def secure(self) -> bool:
        return self.tls == "on"
