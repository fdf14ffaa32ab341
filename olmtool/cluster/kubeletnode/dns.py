"""The cluster DNS of a real node: dnsmasq answering for the cluster's Services.

Pods resolve through the ``kube-dns`` Service (``10.96.i.10``, the kubelet's
``clusterDNS``), whose Endpoints name the host's end of the node's link
(``10.243.i.1``): kube-proxy DNATs the Pods' queries there, and this module's dnsmasq
listens on that address. Debian packages no CoreDNS, so Debian's dnsmasq serves the
records, fed through an ``addn-hosts`` file that this module rewrites from watches of
every Service and Endpoints (then SIGHUP: dnsmasq reads the file again):

* ``<name>.<ns>.svc.cluster.local``: the Service's ClusterIP, or for a headless Service
  the addresses of its ready endpoints (and of its not-ready ones when it publishes them);
* ``<hostname>.<name>.<ns>.svc.cluster.local``: each endpoint address with a hostname,
  which is how a StatefulSet's members are found through their governing Service.

Names under the cluster domain that the file lacks are NXDOMAIN (never forwarded);
every other name goes to the host's resolvers (``/etc/resolv.conf``), also for Pods with
``dnsPolicy: Default``, whose resolv.conf names the same address. An ``addn-hosts`` file
only gives A, AAAA and PTR records: SRV records (``_port._proto.<svc>...``) are not
served, nor Pod records (``<a-b-c-d>.<ns>.pod.cluster.local``).

While the cluster runs it also keeps the ``kube-dns`` Service and Endpoints in place and
restores the node's link and routes (:func:`.hostnet.ensure_node_network`) every few
seconds. Run it as::

    python -m olmtool.cluster.kubeletnode.dns --kubeconfig K --network-index I \\
        --hosts-file /run/olmtool/dns/<i>/hosts [--upstream-resolv /etc/resolv.conf] \\
        [--dnsmasq /usr/sbin/dnsmasq]

SIGTERM or SIGINT stop the watches and dnsmasq; it then exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import ctypes
import ipaddress
import logging
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from olmtool.cluster.kube import Kube, Streams, status_of, watch_forever
from olmtool.cluster.kubeletnode import hostnet
from olmtool.cluster.kubeletnode.kubelet import CLUSTER_DOMAIN
from olmtool.cluster.network import ClusterNetwork

# a fixed name: run with ``-m`` the module is ``__main__``
log = logging.getLogger("olmtool.cluster.kubeletnode.dns")

JSON = dict[str, Any]
DNSMASQ = "/usr/sbin/dnsmasq"
UPSTREAM_RESOLV = Path("/etc/resolv.conf")
HEADER = (
    "# the cluster's Services and endpoint hostnames, for dnsmasq (addn-hosts);\n"
    "# written by olmtool.cluster.kubeletnode.dns on every change\n"
)
DNS_NAMESPACE = "kube-system"
DNS_NAME = "kube-dns"
DNS_LABELS = {"k8s-app": "kube-dns", "kubernetes.io/name": "KubeDNS"}
DNS_PORTS = (("dns", "UDP"), ("dns-tcp", "TCP"))
INTERVAL = 5.0  # seconds between repairs (link, routes, kube-dns) and resolv.conf reads
DEBOUNCE = 0.1  # a burst of watch events (a Deployment scaling) gives one rewrite
POLL = 0.5  # the longest a stop request or dnsmasq's exit goes unnoticed
# names Kubernetes accepts for namespaces, Services and endpoint hostnames (DNS labels);
# anything else would make a broken or misleading hosts line
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# --- the records --------------------------------------------------------------------


def hosts_text(
    services: Iterable[JSON], endpoints: Iterable[JSON], domain: str = CLUSTER_DOMAIN
) -> str:
    """The dnsmasq ``addn-hosts`` file for these Services and Endpoints: one
    ``<ip> <name>`` line per record, sorted by name then address, duplicates removed.
    Objects missing fields (or with odd ones) give fewer lines, never an error."""
    by_key = {key: ep for ep in endpoints if (key := _key(ep)) is not None}
    records: set[tuple[str, str]] = set()
    for service in services:
        key = _key(service)
        spec = _dict(service.get("spec")) if key is not None else {}
        if key is None or spec.get("type") == "ExternalName":
            continue  # ExternalName is a CNAME, which a hosts file cannot say
        namespace, name = key
        fqdn = f"{name}.{namespace}.svc.{domain}"
        published = spec.get("publishNotReadyAddresses") is True
        addresses = _endpoint_addresses(by_key.get(key), not_ready=published)
        if _headless(spec):
            records.update((ip, fqdn) for ip, _hostname in addresses)
        else:
            records.update((ip, fqdn) for ip in _cluster_ips(spec))
        records.update((ip, f"{hostname}.{fqdn}") for ip, hostname in addresses if hostname)
    lines = [f"{ip} {name}" for ip, name in sorted(records, key=_record_order)]
    return HEADER + "".join(f"{line}\n" for line in lines)


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _label(value: object) -> str | None:
    return value if isinstance(value, str) and LABEL.fullmatch(value) else None


def _key(obj: object) -> tuple[str, str] | None:
    """(namespace, name) of an API object, when both are valid DNS labels."""
    meta = _dict(_dict(obj).get("metadata"))
    namespace, name = _label(meta.get("namespace")), _label(meta.get("name"))
    return (namespace, name) if namespace and name else None


def _ip(value: object) -> str | None:
    """``value`` as a normalised IP address, or None."""
    if not isinstance(value, str):
        return None
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def _headless(spec: JSON) -> bool:
    return spec.get("clusterIP") == "None" or _list(spec.get("clusterIPs"))[:1] == ["None"]


def _cluster_ips(spec: JSON) -> list[str]:
    """Every family's ClusterIP (``clusterIPs``, since 1.20), else ``clusterIP``."""
    candidates = _list(spec.get("clusterIPs")) or [spec.get("clusterIP")]
    return [ip for value in candidates if (ip := _ip(value)) is not None]


