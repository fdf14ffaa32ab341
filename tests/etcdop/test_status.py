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
