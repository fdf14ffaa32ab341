"""The membership planner: one safe step from each observed state."""

from __future__ import annotations

import pytest
from etcd_operator import plan
from etcd_operator.plan import Health, Member, MemberPod, Observed
from etcd_operator.plan_maintenance import MiB
from etcd_operator.versions import parse

V = "3.5.1"


def member(i: int, learner: bool = False, started: bool = True) -> Member:
    return Member(
        id=100 + i,
        name=f"c-{i}",
        peer_url=f"http://c-{i}.c.ns.svc:2380",
        learner=learner,
        started=started,
    )


def pod(i: int, **kwargs: object) -> MemberPod:
    defaults: dict[str, object] = {"ready": True, "version": V}
    defaults.update(kwargs)
    return MemberPod(name=f"c-{i}", **defaults)  # type: ignore[arg-type]


def observed(
    members: list[Member] | None,
    pods: list[MemberPod],
    healthy: list[int] | None = None,
    leader: int = 0,
    replicas: int = 3,
    version: str = V,
    **kwargs: object,
) -> Observed:
    ids = [m.id for m in members or ()] if healthy is None else [100 + i for i in healthy]
    return Observed(
        cluster="c",
        replicas=replicas,
        version=parse(version),
        members=tuple(members) if members is not None else None,
        health={i: Health(leader_id=100 + leader, raft_index=10, version=V) for i in ids},
        pods={p.name: p for p in pods},
        bootstrapped=bool(members) or bool(pods),
        **kwargs,  # type: ignore[arg-type]
    )


def step(obs: Observed, running: str = V) -> plan.Step:
    return plan.next_step(obs, running)


def test_an_empty_cluster_bootstraps_its_seed() -> None:
    got = step(observed(None, []))
    assert isinstance(got, plan.Bootstrap) and got.member == "c-0"


def test_a_starting_seed_is_waited_for() -> None:
    assert isinstance(step(observed(None, [pod(0, ready=False)])), plan.Wait)


def test_grows_one_learner_at_a_time() -> None:
    got = step(observed([member(0)], [pod(0)]))
    assert isinstance(got, plan.AddLearner) and got.member == "c-1"


def test_a_learner_without_a_pod_is_started_after_an_interrupted_add() -> None:
    # the operator died between MemberAdd and creating the Pod: finish, do not add again
    obs = observed([member(0), member(1, learner=True, started=False)], [pod(0)], healthy=[0])
    got = step(obs)
    assert isinstance(got, plan.StartPod) and got.member == "c-1"


def test_a_healthy_learner_is_promoted_before_the_next_add() -> None:
    obs = observed([member(0), member(1, learner=True)], [pod(0), pod(1, ready=False)])
    got = step(obs)
    assert isinstance(got, plan.Promote) and got.member.name == "c-1"


def test_a_starting_learner_is_waited_for() -> None:
    obs = observed([member(0), member(1, learner=True)], [pod(0), pod(1)], healthy=[0])
    assert isinstance(step(obs), plan.Wait)


def test_a_member_whose_pod_was_deleted_restarts_with_its_data() -> None:
    obs = observed(
        [member(0), member(1), member(2)], [pod(0), pod(1), pod(2, pod=False)], healthy=[0, 1]
    )
    got = step(obs, running="3.5.2")
    assert isinstance(got, plan.StartPod) and (got.member, got.version) == ("c-2", "3.5.2")


@pytest.mark.parametrize(
    "lost",
    [
        pod(2, claim=False, pod=False),
        pod(2, claim_deleting=True),
        pod(2, crash_looping=True, ready=False),
    ],
)
def test_a_member_that_lost_its_data_is_removed_first(lost: MemberPod) -> None:
    obs = observed([member(0), member(1), member(2)], [pod(0), pod(1), lost], healthy=[0, 1])
    got = step(obs)
    assert isinstance(got, plan.RemoveMember) and got.member.name == "c-2"


def test_no_removal_that_would_lose_quorum() -> None:
    obs = observed(
        [member(0), member(1), member(2)],
        [pod(0), pod(1, ready=False), pod(2, claim=False, pod=False)],
        healthy=[0],
    )
    got = step(obs)
    assert isinstance(got, plan.Wait) and got.quorum_lost


def test_a_single_member_that_lost_its_data_fails_the_cluster() -> None:
    got = step(observed([member(0)], [pod(0, claim=False, pod=False)], healthy=[], replicas=1))
    assert isinstance(got, plan.Failed) and got.reason == "DataLost"


