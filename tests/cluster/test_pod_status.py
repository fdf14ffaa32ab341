"""Container state transitions and the pure mapping from container states to Pod status."""

from __future__ import annotations

from olmtool.cluster.node.state import (
    ContainerPhase,
    ContainerState,
    Termination,
)
from olmtool.cluster.node.status import PodContext, container_status, pod_status

POD = PodContext("p", "ns", "u1", "Always", host_ip="127.0.0.1", pod_ip="127.1.0.1")
NOW = "2026-01-01T00:00:00Z"


def state(name: str = "c", init: bool = False) -> ContainerState:
    return ContainerState(name, "busybox", init)


def running(name: str = "c", ready: bool = True) -> ContainerState:
    c = state(name)
    c.started_instance(42, "2026-01-01T00:00:01Z", "host:///bin/sh")
    c.ready = c.started = ready
    return c


def ended(code: int, restart: bool, init: bool = False) -> ContainerState:
    c = state(init=init)
    c.started_instance(42, "t0", "id")
    c.ended(
        Termination(code, "Error" if code else "Completed", container_id="olmtool://42"),
        restart,
        0.4,
        100.0,
    )
    return c


def render(
    containers: list[ContainerState],
    init: list[ContainerState] | None = None,
    policy: str = "Always",
    **kwargs: object,
) -> dict:
    context = PodContext("p", "ns", "u1", policy, "127.0.0.1", "127.1.0.1", "t")
    options: dict = {"final_phase": None, "previous_conditions": [], "now": NOW, **kwargs}
    return pod_status(init or [], containers, context, **options)


# -- transitions ---------------------------------------------------------------------


def test_a_new_container_waits_creating() -> None:
    c = state()
    assert c.phase is ContainerPhase.WAITING and c.reason == "ContainerCreating"
    assert c.next_restart_count() == 0


def test_starting_runs_and_clears_the_waiting_reason() -> None:
    c = state()
    c.wait("ErrImagePull", "boom", now=5.0, retry_in=1.0)
    assert c.next_start == 6.0
    c.started_instance(7, "t", "id")
    assert c.phase is ContainerPhase.RUNNING
    assert (c.reason, c.message, c.pid, c.restart_count) == ("", "", 7, 0)


def test_an_exit_that_restarts_waits_in_crash_loop_and_counts_on_the_next_start() -> None:
    c = ended(1, restart=True)
    assert c.phase is ContainerPhase.WAITING and c.reason == "CrashLoopBackOff"
    assert c.restarting and c.next_start == 100.4 and c.pid == 0
    assert c.next_restart_count() == 1
    c.started_instance(43, "t1", "id")
    assert c.restart_count == 1
    assert c.previous is not None and c.previous.exit_code == 1
    assert c.termination is None


def test_an_exit_that_does_not_restart_terminates() -> None:
    c = ended(0, restart=False)
    assert c.phase is ContainerPhase.TERMINATED and c.succeeded and not c.restarting


def test_could_not_run_counts_as_a_restart_of_an_ended_container() -> None:
    c = ended(1, restart=True)
    c.ended(Termination(127, "ContainerCannotRun", "no sh"), True, 0.8, 200.0)
    assert c.restart_count == 1
    assert c.previous is not None and c.previous.exit_code == 1
    assert c.termination is not None and c.termination.exit_code == 127


def test_err_image_pull_becomes_image_pull_backoff_after_a_moment() -> None:
    c = state()
    c.wait("ErrImagePull", 'pull x: "x" not found', now=10.0, retry_in=5.0)
    c.pull_backing_off(10.5)
    assert c.reason == "ErrImagePull"
    c.pull_backing_off(11.0)
    assert c.reason == "ImagePullBackOff"
    assert c.message == 'Back-off pulling image "busybox": "x" not found'


def test_adopting_a_previous_status() -> None:
    c = state()
    c.adopt({"restartCount": 3, "state": {"running": {}}})
    assert (c.restart_count, c.next_restart_count()) == (3, 4)
    init = state(init=True)
    done = {"exitCode": 0, "reason": "Completed", "finishedAt": "t"}
    init.adopt({"restartCount": 0, "state": {"terminated": done}})
    assert init.phase is ContainerPhase.TERMINATED and init.succeeded
    assert init.termination is not None and init.termination.to_json() == done


