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
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from olmtool.cluster.kubeletnode import hostnet
from olmtool.cluster.kubeletnode.dnsrecords import HEADER, Objects, hosts_text, valid_ip
from olmtool.cluster.kubeletnode.dnsservice import (
    _short,
    ensure_dns_service,
)
from olmtool.cluster.kubeletnode.kubelet import CLUSTER_DOMAIN
from olmtool.cluster.network import ClusterNetwork
from olmtool.kube import JSON, Kube, Streams, configure_logging, watch_forever

# a fixed name: run with ``-m`` the module is ``__main__``
log = logging.getLogger("olmtool.cluster.kubeletnode.dns")

DNSMASQ = "/usr/sbin/dnsmasq"
UPSTREAM_RESOLV = Path("/etc/resolv.conf")
INTERVAL = 5.0  # seconds between repairs (link, routes, kube-dns) and resolv.conf reads
DEBOUNCE = 0.1  # a burst of watch events (a Deployment scaling) gives one rewrite
POLL = 0.5  # the longest a stop request or dnsmasq's exit goes unnoticed
# names Kubernetes accepts for namespaces, Services and endpoint hostnames (DNS labels);
# anything else would make a broken or misleading hosts line
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# --- dnsmasq ------------------------------------------------------------------------


def upstream_servers(resolv_conf: str, *, exclude: Iterable[str] = ()) -> list[str]:
    """The ``nameserver`` addresses of a resolv.conf text, as dnsmasq ``--server`` values,
    in order and without duplicates; ``exclude`` (our own listen address: a loop) and
    ``0.0.0.0``/``::`` are left out. Loopback resolvers stay: dnsmasq runs in the
    host's network namespace, where ``127.0.0.53`` (systemd-resolved) or a local
    dnsmasq answer (only the Pods could not reach them, and they ask us)."""
    excluded = {ip for value in exclude if (ip := valid_ip(value)) is not None}
    servers: list[str] = []
    for line in resolv_conf.splitlines():
        fields = re.split(r"[#;]", line, maxsplit=1)[0].split()
        if len(fields) < 2 or fields[0] != "nameserver":
            continue
        address, _, scope = fields[1].partition("%")  # fe80::1%eth0: link-local
        ip = valid_ip(address)
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


@dataclass(eq=False)
class DnsServer:
    """dnsmasq as our child: started, told about new records (SIGHUP), restarted with
    back-off when it exits, stopped. Called from one thread (the main one)."""

    network: ClusterNetwork
    hosts_file: Path
    _: KW_ONLY
    binary: str = DNSMASQ
    listen: str | None = None
    port: int = 53
    domain: str = CLUSTER_DOMAIN
    backoff: float = 1.0
    max_backoff: float = 30.0
    # a SIGHUP that arrives before dnsmasq set its handler kills it: wait this long after
    # a start before sending one
    settle: float = 0.5
    stable: float = 30.0  # a run this long resets the back-off
    upstreams: list[str] = field(default_factory=list, init=False)
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _text: str | None = field(default=None, init=False)
    _started: float = field(default=0.0, init=False)
    _delay: float = field(default=0.0, init=False)
    _restart_at: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._delay = self.backoff

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


@dataclass(eq=False)
class ClusterDns:
    """Watches Services and Endpoints, feeds :class:`DnsServer`, repairs the node's link
    and the kube-dns objects. :meth:`run` in the main thread until :meth:`stop`."""

    kube: Kube
    network: ClusterNetwork
    server: DnsServer
    _: KW_ONLY
    upstream_resolv: Path = UPSTREAM_RESOLV
    domain: str = CLUSTER_DOMAIN
    interval: float = INTERVAL
    poll: float = POLL
    services: Objects = field(default_factory=Objects, init=False)
    endpoints: Objects = field(default_factory=Objects, init=False)
    changed: threading.Event = field(default_factory=threading.Event, init=False)
    stop_event: threading.Event = field(default_factory=threading.Event, init=False)
    streams: Streams = field(default_factory=Streams, init=False)
    threads: list[threading.Thread] = field(default_factory=list, init=False)
    # set by a signal handler: a plain flag, as Event.set could deadlock there (the
    # handler runs in the main thread, which may hold the Event's lock)
    stopping: bool = field(default=False, init=False)
    _problems: dict[str, str] = field(default_factory=dict, init=False)

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
    configure_logging(verbose=args.verbose)
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
