"""The Pod worker's transitions without a cluster: a fake host stands for the node agent
(and the apiserver behind it); containers are short ``sh`` processes."""

from __future__ import annotations

import copy
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from olmtool.cluster.node.host import NodeSettings
from olmtool.cluster.node.kube import PodApi
from olmtool.cluster.node.netns import SandboxError
from olmtool.cluster.node.runtime import DEFAULT_PATH, ImageError, ResolvedImage
from olmtool.cluster.node.worker import PodWorker

JSON = dict[str, Any]
SH = ResolvedImage("busybox", "host:///bin/sh", cmd=["sh"], env={"PATH": DEFAULT_PATH})
TIMEOUT = 15.0

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a host sh")


class FakeApi(PodApi):
    """The apiserver, as a worker uses it: records what is posted."""

    def __init__(self) -> None:  # no Kube: nothing may reach a real apiserver
        self.statuses: list[JSON] = []
        self.deleted: list[tuple[str, str, str]] = []
        self.configmaps: dict[tuple[str, str], JSON] = {}
        self._lock = threading.Lock()

    def configmap(self, namespace: str, name: str) -> JSON | None:
        return self.configmaps.get((namespace, name))

    def secret(self, namespace: str, name: str) -> JSON | None:
        return None

    def claim(self, namespace: str, name: str) -> JSON | None:
        return None

    def persistent_volume(self, name: str) -> JSON | None:
        return None

    def automount_token(self, namespace: str, account: str) -> bool:
        return False

    def request_token(
        self, namespace: str, account: str, source: JSON, pod: JSON
    ) -> tuple[str, float]:
        return "token", 3600.0

    def patch_status(self, namespace: str, name: str, status: JSON) -> bool:
        with self._lock:
            self.statuses.append(copy.deepcopy(status))
        return True

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        self.deleted.append((namespace, name, uid))

    def latest(self) -> JSON:
        with self._lock:
            return self.statuses[-1] if self.statuses else {}


class FakeHost:
    """Exactly the members of :class:`PodHost`, so a worker that used anything else of
    the agent fails here."""

    def __init__(self, state_dir: Path, images: Mapping[str, ResolvedImage | Exception]):
        self.settings = NodeSettings(state_dir=state_dir, backoff_base=0.2)
        self.api = FakeApi()
        self.images = dict(images)
        self.events: list[tuple[str, str, str | None]] = []
        self.processes: dict[int, Mapping[str, str]] = {}
        self.released: list[str] = []
        self.sandbox_failures = 0
        self.finished = threading.Event()

    def resolve_image(self, image: str, pull_policy: str | None) -> ResolvedImage:
        found = self.images.get(image, ImageError(f'image "{image}" is not available'))
        if isinstance(found, Exception):
            raise found
        return found

    def allocate_ip(self, namespace: str, name: str) -> str:
        return "127.1.0.1"

    def sandbox(self, worker: PodWorker) -> str | None:
        if self.sandbox_failures:
            self.sandbox_failures -= 1
            raise SandboxError("ip netns add: Operation not permitted")
        return None  # the host's network

    def service_links(self, namespace: str, enable_links: bool) -> Mapping[str, str]:
        return {"WEB_SERVICE_HOST": "10.96.1.10"} if enable_links else {}

    def hosts_changed(self, worker: PodWorker) -> None:
        pass

    def release(self, worker: PodWorker) -> None:
        self.released.append(worker.key)

    def record_process(self, pid: int, info: Mapping[str, str]) -> None:
        self.processes[pid] = info

    def forget_process(self, pid: int) -> None:
        self.processes.pop(pid, None)

    def event(
        self, pod: JSON, kind: str, reason: str, message: str, container: str | None = None
    ) -> None:
        self.events.append((reason, message, container))

    def worker_done(self, worker: PodWorker) -> None:
        self.finished.set()


def container(name: str, script: str, image: str = "busybox", **extra: Any) -> JSON:
    return {"name": name, "image": image, "command": ["sh", "-c", script], **extra}