def test_termination_round_trips_leaving_empty_fields_out() -> None:
    data = {"exitCode": 137, "signal": 9, "reason": "Error", "containerID": "olmtool://1"}
    assert Termination.from_json(data).to_json() == data
    assert Termination(0).to_json() == {"exitCode": 0}


# -- container statuses ------------------------------------------------------------------


def test_waiting_statuses() -> None:
    c = state()
    assert container_status(c, POD, True)["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert container_status(c, POD, False)["state"] == {"waiting": {"reason": "PodInitializing"}}
    c.volumes_pending("volumes not ready: x")
    waiting = container_status(c, POD, True)["state"]["waiting"]
    assert waiting == {"reason": "ContainerCreating", "message": "volumes not ready: x"}


def test_a_running_status() -> None:
    status = container_status(running(ready=True), POD, True)
    assert status["state"] == {"running": {"startedAt": "2026-01-01T00:00:01Z"}}
    assert status["containerID"] == "olmtool://42"
    assert status["imageID"] == "host:///bin/sh"
    assert (status["ready"], status["started"], status["lastState"]) == (True, True, {})
    assert container_status(running(ready=False), POD, True)["ready"] is False


def test_a_crash_loop_status_shows_the_back_off_and_the_last_termination() -> None:
    status = container_status(ended(2, restart=True), POD, True)
    assert status["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": "back-off 0.4s restarting failed container=c pod=p_ns(u1)",
    }
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert status["containerID"] == "olmtool://42"
    assert status["ready"] is False


def test_an_image_problem_after_a_crash_is_shown_instead_of_the_back_off() -> None:
    c = ended(2, restart=True)
    c.wait("ErrImagePull", "gone", now=1.0, retry_in=1.0)
    status = container_status(c, POD, True)
    assert status["state"] == {"waiting": {"reason": "ErrImagePull", "message": "gone"}}
    assert status["lastState"]["terminated"]["exitCode"] == 2


def test_a_terminated_status_keeps_the_previous_termination() -> None:
    c = ended(1, restart=True)
    c.started_instance(50, "t2", "id")
    c.ended(Termination(0, "Completed", container_id="olmtool://50"), False, 0.0, 300.0)
    status = container_status(c, POD, True)
    assert status["state"]["terminated"]["containerID"] == "olmtool://50"
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["restartCount"] == 1


# -- pod status ----------------------------------------------------------------------------


def test_a_pod_of_running_ready_containers() -> None:
    status = render([running("a"), running("b")])
    assert status["phase"] == "Running"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert status["podIPs"] == [{"ip": "127.1.0.1"}]
    assert "initContainerStatuses" not in status
    assert all(c["lastTransitionTime"] == NOW for c in status["conditions"])


def test_phases_follow_the_restart_policy() -> None:
    assert render([ended(0, restart=False)], policy="Never")["phase"] == "Succeeded"
    assert render([ended(1, restart=False)], policy="Never")["phase"] == "Failed"
    assert render([ended(1, restart=True)], policy="OnFailure")["phase"] == "Running"
    assert render([state()])["phase"] == "Pending"


def test_init_containers_hold_the_pod_pending() -> None:
    init = [ended(0, restart=False, init=True), running("slow-init")]
    init[1].init = True
    status = render([state("main")], init)
    assert status["phase"] == "Pending"
    assert len(status["initContainerStatuses"]) == 2
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    initialized = {c["type"]: c for c in status["conditions"]}["Initialized"]
    assert initialized["status"] == "False"
    failed = render([state("main")], [ended(1, restart=False, init=True)], policy="Never")
    assert failed["phase"] == "Failed"


def test_a_final_phase_stays_and_transition_times_are_kept() -> None:
    before = render([running()])
    again = render(
        [state()], final_phase="Running", previous_conditions=before["conditions"], now="later"
    )
    assert again["phase"] == "Running"
    times = {c["type"]: c["lastTransitionTime"] for c in again["conditions"]}
    assert times["PodScheduled"] == NOW  # unchanged condition: time kept
    assert times["Ready"] == "later"  # the container is no longer ready


def test_rendering_changes_nothing() -> None:
    c = ended(3, restart=True)
    snapshot = repr(c)
    render([c])
    render([c])
    assert repr(c) == snapshot
