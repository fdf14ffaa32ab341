"""The Kubernetes objects an EtcdCluster owns, as plain dicts (pure functions).

Members are bare Pods with one PersistentVolumeClaim each, not a StatefulSet: the
operator must remove a *chosen* member (a failed one, or a follower before the leader),
start each member with its own ``--initial-cluster-state`` only after etcd has accepted it,
replace a member that lost its data under a new name, and roll upgrades leader last. A
StatefulSet only adds and removes the highest ordinal and rolls in ordinal order, so it
would fight every one of those decisions.
"""

from __future__ import annotations

import hashlib
import json
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
# spec.options -> the etcd environment variable each one sets (etcd's flags of those names)
OPTION_VARIABLES = {
    "quotaBackendBytes": "ETCD_QUOTA_BACKEND_BYTES",
    "autoCompactionMode": "ETCD_AUTO_COMPACTION_MODE",
    "autoCompactionRetention": "ETCD_AUTO_COMPACTION_RETENTION",
    "snapshotCount": "ETCD_SNAPSHOT_COUNT",
    "heartbeatIntervalMs": "ETCD_HEARTBEAT_INTERVAL",
    "electionTimeoutMs": "ETCD_ELECTION_TIMEOUT",
}


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


# -- services and configuration ----------------------------------------------------------


def _port(name: str, port: int) -> JSON:
    return {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}


def peer_service(ref: ClusterRef) -> JSON:
    """Headless: gives each member the stable name its peer URL uses, ready or not (a
    member must be reachable by its peers before it can become ready)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ref.meta(ref.peer_service, "peers"),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": ref.selector(),
            "ports": [_port("peer", PEER_PORT), _port("client", CLIENT_PORT)],
        },
    }


def client_service(ref: ClusterRef) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ref.meta(ref.client_service, "client"),
        "spec": {"selector": ref.selector(), "ports": [_port("client", CLIENT_PORT)]},
    }


def metrics_service(ref: ClusterRef) -> JSON:
    """What the bundle's ServiceMonitor scrapes (port ``metrics``)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ref.meta(ref.metrics_service, "metrics"),
        "spec": {"selector": ref.selector(), "ports": [_port("metrics", METRICS_PORT)]},
    }


def default_quota(storage_bytes: int) -> int:
    """The database quota without spec.options.quotaBackendBytes: 95% of the volume."""
    return max(storage_bytes * 95 // 100, 16 * 1024 * 1024)


def bootstrap_config(ref: ClusterRef, storage_bytes: int) -> JSON:
    """Settings shared by every member (etcd reads ``ETCD_*`` variables)."""
    quota = default_quota(storage_bytes)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ref.meta(ref.bootstrap_config, "config"),
        "data": {
            "ETCD_INITIAL_CLUSTER_TOKEN": f"{ref.name}-{ref.uid}",
            "ETCD_AUTO_COMPACTION_MODE": "periodic",
            "ETCD_AUTO_COMPACTION_RETENTION": "1h",
            "ETCD_SNAPSHOT_COUNT": "10000",
            "ETCD_QUOTA_BACKEND_BYTES": str(quota),
            "ETCD_DATA_DIR": f"{DATA_DIR}/data",
        },
    }