def test_without_quorum_nothing_changes() -> None:
    obs = observed(
        [member(0), member(1), member(2)],
        [pod(0), pod(1, ready=False), pod(2, ready=False)],
        healthy=[0],
        replicas=5,
    )
    got = step(obs)
    assert isinstance(got, plan.Wait) and got.quorum_lost
    assert "1 of 3 voting members healthy, 2 needed" in got.message


def test_leftovers_of_an_interrupted_removal_are_deleted() -> None:
    obs = observed([member(0), member(1), member(2)], [pod(0), pod(1), pod(2), pod(3)])
    got = step(obs)
    assert isinstance(got, plan.DeleteLeftovers) and got.name == "c-3"


def test_shrinks_the_newest_follower_never_the_leader_first() -> None:
    members = [member(i) for i in range(5)]
    obs = observed(members, [pod(i) for i in range(5)], leader=4)
    got = step(obs)
    assert isinstance(got, plan.RemoveMember) and got.member.name == "c-3"


def test_waits_for_every_member_to_be_healthy_between_changes() -> None:
    obs = observed([member(0), member(1)], [pod(0), pod(1, ready=False)], healthy=[0, 1])
    got = step(obs)
    assert isinstance(got, plan.Wait) and "c-1" in got.message


def test_rolls_followers_first_and_the_leader_last() -> None:
    members = [member(i) for i in range(3)]
    pods = [pod(i, version="3.4.23") for i in range(3)]
    first = step(observed(members, pods, leader=1))
    assert isinstance(first, plan.Roll) and first.member == "c-0"
    pods = [pod(0), pod(1, version="3.4.23"), pod(2)]
    last = step(observed(members, pods, leader=1))
    assert isinstance(last, plan.Roll) and last.member == "c-1" and "leader" in last.message


def test_a_refused_upgrade_rolls_nothing() -> None:
    members = [member(i) for i in range(3)]
    pods = [pod(i, version="3.4.23") for i in range(3)]
    got = step(observed(members, pods, version="3.4.23", upgrade_refused="downgrade"))
    assert isinstance(got, plan.Settled)


def test_settled_when_the_spec_is_met() -> None:
    got = step(observed([member(i) for i in range(3)], [pod(i) for i in range(3)]))
    assert isinstance(got, plan.Settled)


def test_names_come_from_peer_urls_until_members_start() -> None:
    assert plan.name_from_peer_url("http://example-3.example.ns.svc:2380") == "example-3"
    obs = observed([member(0), member(7)], [pod(0), pod(7)], replicas=3)
    assert plan.next_name(obs) == "c-8"


# -- a refused storageSize (an older CRD let "0" or "-1Gi" through) ----------------------

REFUSED = 'spec.storageSize "-1Gi": must be greater than zero'


def test_a_refused_storage_size_creates_no_cluster() -> None:
    got = step(observed(None, [], storage_refused=REFUSED))
    assert isinstance(got, plan.Failed) and (got.reason, got.message) == ("InvalidSpec", REFUSED)


def test_a_refused_storage_size_adds_no_member_and_says_so() -> None:
    obs = observed([member(0)], [pod(0)], storage_refused=REFUSED)
    got = step(obs)
    assert isinstance(got, plan.Blocked) and got.reason == "InvalidSpec"
    assert got.message.startswith("1 of 3 members") and REFUSED in got.message


def test_a_refused_storage_size_still_lets_the_rest_happen() -> None:
    members = [member(i) for i in range(3)]
    # a member restarts with its volume (no new volume is asked for)
    pods = [pod(0), pod(1), pod(2, pod=False)]
    got = step(observed(members, pods, healthy=[0, 1], storage_refused=REFUSED))
    assert isinstance(got, plan.StartPod) and got.member == "c-2"
    # a roll and a shrink need no new volume either
    rolling = [pod(0), pod(1), pod(2, version="3.4.23")]
    assert isinstance(step(observed(members, rolling, storage_refused=REFUSED)), plan.Roll)
    shrink = step(
        observed(members, [pod(i) for i in range(3)], replicas=1, storage_refused=REFUSED)
    )
    assert isinstance(shrink, plan.RemoveMember)
    # at its size, the cluster is settled (status reports the refused spec)
    at_size = step(observed(members, [pod(i) for i in range(3)], storage_refused=REFUSED))
    assert isinstance(at_size, plan.Settled)


def test_a_member_that_needs_a_new_volume_waits_for_a_valid_size() -> None:
    # MemberAdd happened, then the pass stopped before the volume and Pod were created
    obs = observed(
        [member(0), member(1, learner=True, started=False)],
        [pod(0)],
        healthy=[0],
        storage_refused=REFUSED,
    )
    got = step(obs)
    assert isinstance(got, plan.Blocked) and "member c-1 needs a new volume" in got.message