def _endpoint_addresses(endpoints: JSON | None, *, not_ready: bool) -> list[tuple[str, str]]:
    """(ip, hostname or "") of the ready addresses, and of the not-ready ones too when
    ``not_ready`` (a Service with ``publishNotReadyAddresses``)."""
    fields = ("addresses", "notReadyAddresses") if not_ready else ("addresses",)
    found = []
    for subset in _list(_dict(endpoints).get("subsets")):
        for field in fields:
            for address in _list(_dict(subset).get(field)):
                address = _dict(address)
                ip = _ip(address.get("ip"))
                if ip is not None:
                    found.append((ip, _label(address.get("hostname")) or ""))
    return found


def _record_order(record: tuple[str, str]) -> tuple[str, int, bytes]:
    ip = ipaddress.ip_address(record[0])
    return record[1], ip.version, ip.packed


class Objects:
    """The current objects of one kind by (namespace, name), as a watch reports them
    (its threads write, the main loop reads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, str], JSON] = {}

    def sync(self, items: list[JSON]) -> None:
        """A (re)list: exactly these objects."""
        fresh = {key: obj for obj in items if (key := _meta_key(obj)) is not None}
        with self._lock:
            self._items = fresh

    def event(self, kind: str, obj: JSON) -> None:
        key = _meta_key(obj)
        if key is None:
            return
        with self._lock:
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = obj

    def values(self) -> list[JSON]:
        with self._lock:
            return list(self._items.values())


def _meta_key(obj: object) -> tuple[str, str] | None:
    """(namespace, name) as given, for bookkeeping (:func:`hosts_text` validates)."""
    meta = _dict(_dict(obj).get("metadata"))
    namespace, name = meta.get("namespace"), meta.get("name")
    return (namespace, name) if isinstance(namespace, str) and isinstance(name, str) else None


# --- dnsmasq ------------------------------------------------------------------------


def upstream_servers(resolv_conf: str, *, exclude: Iterable[str] = ()) -> list[str]:
    """The ``nameserver`` addresses of a resolv.conf text, as dnsmasq ``--server`` values,
    in order and without duplicates; ``exclude`` (our own listen address: a loop) and
    ``0.0.0.0``/``::`` are left out. Loopback resolvers stay: dnsmasq runs in the
    host's network namespace, where ``127.0.0.53`` (systemd-resolved) or a local
    dnsmasq answer (only the Pods could not reach them, and they ask us)."""
    excluded = {ip for value in exclude if (ip := _ip(value)) is not None}
    servers: list[str] = []
    for line in resolv_conf.splitlines():
        fields = re.split(r"[#;]", line, maxsplit=1)[0].split()
        if len(fields) < 2 or fields[0] != "nameserver":
            continue
        address, _, scope = fields[1].partition("%")  # fe80::1%eth0: link-local
        ip = _ip(address)
        if ip is None or ipaddress.ip_address(ip).is_unspecified or ip in excluded:
            continue
        server = f"{ip}@{scope}" if scope else ip  # dnsmasq: send through that interface
        if server not in servers:
            servers.append(server)
    return servers


def read_upstreams(path: Path, network: ClusterNetwork) -> list[str]:
    """:func:`upstream_servers` of a file (OSError when it cannot be read)."""
    return upstream_servers(path.read_text(), exclude=[network.host_address])


def reverse_zone(cidr: str) -> str | None:
    """The ``in-addr.arpa`` zone of an IPv4 network on an octet boundary, else None."""
    network = ipaddress.ip_network(cidr, strict=False)
    if network.version != 4 or network.prefixlen % 8 or not network.prefixlen:
        return None
    octets = str(network.network_address).split(".")[: network.prefixlen // 8]
    return ".".join([*reversed(octets), "in-addr.arpa"])


def dnsmasq_args(
    network: ClusterNetwork,
    hosts_file: Path,
    upstreams: Iterable[str],
    *,
    listen: str | None = None,
    port: int = 53,
    domain: str = CLUSTER_DOMAIN,
) -> list[str]:
    """dnsmasq's arguments (without the program): records from ``hosts_file`` only,
    listening on ``listen`` (the host's end of the node's link) port ``port``, names
    under ``domain`` and the cluster's reverse zones answered locally, everything else
    forwarded to ``upstreams``."""
    local_zones = [
        domain,
        *filter(None, map(reverse_zone, (network.service_cidr, network.pod_cidr))),
    ]
    return [
        "--keep-in-foreground",
        "--conf-file=/dev/null",  # not /etc/dnsmasq.conf (nor the conf-dir Debian names)
        "--no-hosts",  # not /etc/hosts: only the cluster's records
        "--no-resolv",  # upstreams come from --server (ours skip our own address)
        f"--addn-hosts={hosts_file}",
        f"--listen-address={listen or network.host_address}",
        # bound to that address only (other clusters' dnsmasqs and the host's resolver
        # keep port 53 elsewhere); "dynamic": dnsmasq starts even while the link is
        # missing and listens again once ensure_node_network restores it, where
        # --bind-interfaces would exit ("cannot assign requested address")
        "--bind-dynamic",
        f"--port={port}",
        "--pid-file=",  # none: we hold its pid
        "--log-facility=-",  # stderr, with ours (no --log-queries)
        # the records come from the file, not a cache; forwarded answers are always fresh
        "--cache-size=0",
        "--domain-needed",  # plain names ("foo") are never forwarded
        *(f"--local=/{zone}/" for zone in local_zones),  # unknown there: NXDOMAIN
        *(f"--server={server}" for server in upstreams),
    ]


def write_hosts(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically (dnsmasq may read it any moment), mode 0644.

    dnsmasq drops its privileges to ``nobody`` once it has bound port 53 and reads the
    file as nobody (at start and on every SIGHUP), so the file must be world-readable
    (the umask must not decide) and its directories searchable by others: the caller
    puts it under ``/run/olmtool`` (mode 0755). We keep that privilege drop rather than
    pass ``--user=root``: dnsmasq parses packets from every Pod."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.chmod(0o644)
    os.replace(tmp, path)


def reachable_by_others(path: Path) -> bool:
    """Whether every directory above ``path`` lets other users (``nobody``) through."""
    for directory in path.resolve().parents:
        try:
            if not os.stat(directory).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def stop_strays(hosts_file: Path) -> list[int]:
    """SIGKILL every dnsmasq serving ``hosts_file``: one whose parent was killed outlives
    it (dnsmasq drops privileges, which clears the parent-death signal), and would keep
    the address; returns their pids."""
    stopped = []
    marker = f"--addn-hosts={hosts_file}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"dnsmasq") and marker in argv:
            with contextlib.suppress(OSError):
                os.kill(int(proc.name), signal.SIGKILL)
                stopped.append(int(proc.name))
    return stopped


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when the thread that started it ends
    (our process killed with SIGKILL included), so no dnsmasq outlives us holding the
    address. PR_SET_PDEATHSIG follows the *thread*: start children from the main one."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    parent = os.getpid()

    def preexec() -> None:
        # SIGHUP means "reload" to dnsmasq: never inherit it ignored (from nohup)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class DnsServer:
    """dnsmasq as our child: started, told about new records (SIGHUP), restarted with
    back-off when it exits, stopped. Called from one thread (the main one)."""

    def __init__(
        self,
        network: ClusterNetwork,
        hosts_file: Path,
        *,
        binary: str = DNSMASQ,
        listen: str | None = None,
        port: int = 53,
        domain: str = CLUSTER_DOMAIN,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        settle: float = 0.5,
        stable: float = 30.0,
    ) -> None:
        self.network = network
        self.hosts_file = hosts_file
        self.binary = binary
        self.listen = listen
        self.port = port
        self.domain = domain
        self.backoff = backoff
        self.max_backoff = max_backoff
        # a SIGHUP that arrives before dnsmasq set its handler kills it: wait this long
        # after a start before sending one
        self.settle = settle
        self.stable = stable  # a run this long resets the back-off
        self.upstreams: list[str] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._text: str | None = None
        self._started = 0.0
        self._delay = backoff
        self._restart_at: float | None = None

    def argv(self) -> list[str]:
        args = dnsmasq_args(
            self.network, self.hosts_file, self.upstreams,
            listen=self.listen, port=self.port, domain=self.domain,
        )  # fmt: skip
        return [self.binary, *args]

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, upstreams: Iterable[str]) -> None:
        """Start dnsmasq. A hosts file left by an earlier run is served until the first
        :meth:`apply` (the Services rarely changed meanwhile); none: an empty one."""
        self.upstreams = list(upstreams)
        if not self.hosts_file.exists():
            write_hosts(self.hosts_file, hosts_text([], [], self.domain))
        if not reachable_by_others(self.hosts_file):
            log.warning("%s is not readable by nobody, dnsmasq's user", self.hosts_file)
        if stopped := stop_strays(self.hosts_file):
            log.info("stopped dnsmasq left by an earlier run: pid %s", ", ".join(map(str, stopped)))
        self._spawn()

    def _spawn(self) -> None:
        self.process = subprocess.Popen(
            self.argv(), stdin=subprocess.DEVNULL, preexec_fn=die_with_parent()
        )
        self._started = time.monotonic()
        self._restart_at = None
        log.info(
            "dnsmasq started (pid %d) on %s:%d, upstream servers: %s",
            self.process.pid, self.listen or self.network.host_address, self.port,
            " ".join(self.upstreams) or "none",
        )  # fmt: skip

    def apply(self, text: str) -> bool:
        """Serve the records of ``text`` (:func:`hosts_text`); False when unchanged."""
        if text == self._text:
            return False
        write_hosts(self.hosts_file, text)
        self._text = text
        self.reload()
        return True

    def reload(self) -> None:
        """SIGHUP: dnsmasq reads the hosts file again (and empties its cache)."""
        if self.process is None or not self.running:
            return  # its next start reads the file anyway
        early = self._started + self.settle - time.monotonic()
        if early > 0:
            time.sleep(early)
        self.process.send_signal(signal.SIGHUP)

    def set_upstreams(self, upstreams: Iterable[str]) -> bool:
        """Restart dnsmasq with other upstream servers (they are arguments); False when
        they are the same."""
        upstreams = list(upstreams)
        if upstreams == self.upstreams:
            return False
        self.upstreams = upstreams
        if self.process is not None:
            self._terminate()
            self._try_spawn(time.monotonic())
        return True

    def supervise(self) -> None:
        """Restart dnsmasq if it exited, once its back-off has passed."""
        if self.process is None or self.process.poll() is None:
            return
        now = time.monotonic()
        if self._restart_at is None:
            self._restart_at = now + self._next_delay(self.process.returncode, now)
        if now >= self._restart_at:
            self._try_spawn(now)

    def _try_spawn(self, now: float) -> None:
        """Start dnsmasq again; if it cannot be (its binary gone), later."""
        try:
            self._spawn()
        except OSError as exc:
            log.error("cannot start %s: %s", self.binary, exc)
            self._started = now  # no run: the back-off keeps growing
            self._restart_at = now + self._next_delay(None, now)

    def _next_delay(self, code: int | None, now: float) -> float:
        ran = now - self._started
        if code == -signal.SIGHUP:
            log.warning("dnsmasq was killed by an early SIGHUP; restarting")
            return 0.0  # it had not set its handler yet: nothing wrong with it
        if ran >= self.stable:
            self._delay = self.backoff
        delay = self._delay
        self._delay = min(self._delay * 2, self.max_backoff)
        if code is not None:
            log.warning(
                "dnsmasq exited (%s) after %.1f s; restarting in %.1f s",
                _exit_text(code), ran, delay,
            )  # fmt: skip
        return delay

    def stop(self) -> None:
        if self.process is not None:
            self._terminate()
            self.process = None

    def _terminate(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _exit_text(code: int) -> str:
    if code < 0:
        with_name = signal.Signals(-code).name if -code in signal.valid_signals() else -code
        return f"signal {with_name}"
    return f"status {code}"


# --- the kube-dns Service -----------------------------------------------------------

SERVICES = f"/api/v1/namespaces/{DNS_NAMESPACE}/services"
ENDPOINTS = f"/api/v1/namespaces/{DNS_NAMESPACE}/endpoints"


def dns_service(network: ClusterNetwork) -> JSON:
    """``kube-system/kube-dns`` at the kubelet's ``clusterDNS``; no selector: its
    Endpoints are ours (:func:`dns_endpoints`), not the endpoints controller's."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": DNS_NAME, "namespace": DNS_NAMESPACE, "labels": dict(DNS_LABELS)},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": network.dns_ip,
            "ports": [
                {"name": name, "port": 53, "protocol": protocol, "targetPort": 53}
                for name, protocol in DNS_PORTS
            ],
        },
    }