def make_pod(
    containers: list[JSON], init: list[JSON] | None = None, policy: str = "Always"
) -> JSON:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "restartPolicy": policy,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "initContainers": init or [],
            "containers": containers,
        },
    }


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path, {"busybox": SH})


@pytest.fixture
def run(host: FakeHost) -> Iterator[Callable[[JSON], PodWorker]]:
    """Start a worker for a Pod; it is shut down (its processes killed) at the end."""
    workers: list[PodWorker] = []

    def start(pod: JSON) -> PodWorker:
        worker = PodWorker(host, pod)
        workers.append(worker)
        worker.start()
        return worker

    yield start
    for worker in workers:
        worker.shutdown(0.5)
        assert worker.done.wait(TIMEOUT)


def wait_for(api: FakeApi, check: Callable[[JSON], bool], what: str) -> JSON:
    """The first reported status (from the latest back) that passes ``check``."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        latest = api.latest()
        if latest and check(latest):
            return latest
        time.sleep(0.02)
    raise AssertionError(f"no status with {what}; last: {api.latest()}")


def state_of(status: JSON, index: int = 0, key: str = "containerStatuses") -> JSON:
    return status[key][index]["state"]


def test_a_started_container_runs_and_is_ready(host: FakeHost, run: Callable) -> None:
    worker = run(make_pod([container("main", "sleep 30")]))
    status = wait_for(host.api, lambda s: s["phase"] == "Running", "phase Running")
    entry = status["containerStatuses"][0]
    assert "running" in entry["state"]
    assert entry["ready"] is True and entry["started"] is True
    pid = int(entry["containerID"].removeprefix("olmtool://"))
    assert host.processes[pid]["container"] == "main"
    assert status["podIP"] == "127.1.0.1"
    ready = {c["type"]: c["status"] for c in status["conditions"]}
    assert ready["Ready"] == "True"
    assert ("Started", "Started container main", "main") in host.events
    assert worker.final_phase is None


def test_exit_0_with_restart_policy_never_succeeds(host: FakeHost, run: Callable) -> None:
    worker = run(make_pod([container("main", "exit 0")], policy="Never"))
    status = wait_for(host.api, lambda s: s["phase"] == "Succeeded", "phase Succeeded")
    terminated = state_of(status)["terminated"]
    assert terminated["exitCode"] == 0
    assert terminated["reason"] == "Completed"
    assert terminated["containerID"].startswith("olmtool://")
    assert status["containerStatuses"][0]["restartCount"] == 0
    conditions = {c["type"]: c.get("reason") for c in status["conditions"]}
    assert conditions["Ready"] == "PodCompleted"
    assert worker.final_phase == "Succeeded"
    assert not host.processes


def test_a_crashing_container_backs_off_then_restarts(host: FakeHost, run: Callable) -> None:
    run(make_pod([container("main", "exit 3")]))
    status = wait_for(
        host.api,
        lambda s: s["containerStatuses"][0]["restartCount"] >= 2 and "waiting" in state_of(s),
        "two restarts",
    )
    assert status["phase"] == "Running"  # restartPolicy Always: never finished
    waiting = state_of(status)["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert waiting["message"].startswith("back-off ")
    assert "container=main pod=p_ns(u1)" in waiting["message"]
    last = status["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 3 and last["reason"] == "Error"
    logs = sorted(p.name for p in host.settings.state_dir.glob("pods/*/main/*.log"))
    assert logs[:3] == ["0.log", "1.log", "2.log"]  # one log file per instance


def test_on_failure_restarts_a_failed_container_and_keeps_the_last_state(
    host: FakeHost, run: Callable
) -> None:
    marker = host.settings.state_dir / "ran-once"
    script = f"if [ -e {marker} ]; then exec sleep 30; fi; touch {marker}; exit 2"
    run(make_pod([container("main", script)], policy="OnFailure"))
    status = wait_for(
        host.api,
        lambda s: "running" in state_of(s) and s["containerStatuses"][0]["restartCount"],
        "running after a failure",
    )
    entry = status["containerStatuses"][0]
    assert entry["restartCount"] == 1
    assert entry["lastState"]["terminated"]["exitCode"] == 2
    assert status["phase"] == "Running"


def test_init_containers_run_in_order_before_the_containers(host: FakeHost, run: Callable) -> None:
    out = host.settings.state_dir / "order"
    init = [
        container("first", f"sleep 1; echo first >> {out}"),
        container("second", f"echo second >> {out}"),
    ]
    run(make_pod([container("main", f"echo main >> {out}; sleep 30")], init))
    initializing = wait_for(
        host.api,
        lambda s: "running" in state_of(s, 0, "initContainerStatuses"),
        "the first init container running",
    )
    assert initializing["phase"] == "Pending"
    assert state_of(initializing)["waiting"]["reason"] == "PodInitializing"
    assert state_of(initializing, 1, "initContainerStatuses")["waiting"] == {
        "reason": "ContainerCreating"
    }
    status = wait_for(host.api, lambda s: s["phase"] == "Running", "phase Running")
    for index in (0, 1):
        assert state_of(status, index, "initContainerStatuses")["terminated"]["exitCode"] == 0
    # Running means the main container started; its shell writes a moment later.
    deadline = time.monotonic() + TIMEOUT
    while len(out.read_text().split()) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert out.read_text().split() == ["first", "second", "main"]
    initialized = {c["type"]: c["status"] for c in status["conditions"]}
    assert initialized["Initialized"] == "True"


def test_a_failed_init_container_fails_a_never_restarted_pod(host: FakeHost, run: Callable) -> None:
    run(make_pod([container("main", "sleep 30")], [container("init", "exit 1")], "Never"))
    status = wait_for(host.api, lambda s: s["phase"] == "Failed", "phase Failed")
    assert state_of(status, 0, "initContainerStatuses")["terminated"]["exitCode"] == 1
    assert state_of(status)["waiting"]["reason"] == "PodInitializing"
    assert not host.processes  # the container never started


def test_an_image_that_cannot_be_pulled_waits_then_backs_off(host: FakeHost, run: Callable) -> None:
    run(make_pod([container("main", "true", image="nope")]))
    pulling = wait_for(
        host.api,
        lambda s: "waiting" in state_of(s) and state_of(s)["waiting"].get("message"),
        "ErrImagePull",
    )
    assert state_of(pulling)["waiting"]["reason"] in ("ErrImagePull", "ImagePullBackOff")
    status = wait_for(
        host.api,
        lambda s: state_of(s)["waiting"]["reason"] == "ImagePullBackOff",
        "ImagePullBackOff",
    )
    message = state_of(status)["waiting"]["message"]
    assert message.startswith('Back-off pulling image "nope": ')
    assert status["phase"] == "Pending"
    assert any(
        reason == "Failed" and "Failed to pull image" in text for reason, text, _ in host.events
    )


def test_a_missing_configmap_is_a_config_error(host: FakeHost, run: Callable) -> None:
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]
    run(make_pod([container("main", "sleep 30", env=env)]))
    status = wait_for(host.api, lambda s: state_of(s)["waiting"].get("message"), "config error")
    waiting = state_of(status)["waiting"]
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "cm" not found',
    }
    host.api.configmaps[("ns", "cm")] = {"data": {"k": "v"}}
    wait_for(host.api, lambda s: "running" in state_of(s), "running once the ConfigMap exists")


def test_a_missing_program_cannot_run(host: FakeHost, run: Callable) -> None:
    spec = {"name": "main", "image": "busybox", "command": ["no-such-program-here"]}
    run(make_pod([spec], policy="Never"))
    status = wait_for(host.api, lambda s: s["phase"] == "Failed", "phase Failed")
    terminated = state_of(status)["terminated"]
    assert terminated["exitCode"] == 127
    assert terminated["reason"] == "ContainerCannotRun"
    assert "no-such-program-here" in terminated["message"]


def test_deletion_stops_the_containers_and_deletes_the_pod(host: FakeHost, run: Callable) -> None:
    pod = make_pod([container("main", "sleep 30")], policy="Never")
    worker = run(pod)
    running = wait_for(host.api, lambda s: "running" in state_of(s), "running")
    pid = int(running["containerStatuses"][0]["containerID"].removeprefix("olmtool://"))
    deleting = copy.deepcopy(pod)
    deleting["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z")
    deleting["metadata"]["deletionGracePeriodSeconds"] = 1
    worker.update(deleting)
    assert host.finished.wait(TIMEOUT)
    assert host.api.deleted == [("ns", "p", "u1")]
    assert host.released == ["ns/p"]
    final = host.api.latest()
    terminated = state_of(final)["terminated"]
    assert terminated["exitCode"] == 143  # SIGTERM
    assert terminated["signal"] == 15
    assert final["phase"] == "Failed"
    assert ("Killing", "Stopping container main", "main") in host.events
    assert not Path(f"/proc/{pid}").exists() or pid not in host.processes


def test_a_pod_gone_from_the_apiserver_is_stopped_and_cleaned_up(
    host: FakeHost, run: Callable
) -> None:
    worker = run(make_pod([container("main", "sleep 30")]))
    wait_for(host.api, lambda s: "running" in state_of(s), "running")
    worker.deleted()
    assert host.finished.wait(TIMEOUT)
    assert host.released == ["ns/p"]
    assert host.api.deleted == []  # nothing left to delete
    assert not host.processes


def test_a_pod_finished_before_the_agent_started_is_left_alone(
    host: FakeHost, run: Callable
) -> None:
    pod = make_pod([container("main", "exit 0")], policy="Never")
    pod["status"] = {"phase": "Succeeded"}
    worker = run(pod)
    time.sleep(0.3)
    assert worker.final_phase == "Succeeded"
    assert host.api.statuses == []
    assert not host.processes


def test_a_previous_agents_restart_count_carries_on(host: FakeHost, run: Callable) -> None:
    pod = make_pod([container("main", "sleep 30")])
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [
            {"name": "main", "restartCount": 4, "state": {"running": {"startedAt": "x"}}}
        ],
    }
    run(pod)
    status = wait_for(host.api, lambda s: "running" in state_of(s), "running")
    assert status["containerStatuses"][0]["restartCount"] == 5  # its start counts


def test_the_agent_provides_every_member_of_pod_host() -> None:
    import inspect

    from olmtool.cluster.node.agent import NodeAgent
    from olmtool.cluster.node.host import PodHost

    for name, member in vars(PodHost).items():
        if name.startswith("_") or not callable(member):
            continue
        provided = getattr(NodeAgent, name)
        assert inspect.signature(provided).parameters.keys() == (
            inspect.signature(member).parameters.keys()
        ), name
    source = inspect.getsource(NodeAgent.start)
    for attribute in PodHost.__annotations__:  # settings, api: set once the agent starts
        assert f"self.{attribute} = " in source


def test_service_variables_unless_links_are_disabled(
    host: FakeHost, run: Callable, tmp_path: Path
) -> None:
    out = tmp_path / "env"
    pod = make_pod([container("main", f'echo "[$WEB_SERVICE_HOST]" >> {out}')], policy="Never")
    run(pod)
    wait_for(host.api, lambda s: s["phase"] == "Succeeded", "first Pod done")
    quiet = make_pod([container("main", f'echo "[$WEB_SERVICE_HOST]" >> {out}')], policy="Never")
    quiet["metadata"]["uid"] = "u2"
    quiet["spec"]["enableServiceLinks"] = False
    run(quiet)
    deadline = time.monotonic() + TIMEOUT
    while out.read_text().count("\n") < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert out.read_text() == "[10.96.1.10]\n[]\n"


def test_a_sandbox_that_fails_is_an_event_and_tried_again(host: FakeHost, run: Callable) -> None:
    host.sandbox_failures = 1
    run(make_pod([container("main", "sleep 30")]))
    status = wait_for(host.api, lambda s: s["phase"] == "Running", "Running after a retry")
    assert status["containerStatuses"][0]["restartCount"] == 0
    reasons = [event for event in host.events if event[0] == "FailedCreatePodSandBox"]
    assert len(reasons) == 1 and "Operation not permitted" in reasons[0][1]