def _on_lost_node(
    seconds: float | None, timeout: float = 60, healthy: list[int] | None = None
) -> Observed:
    members = [member(0), member(1), member(2)]
    pods = [pod(0, node="n1"), pod(1, node="n2"), pod(2, node="n3", ready=False,
                                                    node_lost_for=seconds)]  # fmt: skip
    return observed(members, pods, healthy=[0, 1] if healthy is None else healthy,
                    node_loss_timeout=timeout)  # fmt: skip


def test_a_member_whose_node_stays_unreachable_past_the_timeout_is_replaced() -> None:
    got = step(_on_lost_node(75.4))
    assert isinstance(got, plan.RemoveMember) and got.member.name == "c-2"
    assert got.reason == "ReplacingMember"
    assert got.message == (
        "member c-2 is on node n3, unreachable for 75s: removing it, a new member replaces it"
    )


def test_a_member_on_an_unreachable_node_is_waited_for_until_the_timeout() -> None:
    got = step(_on_lost_node(30.0))
    assert isinstance(got, plan.Wait) and got.reason == "MemberUnhealthy"
    assert isinstance(step(_on_lost_node(10_000, timeout=0)), plan.Wait)  # 0: never
    assert isinstance(step(_on_lost_node(None)), plan.Wait)  # its node is not known lost


def test_no_replacement_for_a_lost_node_that_would_lose_quorum() -> None:
    got = step(_on_lost_node(75.0, healthy=[0]))  # another member is down too
    assert isinstance(got, plan.Wait) and got.quorum_lost
    assert "removing it would lose quorum" in got.message


# -- spec.options: a rolling restart ------------------------------------------------------


def test_new_options_restart_followers_first_one_at_a_time() -> None:
    members = [member(i) for i in range(3)]
    first = step(observed(members, [pod(i) for i in range(3)], leader=0, config="abc"))
    assert isinstance(first, plan.Roll) and first.member == "c-1"
    assert first.reason == "Reconfiguring" and "spec.options" in first.message
    # the restarted member is back but not ready yet: nothing else restarts
    pods = [pod(0), pod(1, config="abc", ready=False), pod(2)]
    assert isinstance(step(observed(members, pods, leader=0, config="abc")), plan.Wait)
    pods = [pod(0), pod(1, config="abc"), pod(2, config="abc")]
    last = step(observed(members, pods, leader=0, config="abc"))
    assert isinstance(last, plan.Roll) and last.member == "c-0" and "leader" in last.message
    done = [pod(i, config="abc") for i in range(3)]
    assert isinstance(step(observed(members, done, config="abc")), plan.Settled)


def test_pods_of_older_releases_run_the_default_settings() -> None:
    # no config annotation and no spec.options: nothing restarts across an operator upgrade
    members = [member(i) for i in range(3)]
    assert isinstance(step(observed(members, [pod(i) for i in range(3)])), plan.Settled)


def test_refused_options_restart_nothing() -> None:
    members = [member(i) for i in range(3)]
    assert isinstance(
        step(observed(members, [pod(i) for i in range(3)], config=None)), plan.Settled
    )


def test_a_member_stale_in_version_and_options_restarts_once_as_an_upgrade() -> None:
    members = [member(i) for i in range(3)]
    pods = [pod(i, version="3.4.23") for i in range(3)]
    got = step(observed(members, pods, leader=0, config="abc"))
    assert isinstance(got, plan.Roll) and got.reason == "Upgrading" and got.member == "c-1"


# -- maintenance ---------------------------------------------------------------------------


def sized(members: list[Member], sizes: dict[int, tuple[int, int]], **kwargs: object) -> Observed:
    """Every member healthy, member i's database (size, in use) in MiB from ``sizes``."""
    obs = observed(members, [pod(m.id - 100) for m in members], **kwargs)
    health = {
        m.id: Health(
            leader_id=obs.health[m.id].leader_id,
            raft_index=10,
            version=V,
            db_size=sizes.get(m.id - 100, (1, 1))[0] * MiB,
            db_size_in_use=sizes.get(m.id - 100, (1, 1))[1] * MiB,
        )
        for m in members
    }
    return Observed(**{**obs.__dict__, "health": health})


def test_a_requested_defragmentation_goes_one_member_at_a_time_followers_first() -> None:
    members = [member(i) for i in range(3)]
    sizes = {0: (40, 4), 1: (40, 4), 2: (40, 4)}
    got = step(sized(members, sizes, leader=0, defrag_requested=True))
    assert isinstance(got, plan.Defragment) and got.member.name == "c-1"
    assert "36.0 MiB of 40.0 MiB free" in got.message
    sizes = {0: (40, 4), 1: (4, 4), 2: (4, 4)}
    got = step(sized(members, sizes, leader=0, defrag_requested=True))
    assert isinstance(got, plan.Defragment) and got.member.name == "c-0"
    # nothing left worth a pause: the request is answered
    done = {i: (4, 4) for i in range(3)}
    assert isinstance(step(sized(members, done, defrag_requested=True)), plan.Settled)