def dns_endpoints(network: ClusterNetwork) -> JSON:
    """The address dnsmasq listens on: the host's end of the node's link."""
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": DNS_NAME, "namespace": DNS_NAMESPACE, "labels": dict(DNS_LABELS)},
        "subsets": [
            {
                "addresses": [{"ip": network.host_address}],
                "ports": [
                    {"name": name, "port": 53, "protocol": protocol} for name, protocol in DNS_PORTS
                ],
            }
        ],
    }


def _labelled(obj: JSON) -> bool:
    labels = _dict(_dict(obj.get("metadata")).get("labels"))
    return all(labels.get(key) == value for key, value in DNS_LABELS.items())


def _service_ports(spec: JSON) -> list[tuple[str, str, str, str]]:
    """Ports as compared (text: odd values must not break sorting); the server fills
    in defaults (protocol, targetPort)."""
    ports = []
    for port in _list(spec.get("ports")):
        port = _dict(port)
        number = port.get("port")
        target = port.get("targetPort", number)
        ports.append(
            (str(port.get("name")), str(port.get("protocol") or "TCP"), str(number), str(target))
        )
    return sorted(ports)


def _service_fixable(existing: JSON, desired: JSON) -> bool:
    """Whether a PUT can make ``existing`` the Service we want: ClusterIPs and a change
    of type need a new object."""
    spec, want = _dict(existing.get("spec")), desired["spec"]
    return spec.get("clusterIP") == want["clusterIP"] and spec.get("type") == want["type"]


