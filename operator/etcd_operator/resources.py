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

    @property
    def client_url(self) -> str:
        return f"http://{self.client_service}.{self.namespace}.svc:{CLIENT_PORT}"

    def host(self, member: str) -> str:
        return f"{member}.{self.peer_service}.{self.namespace}.svc"

    def peer_url(self, member: str) -> str:
        return f"http://{self.host(member)}:{PEER_PORT}"

    def member_client_url(self, member: str) -> str:
        return f"http://{self.host(member)}:{CLIENT_PORT}"

    def data_claim(self, member: str) -> str:
        return f"{member}-data"

    def image(self, version: str) -> str:
        return f"{self.etcd_image}:v{version}"


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


def member_pod(ref: ClusterRef, spec: MemberSpec) -> JSON:
    meta = _with_member(ref.meta(spec.name), spec.name)
    meta["labels"][VERSION_LABEL] = spec.version
    meta["annotations"] = {STATE_ANNOTATION: spec.state}
    if digest := config_digest(spec.options):
        meta["annotations"][CONFIG_ANNOTATION] = digest
    peers = ",".join(f"{name}={ref.peer_url(name)}" for name in spec.initial_cluster)
    container: JSON = {
        "name": "etcd",
        "image": ref.image(spec.version),
        "command": ["etcd"],
        "args": [
            f"--name={spec.name}",
            f"--listen-peer-urls=http://$(POD_IP):{PEER_PORT}",
            f"--listen-client-urls=http://$(POD_IP):{CLIENT_PORT}",
            f"--listen-metrics-urls=http://$(POD_IP):{METRICS_PORT}",
            f"--advertise-client-urls={ref.member_client_url(spec.name)}",
            f"--initial-advertise-peer-urls={ref.peer_url(spec.name)}",
            f"--initial-cluster={peers}",
            f"--initial-cluster-state={spec.state}",
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
            f"--initial-advertise-peer-urls={ref.peer_url(spec.name)}",
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
    ``snapshot`` may use ``$(JOB_NAME)``."""
    return {
        "metadata": {"labels": ref.labels("backup")},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "snapshot",
                    "image": ref.backup_image,
                    "command": ["etcdctl"],
                    "args": [
                        f"--endpoints={ref.client_url}",
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
            ],
            "volumes": [
                {"name": "backups", "persistentVolumeClaim": {"claimName": ref.backup_claim}}
            ],
        },
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