def disruption_budget(ref: ClusterRef, replicas: int, api_version: str) -> JSON:
    """Voluntary disruptions (drains) never take more than the members quorum can spare."""
    return {
        "apiVersion": api_version,
        "kind": "PodDisruptionBudget",
        "metadata": ref.meta(ref.name, "members"),
        "spec": {"minAvailable": replicas // 2 + 1, "selector": {"matchLabels": ref.selector()}},
    }


# -- members -----------------------------------------------------------------------------


def data_claim(ref: ClusterRef, member: str, size: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _with_member(ref.meta(ref.data_claim(member)), member),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
    }


def _with_member(meta: JSON, member: str) -> JSON:
    meta["labels"][MEMBER_LABEL] = member
    return meta


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


def tls_args(stage: str) -> list[str]:
    """etcd's TLS flags for a stage: "ready" dials peers that serve TLS with the peer
    certificate (etcd ignores the files for its own plain listener), "on" serves clients
    and peers with TLS only and asks both for a certificate of the cluster's CA. Metrics
    and /health stay plain on their own port (probes and scrapers need no certificate)."""
    if not stage:
        return []
    dial = [
        f"--peer-trusted-ca-file={TLS_DIR}/peer-ca.crt",
        f"--peer-cert-file={TLS_DIR}/peer.crt",
        f"--peer-key-file={TLS_DIR}/peer.key",
    ]
    if stage != "on":
        return dial
    return [
        *dial,
        "--peer-client-cert-auth=true",
        "--client-cert-auth=true",
        f"--trusted-ca-file={TLS_DIR}/ca.crt",
        f"--cert-file={TLS_DIR}/server.crt",
        f"--key-file={TLS_DIR}/server.key",
    ]


def _items(secret: str, keys: Mapping[str, str]) -> JSON:
    return {"secret": {"name": secret, "items": [{"key": k, "path": p} for k, p in keys.items()]}}


def tls_volume(ref: ClusterRef, spec: MemberSpec) -> JSON:
    """The member's certificates under :data:`TLS_DIR` as ``ca.crt``, ``server.crt/key``,
    ``peer-ca.crt`` and ``peer.crt/key``: from its own Secret (mode auto), or from the
    user's (cert-manager's shape: ``tls.crt``, ``tls.key``, ``ca.crt``). The kubelet
    updates the files when a Secret changes, and etcd reads them at every handshake, so
    a renewed certificate needs no restart."""
    if spec.tls_refs:
        sources = [
            _items(
                spec.tls_refs["server"],
                {"tls.crt": "server.crt", "tls.key": "server.key", "ca.crt": "ca.crt"},
            ),
            _items(
                spec.tls_refs["peer"],
                {"tls.crt": "peer.crt", "tls.key": "peer.key", "ca.crt": "peer-ca.crt"},
            ),
        ]
    else:
        sources = [{"secret": {"name": ref.member_secret(spec.name)}}]
    return {"name": "tls", "projected": {"sources": sources}}


def option_variables(options: Mapping[str, Any] | None) -> list[JSON]:
    """``spec.options`` as the member container's environment, sorted. A container's
    ``env`` wins over the shared ConfigMap's (``envFrom``) for the same name; flags are not
    used: etcd 3.5 refuses a flag that an ``ETCD_*`` variable also sets."""
    chosen = {OPTION_VARIABLES[k]: v for k, v in (options or {}).items() if k in OPTION_VARIABLES}
    return [{"name": k, "value": str(v)} for k, v in sorted(chosen.items()) if v is not None]


def config_digest(options: Mapping[str, Any] | None) -> str:
    """What a member Pod runs with beyond its version, as a short digest; empty for the
    defaults, so Pods of releases that had no options compare equal to them."""
    variables = option_variables(options)
    if not variables:
        return ""
    text = json.dumps(variables, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _peer_url(ref: ClusterRef, spec: MemberSpec, name: str) -> str:
    """The member's own peer URL by its stage; another's as etcd has it (mid-way through
    turning TLS on, some members are still plain)."""
    if name != spec.name and spec.peer_urls and spec.peer_urls.get(name):
        return spec.peer_urls[name]
    return ref.peer_url(name, spec.secure)


def member_pod(ref: ClusterRef, spec: MemberSpec) -> JSON:
    meta = _with_member(ref.meta(spec.name), spec.name)
    meta["labels"][VERSION_LABEL] = spec.version
    meta["annotations"] = {STATE_ANNOTATION: spec.state}
    if digest := config_digest(spec.options):
        meta["annotations"][CONFIG_ANNOTATION] = digest
    if spec.tls:
        meta["annotations"][TLS_ANNOTATION] = spec.tls
    peers = ",".join(f"{name}={_peer_url(ref, spec, name)}" for name in spec.initial_cluster)
    scheme = "https" if spec.secure else "http"
    container: JSON = {
        "name": "etcd",
        "image": ref.image(spec.version),
        "command": ["etcd"],
        "args": [
            f"--name={spec.name}",
            f"--listen-peer-urls={scheme}://$(POD_IP):{PEER_PORT}",
            f"--listen-client-urls={scheme}://$(POD_IP):{CLIENT_PORT}",
            f"--listen-metrics-urls=http://$(POD_IP):{METRICS_PORT}",
            f"--advertise-client-urls={ref.member_client_url(spec.name, spec.secure)}",
            f"--initial-advertise-peer-urls={ref.peer_url(spec.name, spec.secure)}",
            f"--initial-cluster={peers}",
            f"--initial-cluster-state={spec.state}",
            *tls_args(spec.tls),
        ],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            *option_variables(spec.options),
        ],
        "envFrom": [{"configMapRef": {"name": ref.bootstrap_config}}],
        "ports": [
            {"name": "client", "containerPort": CLIENT_PORT, "protocol": "TCP"},
            {"name": "peer", "containerPort": PEER_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": METRICS_PORT},
            "periodSeconds": 2,
            "failureThreshold": 3,
        },
        "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}],
    }
    if spec.resources:
        container["resources"] = dict(spec.resources)
    if spec.tls:
        container["volumeMounts"].append({"name": "tls", "mountPath": TLS_DIR, "readOnly": True})
    pod_spec: JSON = {
        "hostname": spec.name,
        "subdomain": ref.peer_service,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        **placed(ref, spec.placement or {}),
        "containers": [container],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": ref.data_claim(spec.name)}}
        ],
    }
    if spec.tls:
        pod_spec["volumes"].append(tls_volume(ref, spec))
    if spec.restore:
        pod_spec["initContainers"] = [_restore_container(ref, spec, peers)]
        pod_spec["volumes"].append(
            {
                "name": "snapshots",
                "persistentVolumeClaim": {"claimName": spec.restore["claimName"], "readOnly": True},
            }
        )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


# A member stays bound to its node while the node is unreachable: the operator, not the
# taint manager's default 300 s eviction, decides when it is lost (nodeLossTimeoutSeconds),
# and only while the others keep quorum.
STAY_ON_LOST_NODE = [
    {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute"}
    for taint in ("unreachable", "not-ready")
]


def placed(ref: ClusterRef, placement: Mapping[str, Any]) -> JSON:
    """A member Pod's scheduling fields from ``spec.placement``: its node selector,
    tolerations (with :data:`STAY_ON_LOST_NODE`), priority class, and affinity (members
    spread over nodes unless the affinity says how, with a podAntiAffinity)."""
    fields: JSON = {}
    if placement.get("nodeSelector"):
        fields["nodeSelector"] = dict(placement["nodeSelector"])
    affinity = dict(placement.get("affinity") or {})
    if "podAntiAffinity" not in affinity:
        affinity.update(spread_members(ref))
    fields["affinity"] = affinity
    fields["tolerations"] = [*(placement.get("tolerations") or []), *STAY_ON_LOST_NODE]
    if placement.get("priorityClassName"):
        fields["priorityClassName"] = placement["priorityClassName"]
    return fields


def spread_members(ref: ClusterRef) -> JSON:
    """Members prefer nodes that run no other member of their cluster, as coreos'
    operator's ``antiAffinity`` asked for: one node lost takes one member, not the
    quorum. Preferred, not required: a cluster with fewer nodes than members still runs.
    (The scheduler's default spreading, by the client Service's selector, spread three
    members over three idle nodes in a test too, but it is one score among several and
    weighs less as nodes fill up.)"""
    term = {"labelSelector": {"matchLabels": ref.selector()}, "topologyKey": HOSTNAME}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}
            ]
        }
    }