def _service_matches(existing: JSON, desired: JSON) -> bool:
    spec, want = _dict(existing.get("spec")), desired["spec"]
    return (
        _labelled(existing)
        and _service_fixable(existing, desired)
        and not spec.get("selector")
        and _service_ports(spec) == _service_ports(want)
    )


def _service_update(existing: JSON, desired: JSON) -> JSON:
    updated = copy.deepcopy(existing)
    meta = updated.setdefault("metadata", {})
    meta["labels"] = {**_dict(meta.get("labels")), **DNS_LABELS}
    spec = updated.setdefault("spec", {})
    spec.pop("selector", None)
    spec["ports"] = desired["spec"]["ports"]
    return updated


def _subsets(obj: JSON) -> list[tuple[list[str], list[str], list[tuple[str, str, str]]]]:
    """Endpoints subsets as compared: addresses and ports as sorted text."""
    found = []
    for subset in _list(obj.get("subsets")):
        subset = _dict(subset)
        ready = sorted(str(_dict(a).get("ip")) for a in _list(subset.get("addresses")))
        waiting = sorted(str(_dict(a).get("ip")) for a in _list(subset.get("notReadyAddresses")))
        ports = sorted(
            (str(p.get("name")), str(p.get("protocol") or "TCP"), str(p.get("port")))
            for p in map(_dict, _list(subset.get("ports")))
        )
        found.append((ready, waiting, ports))
    return found


