"""Phase and conditions from one pass."""

from __future__ import annotations

from etcd_operator import plan, status
from etcd_operator.plan import Health, Member, Observed
from etcd_operator.versions import parse


def observed(healthy: int, voters: int = 3) -> Observed:
    members = tuple(
        Member(id=i + 1, name=f"c-{i}", peer_url=f"http://c-{i}.c.ns.svc:2380")
        for i in range(voters)
    )
    health = {i + 1: Health(leader_id=1, raft_index=1, version="3.5.1") for i in range(healthy)}
    return Observed("c", 3, parse("3.5.1"), members, health, {}, bootstrapped=True)


def by_type(conditions: list[dict]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in conditions}


def test_creating_until_the_size_is_reached_then_available() -> None:
    growing = plan.AddLearner("ScalingUp", "adding c-1", member="c-1")
    assert status.phase(growing, None, None) == "Creating"
    got = by_type(status.conditions(growing, observed(1, 1), None, [], True))
    assert got["Available"] == ("False", "Creating") and got["Progressing"] == ("True", "ScalingUp")
    settled = plan.Settled("Available", "3 members healthy")
    assert status.phase(settled, None, "Creating") == "Running"
    got = by_type(status.conditions(settled, observed(3), None, [], True))
    assert got == {
        "Available": ("True", "QuorumAvailable"),
        "Progressing": ("False", "Settled"),
        "Degraded": ("False", "AsExpected"),
    }


def test_quorum_lost_is_degraded_and_unavailable() -> None:
    wait = plan.Wait("QuorumLost", "1 of 3 voting members healthy", quorum_lost=True)
    assert status.phase(wait, None, "Running") == "Degraded"
    got = by_type(status.conditions(wait, observed(1), None, [], False))
    assert got["Available"] == ("False", "QuorumLost") and got["Degraded"] == ("True", "QuorumLost")


def test_a_refused_spec_is_degraded_but_the_cluster_keeps_running() -> None:
    settled = plan.Settled("Available", "3 members healthy")
    invalid = "spec.version 3.4.23: downgrade from 3.5.1 to 3.4.23 is not supported by etcd"
    assert status.phase(settled, invalid, "Running") == "Running"
    got = by_type(status.conditions(settled, observed(3), invalid, [], False))
    assert got["Degraded"] == ("True", "InvalidSpec") and got["Available"][0] == "True"
    assert status.phase(plan.Failed("InvalidSpec", invalid), invalid, None) == "Failed"


def test_transition_times_only_move_on_a_change() -> None:
    first = status.condition("Available", True, "QuorumAvailable", "ok", [])
    old = [dict(first, lastTransitionTime="2020-01-01T00:00:00Z")]
    assert (
        status.condition("Available", True, "QuorumAvailable", "ok", old)["lastTransitionTime"]
        == "2020-01-01T00:00:00Z"
    )
    assert (
        status.condition("Available", False, "QuorumLost", "x", old)["lastTransitionTime"]
        != "2020-01-01T00:00:00Z"
    )


# -- a cluster that never started --------------------------------------------------------

INVALID = 'spec.storageSize "0": must be greater than zero'


def never_started() -> Observed:
    return Observed("c", 3, parse("3.5.1"), None, {}, {}, bootstrapped=False)


def test_a_cluster_that_never_started_has_no_quorum_to_lose() -> None:
    failed = plan.Failed("InvalidSpec", INVALID)
    # first pass (no status yet), then every later one (phase Failed, still no members)
    for old_phase in (None, "Failed"):
        old = {"phase": old_phase, "members": []}
        assert status.creating(old)
        assert status.phase(failed, INVALID, old_phase, started=False) == "Failed"
        got = by_type(
            status.conditions(failed, never_started(), INVALID, [], status.creating(old), False)
        )
        assert got == {
            "Available": ("False", "NotStarted"),
            "Progressing": ("False", "InvalidSpec"),
            "Degraded": ("True", "InvalidSpec"),
        }


def test_a_fixed_spec_creates_the_cluster_that_failed_before_starting() -> None:
    old = {"phase": "Failed", "members": []}
    bootstrap = plan.Bootstrap("Creating", "bootstrapping the first member c-0", member="c-0")
    assert status.phase(bootstrap, None, "Failed", started=False) == "Creating"
    got = by_type(
        status.conditions(bootstrap, never_started(), None, [], status.creating(old), False)
    )
    assert got["Available"] == ("False", "Creating") and got["Degraded"] == ("False", "AsExpected")
    starting = plan.Wait("Unreachable", "no member answers yet")
    assert status.phase(starting, None, "Creating", started=False) == "Creating"


def test_a_cluster_that_ran_and_failed_is_not_creating() -> None:
    old = {"phase": "Failed", "members": [{"name": "c-0"}]}
    assert not status.creating(old)
    lost = plan.Failed("DataLost", "every member and its data are gone")
    got = by_type(status.conditions(lost, never_started(), None, [], False, True))
    assert got["Available"] == ("False", "QuorumLost")


def test_a_blocked_step_is_degraded_not_progressing() -> None:
    blocked = plan.Blocked("InvalidSpec", f"1 of 3 members; no new member: {INVALID}")
    assert status.phase(blocked, INVALID, "Scaling") == "Degraded"
    got = by_type(status.conditions(blocked, observed(1, 1), INVALID, [], False))
    assert got == {
        "Available": ("True", "QuorumAvailable"),
        "Progressing": ("False", "InvalidSpec"),
        "Degraded": ("True", "InvalidSpec"),
    }


def test_each_spec_problem_is_reported_once() -> None:
    version = "spec.version 3.5.99: etcd 3.5.99 is not a known release"
    assert status.unreported([INVALID], []) == [INVALID]
    # the next pass finds the same problem: nothing new to say
    assert status.unreported([INVALID], [], reported=[INVALID]) == []
    # a second problem is new, the first is not
    assert status.unreported([INVALID, version], [], reported=[INVALID]) == [version]
    # after an operator restart, the status already says it
    said = [status.condition("Degraded", True, "InvalidSpec", f"{version}; {INVALID}", [])]
    assert status.unreported([version, INVALID], said) == []
    # fixed, then broken again: reported again
    fixed = [status.condition("Degraded", False, "AsExpected", "all members healthy", [])]
    assert status.unreported([INVALID], fixed, reported=[]) == [INVALID]
    assert status.unreported([INVALID, INVALID], []) == [INVALID]
