"""The backup objects (pure): the backups volume, the snapshot Job and CronJob, and the
init container that restores a new seed from a snapshot in that volume."""

from __future__ import annotations

from typing import Any

from etcd_operator.refs import BACKUP_DIR, CLIENT_TLS_DIR, DATA_DIR, ClusterRef, MemberSpec

JSON = dict[str, Any]


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


def restore_container(ref: ClusterRef, spec: MemberSpec, peers: str) -> JSON:
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