def _endpoints_matches(existing: JSON, desired: JSON) -> bool:
    return _labelled(existing) and _subsets(existing) == _subsets(desired)


def _endpoints_update(existing: JSON, desired: JSON) -> JSON:
    updated = copy.deepcopy(existing)
    meta = updated.setdefault("metadata", {})
    meta["labels"] = {**_dict(meta.get("labels")), **DNS_LABELS}
    updated["subsets"] = desired["subsets"]
    return updated


def _ensure(
    kube: Kube,
    collection: str,
    desired: JSON,
    matches: Callable[[JSON, JSON], bool],
    update: Callable[[JSON, JSON], JSON],
    fixable: Callable[[JSON, JSON], bool] = lambda existing, desired: True,
) -> str | None:
    """``desired`` in ``collection``: created, replaced (PUT, with the resourceVersion
    read: a concurrent change fails it) or made anew when a PUT cannot fix it. What was
    done, or None when it already matched."""
    path = f"{collection}/{desired['metadata']['name']}"
    existing = kube.get_or_none(path)
    if existing is None:
        try:
            kube.create(collection, desired)
            return "created"
        except Exception as exc:
            if status_of(exc) != 409:
                raise
            existing = kube.get(path)  # created meanwhile (an earlier run of ours)
    if matches(existing, desired):
        return None
    if not fixable(existing, desired):
        kube.delete(path)
        kube.create(collection, desired)
        return "re-created"
    kube.put(path, update(existing, desired))
    return "replaced"


