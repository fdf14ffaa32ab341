"""The node agent: olmtool's own kubelet. It registers a Node, keeps it Ready (status
heartbeat and a Lease in ``kube-node-lease``), runs the Pods bound to it as local
processes (a :class:`~.worker.PodWorker` each, which sees the agent as a
:class:`~.host.PodHost`) and runs the volume provisioner (:mod:`.provisioner`). Given
the cluster's network, its Pods get network namespaces (:mod:`.podnet`) and its
Services answer on their ClusterIPs (:mod:`.services`).

With a serving certificate (``serving``, signed by the cluster CA) it also serves the
kubelet API (:mod:`.kubeletapi`: ``kubectl logs`` and ``exec``) and reports its port.

>>> agent = NodeAgent(
...     plane.kubeconfig, state_dir, network=claim_network(cluster_dir),
...     serving=plane.kubelet_serving,
... )
>>> agent.start()      # returns once the Node is registered and Ready
>>> agent.stop()       # SIGTERM (then SIGKILL) to every container; nothing is left behind
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from olmtool.cluster.network import ClusterNetwork
from olmtool.cluster.node import process
from olmtool.cluster.node.containers import grace_period
from olmtool.cluster.node.env import apiserver_env
from olmtool.cluster.node.host import NodeSettings
from olmtool.cluster.node.kube import (
    Kube,
    PodApi,
    Streams,
    now,
    status_of,
    watch_forever,
)
from olmtool.cluster.node.kubeletapi import KubeletServer
from olmtool.cluster.node.network import render_hosts, write_in_place
from olmtool.cluster.node.nodeobject import NodeObject, capacity
from olmtool.cluster.node.podnet import PodNetwork
from olmtool.cluster.node.runtime import ImageResolver, ResolvedImage
from olmtool.cluster.node.services import Address, ServiceProxy
from olmtool.cluster.node.worker import PodWorker
from olmtool.cluster.pki import KeyPair
from olmtool.cluster.provisioner import Provisioner

log = logging.getLogger(__name__)

JSON = dict[str, Any]
HOST_IP = "127.0.0.1"
HEARTBEAT = 10.0
STOP_GRACE = 10.0


class NodeAgent:
    """Runs the Pods the scheduler binds to ``node_name`` as processes on this machine.

    ``registry`` (``host:port``) is where olmtool's own images are pulled from, besides
    any loopback registry. ``backoff_base`` is the first crash-loop back-off (kubelet's
    10 s; the cap scales with it, 5 minutes for 10 s). ``stop_grace`` bounds the grace
    period containers get when the agent stops. ``network`` is the cluster network
    (:func:`olmtool.cluster.network.claim_network`); one agent per cluster network.
    ``serving`` (cert and key for 127.0.0.1) turns the kubelet API on, on
    ``kubelet_port`` (0: a free one).
    """

    def __init__(
        self,
        kubeconfig: Path,
        state_dir: Path,
        node_name: str = "olmtool-node",
        registry: str | None = None,
        backoff_base: float = 10.0,
        *,
        stop_grace: float = STOP_GRACE,
        heartbeat: float = HEARTBEAT,
        isolate: bool | None = None,
        network: ClusterNetwork | None = None,
        serving: KeyPair | None = None,
        kubelet_port: int = 0,
    ) -> None:
        self.kubeconfig = Path(kubeconfig)
        self.state_dir = Path(state_dir)
        self.node_name = node_name
        self.registry = registry
        self.backoff_base = float(backoff_base)
        self.stop_grace = stop_grace
        self.heartbeat = heartbeat
        self._isolate = isolate
        self.isolated = False
        self.host_ip = HOST_IP
        self.stop_event = threading.Event()
        self.workers: dict[str, PodWorker] = {}
        self._finished: dict[str, None] = {}  # uids of Pods whose worker ended (bounded)
        self._workers_lock = threading.Lock()
        self._hosts_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._events: queue.Queue[JSON] = queue.Queue(maxsize=1000)
        self.streams = Streams()
        self.allocatable: dict[str, str] = {}
        self.ca_bytes = b""
        self.kube: Kube
        self.api: PodApi  # what Pod workers ask the apiserver
        self.settings: NodeSettings  # what Pod workers know of the node
        self.provisioner: Provisioner | None = None
        self.network = network
        self.net: PodNetwork
        self.proxy: ServiceProxy | None = None
        self.started = False
        self.ready_at: float | None = None
        self.serving = serving
        self.kubelet_port = kubelet_port
        self.kubelet_api: KubeletServer | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Register the Node (Ready, untainted) and start watching Pods; returns at once
        after registration, with the Pod and heartbeat loops on background threads."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.state_dir.chmod(0o700)  # Pods' tokens and Secrets live under it
        self.kube = Kube(self.kubeconfig)
        self.isolated = process.isolation_available() if self._isolate is None else self._isolate
        if not self.isolated:
            log.warning(
                "no mount namespaces (needs root and util-linux unshare): containers share "
                "the host's /etc/hosts and every volume mountPath is rewritten"
            )
        self.pids = process.PidRecords(self.state_dir / "pids")
        killed = self.pids.kill_leftovers()
        if killed:
            log.info("killed %d container process groups left by a previous agent", killed)
        self.net = PodNetwork(self.state_dir, self.network)
        self.images = ImageResolver(self.state_dir / "images", self.registry)
        ca = self.kube.ca_file
        self.ca_bytes = Path(ca).read_bytes() if ca and Path(ca).is_file() else b""
        self.allocatable = capacity(self.state_dir)
        self.node = NodeObject(self.kube, self.node_name, self.host_ip, self.allocatable)
        self.api = PodApi(self.kube)
        self._start_networking()
        self.settings = NodeSettings(
            self.state_dir,
            self.host_ip,
            self.isolated,
            self.backoff_base,
            self.allocatable,
            self.ca_bytes,
            service_env=apiserver_env(self._apiserver_url()),
        )
        try:
            self._start_kubelet_api()
            self.register()
        except BaseException:  # a failed start leaves no bridge, route or listener behind
            self.stop_event.set()
            if self.kubelet_api:
                self.kubelet_api.stop()
            self._stop_networking()
            raise
        self.provisioner = Provisioner(self.kube, self.state_dir, self.streams)
        self.provisioner.start()
        for name, target in (
            ("heartbeat", self._heartbeat_loop),
            ("pods", self._watch_pods),
            ("events", self._event_loop),
        ):
            thread = threading.Thread(target=target, name=f"node-agent-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self.started = True

    def stop(self) -> None:
        """Stop every container (SIGTERM, SIGKILL after the grace period) and the loops."""
        if not self.started:
            return
        self.started = False
        self.stop_event.set()
        if self.kubelet_api:
            self.kubelet_api.stop()  # ends exec sessions before their containers stop
        if self.provisioner:
            self.provisioner.stop()
        with self._workers_lock:
            workers = list(self.workers.values())
        for worker in workers:
            grace = min(grace_period(worker.current_pod()), self.stop_grace)
            worker.shutdown(grace)
        deadline = time.monotonic() + self.stop_grace + 20
        for worker in workers:
            worker.done.wait(max(deadline - time.monotonic(), 0.1))
        self._mark_not_ready()
        self.streams.close()
        self._stop_networking()
        threads = self._threads + (self.provisioner.threads if self.provisioner else [])
        for thread in threads + (self.proxy.threads if self.proxy else []):
            thread.join(5)
        self.kube.close()

    def __enter__(self) -> NodeAgent:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_forever(self) -> None:
        while not self.stop_event.wait(1.0):
            pass

    def _start_kubelet_api(self) -> None:
        if self.serving is None or not self.ca_bytes:
            log.info("no serving certificate or CA: no kubelet API (kubectl logs and exec)")
            return
        self.kubelet_api = KubeletServer(
            self,
            self.serving.cert,
            self.serving.key,
            self.ca_bytes,
            self.host_ip,
            self.kubelet_port,
        )
        self.kubelet_api.start()
        self.kubelet_port = self.kubelet_api.port

    def pod_workers(self) -> list[PodWorker]:
        """The node's Pod workers (for the kubelet API)."""
        with self._workers_lock:
            return list(self.workers.values())

    # -- the Node ------------------------------------------------------------------------

    def register(self) -> None:
        """Create (or adopt) the Node, clear the taints the apiserver adds, post status."""
        self.node.kubelet_port = self.kubelet_port
        self.node.register()
        self.ready_at = time.monotonic()

    def _heartbeat_loop(self) -> None:
        while not self.stop_event.wait(self.heartbeat):
            try:
                self.node.heartbeat()
            except Exception as exc:
                if status_of(exc) == 404:  # someone deleted the Node: register again
                    try:
                        self.register()
                    except Exception as again:
                        log.warning("re-registering the node failed: %s", again)
                    continue
                log.warning("node heartbeat failed: %s", exc)

    def _mark_not_ready(self) -> None:
        try:
            self.node.mark_not_ready()
        except Exception as exc:  # the apiserver may already be gone
            log.debug("could not mark the node NotReady: %s", exc)

    # -- Pods ------------------------------------------------------------------------------

    def _watch_pods(self) -> None:
        watch_forever(
            self.kube.core.list_pod_for_all_namespaces,
            self._on_pod_event,
            self._on_pod_sync,
            self.stop_event,
            what="pods",
            streams=self.streams,
            field_selector=f"spec.nodeName={self.node_name}",
        )

    def _on_pod_sync(self, pods: Iterable[JSON]) -> None:
        seen = set()
        for pod in pods:
            seen.add(pod["metadata"]["uid"])
            self._on_pod_event("MODIFIED", pod)
        with self._workers_lock:
            vanished = [w for uid, w in self.workers.items() if uid not in seen]
        for worker in vanished:
            worker.deleted()

    def _on_pod_event(self, kind: str, pod: JSON) -> None:
        if self.stop_event.is_set():
            return
        uid = pod["metadata"]["uid"]
        with self._workers_lock:
            worker = self.workers.get(uid)
            if worker is None and uid in self._finished:
                return
            if worker is None and kind != "DELETED":
                worker = PodWorker(self, pod)
                self.workers[uid] = worker
                worker.start()
                return
        if worker is None:
            return
        if kind == "DELETED":
            worker.deleted(pod)
        else:
            worker.update(pod)

    def worker_done(self, worker: PodWorker) -> None:
        with self._workers_lock:
            if self.workers.get(worker.uid) is worker:
                del self.workers[worker.uid]
            if worker.shutdown_grace is None:
                self._finished[worker.uid] = None
                while len(self._finished) > 10000:
                    del self._finished[next(iter(self._finished))]

    # -- the PodHost of the workers (and nothing else of the agent is theirs) ----------

    def resolve_image(self, image: str, pull_policy: str | None) -> ResolvedImage:
        return self.images.resolve(image, pull_policy)

    def allocate_ip(self, namespace: str, name: str) -> str:
        return self.net.allocate(namespace, name)

    def sandbox(self, worker: PodWorker) -> str | None:
        path = self.net.sandbox(worker.uid, worker.ip)
        if path is not None and self.proxy:
            self.proxy.publish_host_ports(worker.uid, worker.current_pod(), worker.ip)
        return path

    def service_links(self, namespace: str, enable_links: bool) -> dict[str, str]:
        return self.proxy.links(namespace, enable_links) if self.proxy else {}

    def hosts_changed(self, worker: PodWorker) -> None:
        self._rewrite_hosts(worker)

    def release(self, worker: PodWorker) -> None:
        if self.proxy:
            self.proxy.withdraw_host_ports(worker.uid)
        self.net.remove_sandbox(worker.uid)
        self._release_ip(worker)
        self._rewrite_hosts(worker, removed=True)

    def record_process(self, pid: int, info: Mapping[str, str]) -> None:
        self.pids.record(pid, info)

    def forget_process(self, pid: int) -> None:
        self.pids.forget(pid)

    # -- networking ------------------------------------------------------------------------

    def _apiserver_url(self) -> str:
        """Where in-cluster clients reach the apiserver: the ``kubernetes`` Service when the
        Pods have a network of their own, else the apiserver's own address."""
        if self.network is not None and self.net.namespaces:
            return f"https://{self.network.apiserver_service_ip}:443"
        return self.kube.server

    def _start_networking(self) -> None:
        """The Pods' network and, where Pods have namespaces (only they can reach them),
        the proxy serving ClusterIPs and host ports."""
        self.net.start()
        if self.network is None or not self.net.namespaces:
            return
        self.proxy = ServiceProxy(
            self.kube,
            self.network,
            self.stop_event,
            self.streams,
            on_names=lambda: self._rewrite_hosts(None),
            on_bind_error=self._bind_failed,
        )
        try:
            self.proxy.start()
        except BaseException:
            self.stop_event.set()
            self._stop_networking()
            raise

    def _stop_networking(self) -> None:
        if self.proxy:
            self.proxy.stop()
        self.net.stop()

    def _bind_failed(self, group: str, address: Address, error: OSError) -> None:
        where = f"{address[0]}:{address[1]}"
        with self._workers_lock:
            worker = self.workers.get(group)
        if worker is None:
            log.warning("cannot listen on %s for %s: %s", where, group, error)
            return
        message = f"hostPort {where} cannot be forwarded to the Pod: {error.strerror or error}"
        self.event(worker.current_pod(), "Warning", "HostPortConflict", message)

    def _release_ip(self, worker: PodWorker) -> None:
        # a Pod re-created under the same name may already run and hold the address
        with self._workers_lock:
            others = [
                w
                for w in self.workers.values()
                if w is not worker and w.key == worker.key and not w.done.is_set()
            ]
        if not others:
            self.net.release(worker.namespace, worker.name)

    def _rewrite_hosts(self, changed: PodWorker | None, removed: bool = False) -> None:
        """Rewrite the hosts files of the Pods on this node (those whose content changes)."""
        with self._hosts_lock:
            with self._workers_lock:
                workers = [
                    w
                    for w in self.workers.values()
                    if w.ip and not w.done.is_set() and not (removed and w is changed)
                ]
            entries = [w.hosts_entry for w in workers]
            peers = [e for e in entries if e is not None]
            services = self.proxy.entries() if self.proxy else ()
            for worker in workers:
                own = worker.hosts_entry
                if own is None:
                    continue
                aliases = (worker.current_pod().get("spec") or {}).get("hostAliases") or []
                try:
                    content = render_hosts(own, peers, aliases, services=services)
                    write_in_place(worker.hosts_file, content)
                except OSError as exc:
                    log.warning("writing %s failed: %s", worker.hosts_file, exc)

    # -- events ------------------------------------------------------------------------------

    def event(
        self, pod: JSON, kind: str, reason: str, message: str, container: str | None = None
    ) -> None:
        """Record an Event about ``pod`` (sent by a background thread; best effort)."""
        meta = pod.get("metadata") or {}
        involved = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
        }
        if container:
            involved["fieldPath"] = f"spec.containers{{{container}}}"
        stamp = now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name')}.{uuid.uuid4().hex[:16]}",
                "namespace": meta.get("namespace"),
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": "kubelet", "host": self.node_name},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": "kubelet",
            "reportingInstance": self.node_name,
        }
        with contextlib.suppress(queue.Full):
            self._events.put_nowait(event)

    def _event_loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                event = self._events.get(timeout=1.0)
            except queue.Empty:
                continue
            try:
                self.kube.create(
                    f"/api/v1/namespaces/{event['metadata']['namespace']}/events", event
                )
            except Exception as exc:
                log.debug("event not recorded: %s", exc)
