"""Readiness, liveness and startup probes: ``httpGet`` (against the Pod IP), ``tcpSocket``
and ``exec`` (in the container's mount namespace), with kubelet's thresholds."""

from __future__ import annotations

import http.client
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]


@dataclass
class ProbeResult:
    ok: bool
    message: str = ""


def probe_settings(probe: JSON) -> tuple[float, float, float, int, int]:
    """``(initialDelay, period, timeout, successThreshold, failureThreshold)`` with
    Kubernetes' defaults."""
    return (
        float(probe.get("initialDelaySeconds") or 0),
        float(probe.get("periodSeconds") or 10),
        float(probe.get("timeoutSeconds") or 1),
        int(probe.get("successThreshold") or 1),
        int(probe.get("failureThreshold") or 3),
    )


def resolve_port(port: Any, ports: Sequence[JSON]) -> int:
    """A probe port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for entry in ports:
        if entry.get("name") == port:
            return int(entry["containerPort"])
    raise ValueError(f"no container port named {port!r}")


def _target(action: JSON, host: str, ports: Sequence[JSON]) -> tuple[str, int]:
    """The host (the action's, else the Pod IP) and port a probe or hook connects to;
    raises ValueError for a port name the container does not have."""
    return str(action.get("host") or host), resolve_port(action.get("port"), ports)


def http_get(action: JSON, host: str, ports: Sequence[JSON], timeout: float) -> ProbeResult:
    try:
        host, port = _target(action, host, ports)
    except ValueError as exc:
        return ProbeResult(False, str(exc))
    path = str(action.get("path") or "/")
    if not path.startswith("/"):
        path = "/" + path
    headers = {"User-Agent": "kube-probe/1.20", "Accept": "*/*"}
    for header in action.get("httpHeaders") or []:
        headers[str(header.get("name"))] = str(header.get("value"))
    if str(action.get("scheme") or "HTTP").upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=timeout, context=context
        )
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read(10240)
        if 200 <= response.status < 400:
            return ProbeResult(True)
        return ProbeResult(False, f"HTTP probe failed with statuscode: {response.status}")
    except (OSError, http.client.HTTPException) as exc:
        return ProbeResult(False, f'Get "http://{host}:{port}{path}": {exc}')
    finally:
        connection.close()


def tcp_socket(action: JSON, host: str, ports: Sequence[JSON], timeout: float) -> ProbeResult:
    try:
        host, port = _target(action, host, ports)
    except ValueError as exc:
        return ProbeResult(False, str(exc))
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return ProbeResult(True)
    except OSError as exc:
        return ProbeResult(False, f"dial tcp {host}:{port}: {exc}")


def run_exec(argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout: float) -> ProbeResult:
    try:
        done = subprocess.run(
            list(argv),
            env=dict(env),
            cwd=cwd or None,
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(False, f"command timed out after {timeout:g}s")
    except OSError as exc:
        return ProbeResult(False, str(exc))
    if done.returncode == 0:
        return ProbeResult(True)
    output = (done.stdout + done.stderr).decode(errors="replace").strip()[-500:]
    return ProbeResult(False, f"exit status {done.returncode}: {output}".rstrip(": "))


class Prober:
    """Runs one probe of one container instance on its own thread until stopped; reports
    each transition of the thresholded result through ``on_result(kind, ok, message)``."""

    def __init__(
        self,
        kind: str,
        probe: JSON,
        check: Callable[[float], ProbeResult],
        on_result: Callable[[str, bool, str], None],
        *,
        gate: threading.Event | None = None,
    ) -> None:
        self.kind = kind
        self.probe = probe
        self.check = check
        self.on_result = on_result
        self.gate = gate  # readiness and liveness wait for the startup probe
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"probe-{kind}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        delay, period, timeout, success_threshold, failure_threshold = probe_settings(self.probe)
        if self.gate is not None:
            while not self.gate.wait(0.2):
                if self.stopped.is_set():
                    return
        if self.stopped.wait(delay):
            return
        successes = failures = 0
        state: bool | None = None
        while not self.stopped.is_set():
            try:
                result = self.check(timeout)
            except Exception as exc:  # a probe bug must not kill the thread
                result = ProbeResult(False, f"probe error: {exc}")
            if self.stopped.is_set():
                return
            if result.ok:
                successes, failures = successes + 1, 0
                threshold = 1 if self.kind in ("liveness", "startup") else success_threshold
                if successes >= threshold and state is not True:
                    state = True
                    self.on_result(self.kind, True, "")
            else:
                successes, failures = 0, failures + 1
                if failures >= failure_threshold and state is not False:
                    state = False
                    self.on_result(self.kind, False, result.message)
                    if self.kind in ("liveness", "startup"):
                        return  # the container is restarted; its new instance gets a new prober
            if self.kind == "startup" and state is True:
                return  # a startup probe stops once it succeeded
            self.stopped.wait(period)