def ensure_dns_service(
    kube: Kube,
    network: ClusterNetwork,
    *,
    attempts: int = 5,
    delay: float = 0.5,
    wait: Callable[[float], object] = time.sleep,
) -> list[str]:
    """The ``kube-dns`` Service and Endpoints as :func:`dns_service` and
    :func:`dns_endpoints` say, trying ``attempts`` times (the apiserver may be starting,
    or kube-system not there yet); what was done, e.g. ``["created Service"]``."""
    for attempt in range(1, attempts + 1):
        try:
            done = []
            service = _ensure(
                kube, SERVICES, dns_service(network), _service_matches, _service_update,
                _service_fixable,
            )  # fmt: skip
            if service:
                done.append(f"{service} Service")
            endpoints = _ensure(
                kube, ENDPOINTS, dns_endpoints(network), _endpoints_matches, _endpoints_update
            )
            if endpoints:
                done.append(f"{endpoints} Endpoints")
            for what in done:
                log.info("%s %s/%s", what, DNS_NAMESPACE, DNS_NAME)
            return done
        except Exception as exc:
            if attempt >= attempts:
                raise
            log.info("kube-dns not ensured yet (%s); trying again", _short(exc))
            wait(delay)
            delay = min(delay * 2, 5.0)
    return []


def _short(exc: BaseException) -> str:
    status = status_of(exc)
    return f"{status} {getattr(exc, 'reason', '')}".strip() if status else f"{exc}"