def _restore_container(ref: ClusterRef, spec: MemberSpec, peers: str) -> JSON:
    """``etcdutl snapshot restore`` (3.5; ``etcdctl`` in 3.4) into the seed's data dir."""
    tool = "etcdctl" if spec.version.startswith("3.4.") else "etcdutl"
    return {
        "name": "restore",
        "image": ref.image(spec.version),
        "command": [tool],
        "args": [
            "snapshot",
            "restore",
            f"{BACKUP_DIR}/{spec.restore['snapshot']}" if spec.restore else "",
            f"--name={spec.name}",
            f"--initial-cluster={peers}",
            f"--initial-advertise-peer-urls={ref.peer_url(spec.name, spec.secure)}",
            "--initial-cluster-token=$(ETCD_INITIAL_CLUSTER_TOKEN)",
            f"--data-dir={DATA_DIR}/data",
        ],
        "env": [
            {
                "name": "ETCD_INITIAL_CLUSTER_TOKEN",
                "valueFrom": {
                    "configMapKeyRef": {
                        "name": ref.bootstrap_config,
                        "key": "ETCD_INITIAL_CLUSTER_TOKEN",
                    }
                },
            }
        ],
        "volumeMounts": [
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "snapshots", "mountPath": BACKUP_DIR, "readOnly": True},
        ],
    }


