"""Back-off, restart decisions, Pod phase and conditions."""

from __future__ import annotations

import pytest

from olmtool.cluster.node.status import (
    Backoff,
    cap_for,
    exit_code_of,
    pod_conditions,
    pod_phase,
    should_restart,
    with_transition_times,
)


def test_backoff_doubles_from_base_to_cap() -> None:
    backoff = Backoff(10, 300)
    delays = [backoff.next_delay() for _ in range(9)]
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300, 300]


def test_backoff_resets_after_a_long_run() -> None:
    backoff = Backoff(10, 300)
    for _ in range(4):
        backoff.next_delay()
    assert backoff.next_delay(ran_for=601) == 0
    assert backoff.next_delay() == 10


def test_backoff_cap_scales_with_base() -> None:
    assert cap_for(10) == 300
    assert cap_for(0.5) == 15
    assert cap_for(60) == 300


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 2, True),
        ("Never", 0, False),
        ("Never", 137, False),
    ],
)
def test_should_restart(policy: str, code: int, restart: bool) -> None:
    assert should_restart(policy, code) is restart


def running() -> dict:
    return {"name": "c", "state": {"running": {}}}


def terminated(code: int) -> dict:
    return {"name": "c", "state": {"terminated": {"exitCode": code}}}


def waiting(restarting: bool = False) -> dict:
    status = {"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}
    if restarting:
        status["lastState"] = {"terminated": {"exitCode": 1}}
    return status


@pytest.mark.parametrize(
    ("policy", "init", "containers", "phase"),
    [
        ("Always", [], [waiting()], "Pending"),
        ("Always", [], [running()], "Running"),
        ("Always", [], [running(), waiting()], "Pending"),
        ("Always", [], [waiting(restarting=True)], "Running"),
        ("Always", [], [terminated(0)], "Running"),
        ("OnFailure", [], [terminated(0)], "Succeeded"),
        ("OnFailure", [], [terminated(0), waiting(restarting=True)], "Running"),
        ("Never", [], [terminated(0), terminated(0)], "Succeeded"),
        ("Never", [], [terminated(0), terminated(1)], "Failed"),
        ("Never", [], [running(), terminated(1)], "Running"),
        ("Always", [running()], [waiting()], "Pending"),
        ("Always", [terminated(1)], [waiting()], "Pending"),
        ("Never", [terminated(1)], [waiting()], "Failed"),
        ("Never", [terminated(0)], [running()], "Running"),
    ],
)
def test_pod_phase(policy: str, init: list, containers: list, phase: str) -> None:
    assert pod_phase(policy, init, containers) == phase


def test_conditions() -> None:
    ready = {"name": "a", "ready": True}
    unready = {"name": "b", "ready": False}
    by_type = {c["type"]: c for c in pod_conditions("Running", True, [ready, unready])}
    assert by_type["Ready"]["status"] == "False"
    assert by_type["Ready"]["message"] == "containers with unready status: [b]"
    assert by_type["Initialized"]["status"] == "True"
    assert by_type["PodScheduled"]["status"] == "True"
    by_type = {c["type"]: c for c in pod_conditions("Running", True, [ready])}
    assert by_type["Ready"]["status"] == by_type["ContainersReady"]["status"] == "True"
    by_type = {c["type"]: c for c in pod_conditions("Pending", False, [unready])}
    assert by_type["Initialized"]["reason"] == "ContainersNotInitialized"
    by_type = {c["type"]: c for c in pod_conditions("Succeeded", True, [unready])}
    assert by_type["Ready"]["reason"] == "PodCompleted"


def test_readiness_gates() -> None:
    gates = [{"conditionType": "example.com/gate"}]
    ready = [{"name": "a", "ready": True}]
    by_type = {c["type"]: c for c in pod_conditions("Running", True, ready, gates, [])}
    assert by_type["Ready"]["status"] == "False"
    existing = [{"type": "example.com/gate", "status": "True"}]
    by_type = {c["type"]: c for c in pod_conditions("Running", True, ready, gates, existing)}
    assert by_type["Ready"]["status"] == "True"


def test_transition_times_kept_while_status_holds() -> None:
    first = with_transition_times([{"type": "Ready", "status": "False"}], [], "t1")
    same = with_transition_times([{"type": "Ready", "status": "False"}], first, "t2")
    changed = with_transition_times([{"type": "Ready", "status": "True"}], same, "t3")
    assert [first[0]["lastTransitionTime"], same[0]["lastTransitionTime"]] == ["t1", "t1"]
    assert changed[0]["lastTransitionTime"] == "t3"


def test_exit_codes() -> None:
    assert exit_code_of(-9) == 137
    assert exit_code_of(-15) == 143
    assert exit_code_of(3) == 3
