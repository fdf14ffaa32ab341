"""A small dynamic volume provisioner: PersistentVolumeClaims become host directories.

It installs the default StorageClass ``standard`` (provisioner ``olmtool.dev/local``,
reclaimPolicy Delete, volumeBindingMode WaitForFirstConsumer, as kind's
local-path-provisioner), and for each pending claim of that class (or of no class) creates
a ``hostPath`` PersistentVolume under ``<state>/volumes/<pv>`` pre-bound to the claim
(``claimRef``); kube-controller-manager's PV controller completes the binding. A claim of
a WaitForFirstConsumer class is provisioned once the scheduler has picked its first
Pod's node (``volume.kubernetes.io/selected-node``), and its volume is bound to that
node (``nodeAffinity``): a Pod that uses it runs there or nowhere, as with any local
volume, so losing a node loses its volumes. (A cluster made before kept its Immediate
class: a StorageClass cannot change; its volumes have no node.) When a PV it made is Released and its reclaim
policy is Delete, it deletes the directory and the PV. Data outlives Pods: a StatefulSet
member re-created with the same claim finds its files. Directories are made 0777, as
kind's local-path provisioner makes them: a hostPath volume gets no fsGroup ownership,
and Pods run as any user.

A component of the local cluster on its own:
``python -m olmtool.cluster.provisioner --kubeconfig K --state-dir D`` runs it until
SIGTERM (``cluster up`` starts it so, as a component of the node).
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from olmtool.kube import JSON, Kube, Streams, configure_logging, status_of, watch_forever

log = logging.getLogger(__name__)

PROVISIONER = "olmtool.dev/local"
STORAGE_CLASS = "standard"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"  # set by the scheduler


def storage_class() -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS, "annotations": {DEFAULT_CLASS: "true"}},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _class_name(claim: JSON) -> str | None:
    name = (claim.get("spec") or {}).get("storageClassName")
    if name is None:
        annotations = (claim.get("metadata") or {}).get("annotations") or {}
        name = annotations.get("volume.beta.kubernetes.io/storage-class")
    return name


def claim_class(claim: JSON, classes: dict[str, JSON]) -> JSON | None:
    """The StorageClass ``claim`` names (None: it names none, or one that is missing)."""
    name = _class_name(claim)
    return classes.get(name) if name is not None else None


def selected_node(claim: JSON) -> str | None:
    return ((claim.get("metadata") or {}).get("annotations") or {}).get(SELECTED_NODE)


def wants_volume(claim: JSON, classes: dict[str, JSON]) -> bool:
    """Whether ``claim`` is pending, unbound and ours to provision now (a claim of a
    WaitForFirstConsumer class: once its node is chosen)."""
    spec = claim.get("spec") or {}
    if spec.get("volumeName") or (claim.get("status") or {}).get("phase") not in (None, "Pending"):
        return False
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if spec.get("selector") or spec.get("dataSource"):
        return False  # a claim for a particular volume: not for a dynamic provisioner
    if _class_name(claim) is None:
        return True
    sc = claim_class(claim, classes)
    if sc is None or sc.get("provisioner") != PROVISIONER:
        return False
    return sc.get("volumeBindingMode") != "WaitForFirstConsumer" or bool(selected_node(claim))


def volume_for(
    claim: JSON, directory: Path, reclaim: str = "Delete", node: str | None = None
) -> JSON:
    """The PersistentVolume for ``claim``: a hostPath directory, pre-bound to it (and to
    ``node``, when the scheduler chose one)."""
    meta = claim["metadata"]
    spec = claim.get("spec") or {}
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage") or "1Gi"
    name = f"pvc-{meta['uid']}"
    volume: JSON = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {PROVISIONED_BY: PROVISIONER},
            "labels": {"olmtool.dev/provisioner": "local"},
        },
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": reclaim,
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": str(directory / name), "type": "DirectoryOrCreate"},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion"),
            },
        },
    }
    if spec.get("storageClassName"):
        volume["spec"]["storageClassName"] = spec["storageClassName"]
    if node:
        term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        volume["spec"]["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}
        }
    return volume


class Provisioner:
    """Watches claims and volumes; run by ``python -m olmtool.cluster.provisioner`` (``start``/``stop``)."""

    def __init__(self, kube: Kube, state_dir: Path, streams: Streams | None = None) -> None:
        self.kube = kube
        self.directory = state_dir / "volumes"
        self.stop_event = threading.Event()
        self.streams = streams or Streams()
        self._lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.ensure_storage_class()
        core = self.kube.core
        for name, list_func, reconcile, what in (
            (
                "pvc",
                core.list_persistent_volume_claim_for_all_namespaces,
                self.reconcile_claim,
                "persistentvolumeclaims",
            ),
            ("pv", core.list_persistent_volume, self.reconcile_volume, "persistentvolumes"),
        ):
            thread = threading.Thread(
                target=self._watch,
                args=(list_func, reconcile, what),
                name=f"provisioner-{name}",
                daemon=True,
            )
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self.stop_event.set()
        self.streams.close()

    def ensure_storage_class(self) -> None:
        try:
            self.kube.create("/apis/storage.k8s.io/v1/storageclasses", storage_class())
            log.info("created StorageClass %s", STORAGE_CLASS)
        except Exception as exc:
            if status_of(exc) != 409:
                raise

    def _classes(self) -> dict[str, JSON]:
        listed = self.kube.get("/apis/storage.k8s.io/v1/storageclasses")
        return {item["metadata"]["name"]: item for item in listed.get("items") or []}

    def _watch(
        self, list_func: Callable[..., Any], reconcile: Callable[[JSON], None], what: str
    ) -> None:
        """Reconcile every object ``list_func`` lists, and each one added or changed."""
        watch_forever(
            list_func,
            lambda kind, obj: reconcile(obj) if kind != "DELETED" else None,
            lambda objs: [reconcile(obj) for obj in objs],
            self.stop_event,
            what=what,
            streams=self.streams,
        )

    def reconcile_claim(self, claim: JSON) -> None:
        try:
            with self._lock:
                classes = self._classes()
                if not wants_volume(claim, classes):
                    return
                reclaim = str((claim_class(claim, classes) or {}).get("reclaimPolicy") or "Delete")
                volume = volume_for(claim, self.directory, reclaim, selected_node(claim))
                volume_dir = self.directory / volume["metadata"]["name"]
                volume_dir.mkdir(parents=True, exist_ok=True)
                volume_dir.chmod(0o777)  # see the module's docstring
                try:
                    self.kube.create("/api/v1/persistentvolumes", volume)
                except Exception as exc:
                    if status_of(exc) != 409:
                        raise
                    return
                meta = claim["metadata"]
                log.info(
                    "provisioned %s for claim %s/%s",
                    volume["metadata"]["name"],
                    meta["namespace"],
                    meta["name"],
                )
        except Exception as exc:
            log.warning("provisioning for claim failed: %s", exc)

    def reconcile_volume(self, volume: JSON) -> None:
        meta = volume.get("metadata") or {}
        spec = volume.get("spec") or {}
        if (meta.get("annotations") or {}).get(PROVISIONED_BY) != PROVISIONER:
            return
        if (volume.get("status") or {}).get("phase") not in ("Released", "Failed"):
            return
        if spec.get("persistentVolumeReclaimPolicy") != "Delete":
            return
        path = Path(str((spec.get("hostPath") or {}).get("path") or ""))
        try:
            if path.is_relative_to(self.directory) and path != self.directory:
                shutil.rmtree(path, ignore_errors=True)
            self.kube.delete(f"/api/v1/persistentvolumes/{meta['name']}")
            log.info("deleted released volume %s", meta["name"])
        except Exception as exc:
            if status_of(exc) != 404:
                log.warning("deleting volume %s failed: %s", meta.get("name"), exc)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import signal

    from olmtool.kube import Kube

    parser = argparse.ArgumentParser(prog="python -m olmtool.cluster.provisioner")
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    configure_logging()
    provisioner = Provisioner(Kube(args.kubeconfig), args.state_dir)
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda _signum, _frame: stopped.set())
    while True:  # the apiserver may still be starting
        try:
            provisioner.start()
            break
        except Exception as exc:
            log.warning("starting failed: %s; retrying", exc)
            if stopped.wait(1.0):
                return 0
    stopped.wait()
    provisioner.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