# -- backups -----------------------------------------------------------------------------


def backup_claim(ref: ClusterRef, size: str) -> JSON:
    """Not owned by the EtcdCluster: backups (the final snapshot above all) outlive it."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ref.meta(ref.backup_claim, "backup", owned=False),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
    }


def backup_pod_template(ref: ClusterRef, snapshot: str) -> JSON:
    """``etcdctl snapshot save`` from the client Service into the backups volume;
    ``snapshot`` may use ``$(JOB_NAME)``. With TLS, over https with the client
    certificate (``ref.client_tls``)."""
    secure = ref.client_tls is not None
    tls_args = [
        f"--cacert={CLIENT_TLS_DIR}/ca.crt",
        f"--cert={CLIENT_TLS_DIR}/tls.crt",
        f"--key={CLIENT_TLS_DIR}/tls.key",
    ]
    container: JSON = {
        "name": "snapshot",
        "image": ref.backup_image,
        "command": ["etcdctl"],
        "args": [
            f"--endpoints={ref.client_url(secure)}",
            *(tls_args if secure else []),
            "--dial-timeout=5s",
            "--command-timeout=60s",
            "snapshot",
            "save",
            f"{BACKUP_DIR}/{snapshot}",
        ],
        "env": [
            {
                "name": "JOB_NAME",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}},
            }
        ],
        "volumeMounts": [{"name": "backups", "mountPath": BACKUP_DIR}],
    }
    volumes: list[JSON] = [
        {"name": "backups", "persistentVolumeClaim": {"claimName": ref.backup_claim}}
    ]
    if ref.client_tls is not None:
        container["volumeMounts"].append(
            {"name": "client-tls", "mountPath": CLIENT_TLS_DIR, "readOnly": True}
        )
        volumes.append({"name": "client-tls", "secret": {"secretName": ref.client_tls}})
    return {
        "metadata": {"labels": ref.labels("backup")},
        "spec": {"restartPolicy": "Never", "containers": [container], "volumes": volumes},
    }


def backup_job_spec(ref: ClusterRef, snapshot: str = "$(JOB_NAME).db") -> JSON:
    return {
        "backoffLimit": 2,
        "activeDeadlineSeconds": 600,
        "template": backup_pod_template(ref, snapshot),
    }


def backup_cronjob(ref: ClusterRef, schedule: str, api_version: str) -> JSON:
    return {
        "apiVersion": api_version,
        "kind": "CronJob",
        "metadata": ref.meta(ref.backup_cronjob, "backup"),
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": ref.labels("backup")},
                "spec": backup_job_spec(ref),
            },
        },
    }


def backup_job(ref: ClusterRef, name: str, snapshot: str, owned: bool = True) -> JSON:
    """An on-demand (or final) backup: the CronJob's Job, with a chosen snapshot name."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": ref.meta(name, "backup", owned=owned),
        "spec": backup_job_spec(ref, snapshot),
    }