# --- the loop -----------------------------------------------------------------------


class ClusterDns:
    """Watches Services and Endpoints, feeds :class:`DnsServer`, repairs the node's link
    and the kube-dns objects. :meth:`run` in the main thread until :meth:`stop`."""

    def __init__(
        self,
        kube: Kube,
        network: ClusterNetwork,
        server: DnsServer,
        *,
        upstream_resolv: Path = UPSTREAM_RESOLV,
        domain: str = CLUSTER_DOMAIN,
        interval: float = INTERVAL,
        poll: float = POLL,
    ) -> None:
        self.kube = kube
        self.network = network
        self.server = server
        self.upstream_resolv = upstream_resolv
        self.domain = domain
        self.interval = interval
        self.poll = poll
        self.services = Objects()
        self.endpoints = Objects()
        self.changed = threading.Event()
        self.stop_event = threading.Event()
        self.streams = Streams()
        self.threads: list[threading.Thread] = []
        # set by a signal handler: a plain flag, as Event.set could deadlock there (the
        # handler runs in the main thread, which may hold the Event's lock)
        self.stopping = False
        self._problems: dict[str, str] = {}

    def stop(self) -> None:
        """Safe in a signal handler: :meth:`run` notices within ``poll`` seconds."""
        self.stopping = True

    def run(self) -> None:
        # the main thread starts dnsmasq: its PR_SET_PDEATHSIG follows this thread
        self.server.start(self._upstreams() or [])
        core = self.kube.core
        self._thread("services", self._watch, core.list_service_for_all_namespaces, self.services)
        self._thread(
            "endpoints", self._watch, core.list_endpoints_for_all_namespaces, self.endpoints
        )
        self._thread("repair", self._repair)
        next_read = time.monotonic() + self.interval
        try:
            while not self.stopping:
                if self.changed.wait(self.poll) and not self.stopping:
                    time.sleep(DEBOUNCE)
                    self.changed.clear()
                    self.apply()
                self.server.supervise()
                if time.monotonic() >= next_read:
                    next_read = time.monotonic() + self.interval
                    upstreams = self._upstreams()
                    if upstreams is not None and self.server.set_upstreams(upstreams):
                        log.info("upstream servers changed: %s", " ".join(upstreams) or "none")
        finally:
            self.stop_event.set()
            self.streams.close()
            self.server.stop()
            for thread in self.threads:
                thread.join(timeout=2)

    def apply(self) -> None:
        text = hosts_text(self.services.values(), self.endpoints.values(), self.domain)
        try:
            changed = self.server.apply(text)
        except OSError as exc:  # /run full, say: try again with the next round
            self._note("hosts file", f"cannot write {self.server.hosts_file}: {exc}")
            self.changed.set()
            return
        self._problems.pop("hosts file", None)
        if changed:
            names = text.count("\n") - HEADER.count("\n")
            log.info("records updated: %d lines in %s", names, self.server.hosts_file)

    def _thread(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=f"dns-{name}", daemon=True)
        thread.start()
        self.threads.append(thread)

    def _watch(self, list_func: Callable[..., Any], objects: Objects) -> None:
        def on_event(kind: str, obj: JSON) -> None:
            objects.event(kind, obj)
            self.changed.set()

        def on_sync(items: list[JSON]) -> None:
            objects.sync(items)
            self.changed.set()

        watch_forever(
            list_func, on_event, on_sync, self.stop_event,
            what=list_func.__name__, streams=self.streams,
        )  # fmt: skip

    def _repair(self) -> None:
        """Every ``interval``: the node's link and routes, the kube-dns objects (the
        first time with retries: the apiserver may have just started)."""
        first = True
        while not self.stop_event.is_set():
            self._try("node network", lambda: hostnet.ensure_node_network(self.network))
            self._try("kube-dns", self._ensure_dns_first if first else self._ensure_dns)
            first = False
            self.stop_event.wait(self.interval)

    def _ensure_dns_first(self) -> None:
        ensure_dns_service(self.kube, self.network, attempts=5, wait=self.stop_event.wait)

    def _ensure_dns(self) -> None:
        ensure_dns_service(self.kube, self.network, attempts=1)

    def _try(self, what: str, action: Callable[[], object]) -> None:
        """``action``, its failure logged once until it changes or succeeds again."""
        try:
            action()
        except Exception as exc:
            self._note(what, f"ensuring {what} failed: {_short(exc)}")
            return
        if self._problems.pop(what, None) is not None:
            log.info("%s ensured again", what)

    def _note(self, what: str, problem: str) -> None:
        """A warning, unless it is the one logged last for ``what``."""
        if self._problems.get(what) != problem:
            log.warning("%s", problem)
        self._problems[what] = problem

    def _upstreams(self) -> list[str] | None:
        """The upstream servers now; None when the file cannot be read (keep them)."""
        try:
            upstreams = read_upstreams(self.upstream_resolv, self.network)
        except OSError as exc:
            self._note("resolv", f"cannot read {self.upstream_resolv}: {exc.strerror or exc}")
            return None
        self._problems.pop("resolv", None)
        return upstreams


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m olmtool.cluster.kubeletnode.dns",
        description="The cluster DNS of a real node (dnsmasq fed with the Services).",
    )
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--network-index", type=int, required=True, help="1-254")
    parser.add_argument("--hosts-file", type=Path, required=True, help="dnsmasq's records")
    parser.add_argument("--upstream-resolv", type=Path, default=UPSTREAM_RESOLV)
    parser.add_argument("--dnsmasq", default=DNSMASQ)
    parser.add_argument("--domain", default=CLUSTER_DOMAIN)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    if not os.access(args.dnsmasq, os.X_OK):
        log.error("%s is not there (apt-get install dnsmasq-base)", args.dnsmasq)
        return 1
    network = ClusterNetwork(args.network_index)
    kube = Kube(args.kubeconfig)
    server = DnsServer(network, args.hosts_file, binary=args.dnsmasq, domain=args.domain)
    dns = ClusterDns(
        kube, network, server, upstream_resolv=args.upstream_resolv, domain=args.domain
    )
    signal.signal(signal.SIGTERM, lambda signum, frame: dns.stop())
    signal.signal(signal.SIGINT, lambda signum, frame: dns.stop())
    try:
        dns.run()
    finally:
        kube.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