def test_automatic_defragmentation_needs_the_percent_and_64_mib_free() -> None:
    members = [member(i) for i in range(3)]
    assert isinstance(step(sized(members, {1: (40, 4)}, defrag_percent=50)), plan.Settled)
    assert isinstance(step(sized(members, {1: (200, 120)}, defrag_percent=50)), plan.Settled)
    got = step(sized(members, {1: (200, 80)}, defrag_percent=50))
    assert isinstance(got, plan.Defragment) and got.member.name == "c-1"
    assert isinstance(step(sized(members, {1: (200, 80)}, defrag_percent=0)), plan.Settled)


def test_a_nospace_alarm_is_recovered_even_though_no_member_is_ready() -> None:
    members = [member(i) for i in range(3)]
    pods = [pod(i, ready=False) for i in range(3)]  # /health fails while the alarm is on
    obs = observed(members, pods, alarms=((101, "NOSPACE"),), quota_bytes=64 * MiB)
    got = step(obs)
    assert isinstance(got, plan.RecoverSpace) and got.reason == "NoSpace"
    assert "NOSPACE alarm on c-1" in got.message and "64.0 MiB" in got.message


def test_a_nospace_alarm_without_quorum_waits_for_quorum() -> None:
    members = [member(i) for i in range(3)]
    obs = observed(members, [pod(i) for i in range(3)], healthy=[0], alarms=((100, "NOSPACE"),))
    got = step(obs)
    assert isinstance(got, plan.Wait) and got.quorum_lost


# -- disaster recovery ---------------------------------------------------------------------


def _majority_gone(**kwargs: object) -> Observed:
    """c-1 and c-2 lost their volumes; c-0 runs alone; etcd answers no member list."""
    return observed(
        None,
        [pod(0), pod(1, pod=False, claim=False), pod(2, pod=False, claim=False)],
        last_voters=("c-0", "c-1", "c-2"),
        **kwargs,
    )


def test_a_majority_without_data_without_recovery_says_how_to_recover_by_hand() -> None:
    got = step(_majority_gone(snapshot="c-backup-1.db"))
    assert isinstance(got, plan.Wait) and got.quorum_lost and got.for_good
    assert "2 of 3 members lost their data or node (c-1, c-2)" in got.message
    assert "spec.recovery.fromLatestBackup: true" in got.message
    assert "snapshot: c-backup-1.db" in got.message


def test_the_rebuild_waits_after_seconds_then_starts_a_new_seed_from_the_snapshot() -> None:
    waiting = step(_majority_gone(snapshot="s.db", recovery_after=60, lost_for_good_for=20))
    assert isinstance(waiting, plan.Wait) and "once that has lasted 60s" in waiting.message
    got = step(_majority_gone(snapshot="s.db", recovery_after=60, lost_for_good_for=61))
    assert isinstance(got, plan.RebuildFromBackup) and got.snapshot == "s.db"
    assert got.member == "c-3"  # a new name: no peer mistakes it for an old member


def test_no_rebuild_without_a_snapshot() -> None:
    got = step(_majority_gone(recovery_after=0))
    assert isinstance(got, plan.Wait) and "no backup of this cluster" in got.message


def test_no_rebuild_while_the_members_keep_their_data() -> None:
    # two members down but with their volumes: they may come back, quorum with them
    obs = observed(
        None,
        [pod(0), pod(1, pod=False), pod(2, pod=False)],
        last_voters=("c-0", "c-1", "c-2"),
        recovery_after=0,
        snapshot="s.db",
    )
    assert not isinstance(step(obs), plan.RebuildFromBackup | plan.Failed)
    # one member gone for good of three: replaced, not rebuilt
    members = [member(i) for i in range(3)]
    obs = observed(members, [pod(0), pod(1), pod(2, claim=False)], recovery_after=0, snapshot="s")
    assert isinstance(step(obs), plan.RemoveMember)


def test_a_majority_on_lost_nodes_counts_as_gone() -> None:
    lost = {"node_lost_for": 600.0}
    obs = observed(
        None,
        [pod(0), pod(1, **lost), pod(2, **lost)],
        last_voters=("c-0", "c-1", "c-2"),
        node_loss_timeout=300,
        recovery_after=0,
        snapshot="s.db",
    )
    assert isinstance(step(obs), plan.RebuildFromBackup)
