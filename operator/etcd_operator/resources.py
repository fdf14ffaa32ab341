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
from collections.abc import Mapping
from typing import Any

from etcd_operator.refs import (
    CLIENT_PORT,
    CONFIG_ANNOTATION,
    DATA_DIR,
    HOSTNAME,
    MEMBER_LABEL,
    METRICS_PORT,
    PEER_PORT,
    STATE_ANNOTATION,
    TLS_ANNOTATION,
    TLS_DIR,
    VERSION_LABEL,
    ClusterRef,
    MemberSpec,
)
from etcd_operator.resources_backup import restore_container
from etcd_operator.resources_tls import tls_args, tls_volume

JSON = dict[str, Any]
# spec.options -> the etcd environment variable each one sets (etcd's flags of those names)
OPTION_VARIABLES = {
    "quotaBackendBytes": "ETCD_QUOTA_BACKEND_BYTES",
    "autoCompactionMode": "ETCD_AUTO_COMPACTION_MODE",
    "autoCompactionRetention": "ETCD_AUTO_COMPACTION_RETENTION",
    "snapshotCount": "ETCD_SNAPSHOT_COUNT",
    "heartbeatIntervalMs": "ETCD_HEARTBEAT_INTERVAL",
    "electionTimeoutMs": "ETCD_ELECTION_TIMEOUT",
}


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
        pod_spec["initContainers"] = [restore_container(ref, spec, peers)]
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
