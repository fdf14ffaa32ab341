"""The objects an EtcdCluster owns."""

from __future__ import annotations

from etcd_operator import resources, resources_backup
from etcd_operator.__main__ import scope
from etcd_operator.refs import ClusterRef, MemberSpec

REF = ClusterRef(name="ex", namespace="ns", uid="0123456789abcdef")


def _args(pod: dict) -> list[str]:
    return pod["spec"]["containers"][0]["args"]


def test_a_joining_member_names_every_member_and_starts_existing() -> None:
    pod = resources.member_pod(
        REF, MemberSpec("ex-2", "3.5.1", ["ex-0", "ex-1", "ex-2"], "existing")
    )
    args = _args(pod)
    assert "--initial-cluster-state=existing" in args
    assert (
        "--initial-cluster=ex-0=http://ex-0.ex.ns.svc:2380,ex-1=http://ex-1.ex.ns.svc:2380,"
        "ex-2=http://ex-2.ex.ns.svc:2380"
    ) in args
    assert pod["spec"]["hostname"] == "ex-2" and pod["spec"]["subdomain"] == "ex"
    assert pod["spec"]["containers"][0]["image"] == "quay.io/coreos/etcd:v3.5.1"
    assert pod["metadata"]["labels"][resources.VERSION_LABEL] == "3.5.1"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == REF.uid
    assert "initContainers" not in pod["spec"]


def test_members_prefer_nodes_without_another_member_of_their_cluster() -> None:
    pod = resources.member_pod(REF, MemberSpec("ex-0", "3.5.1", ["ex-0"], "new"))
    preferred = pod["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert preferred == [
        {
            "weight": 100,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": REF.selector()},
                "topologyKey": "kubernetes.io/hostname",
            },
        }
    ]
    assert (
        "requiredDuringSchedulingIgnoredDuringExecution"
        not in pod["spec"]["affinity"]["podAntiAffinity"]
    )  # one node runs a whole cluster too
    # the selector matches members only, and only this cluster's
    assert REF.selector()["app.kubernetes.io/instance"] == "ex"
    assert REF.selector()["app.kubernetes.io/component"] == "member"


def test_a_restored_seed_restores_the_snapshot_first() -> None:
    restore = {"claimName": "old-backups", "snapshot": "old-final.db"}
    pod = resources.member_pod(REF, MemberSpec("ex-0", "3.5.1", ["ex-0"], "new", restore=restore))
    init = pod["spec"]["initContainers"][0]
    assert init["command"] == ["etcdutl"] and init["args"][:3] == [
        "snapshot",
        "restore",
        "/backups/old-final.db",
    ]
    claims = [v["persistentVolumeClaim"] for v in pod["spec"]["volumes"]]
    assert {"claimName": "old-backups", "readOnly": True} in claims
    pod34 = resources.member_pod(
        REF, MemberSpec("ex-0", "3.4.23", ["ex-0"], "new", restore=restore)
    )
    assert pod34["spec"]["initContainers"][0]["command"] == ["etcdctl"]


def test_services_and_budget() -> None:
    peers = resources.peer_service(REF)
    assert peers["spec"]["clusterIP"] == "None" and peers["spec"]["publishNotReadyAddresses"]
    metrics = resources.metrics_service(REF)
    assert metrics["spec"]["ports"][0]["name"] == "metrics"
    assert metrics["metadata"]["labels"]["app.kubernetes.io/component"] == "metrics"
    pdb = resources.disruption_budget(REF, 5, "policy/v1beta1")
    assert pdb["spec"]["minAvailable"] == 3


def test_backups_outlive_the_cluster_and_jobs_name_their_snapshot() -> None:
    claim = resources_backup.backup_claim(REF, "2Gi")
    assert "ownerReferences" not in claim["metadata"]
    cron = resources_backup.backup_cronjob(REF, "0 * * * *", "batch/v1beta1")
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["etcdctl"]
    assert container["args"][-3:] == ["snapshot", "save", "/backups/$(JOB_NAME).db"]
    assert "--endpoints=http://ex-client.ns.svc:2379" in container["args"]
    job = resources_backup.backup_job(REF, "ex-final-01234567", "ex-final.db")
    assert job["spec"]["template"]["spec"]["containers"][0]["args"][-1] == "/backups/ex-final.db"


def test_watch_namespace_scopes_like_olm() -> None:
    assert scope("") == (True, [])
    assert scope(None) == (True, [])
    assert scope("b, a,") == (False, ["a", "b"])


def test_placement_reaches_the_member_pod_and_members_stay_on_a_lost_node() -> None:
    placement = {
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "etcd"}],
        "priorityClassName": "system-cluster-critical",
        "affinity": {"nodeAffinity": {"x": 1}},
    }
    pod = resources.member_pod(
        REF, MemberSpec("ex-0", "3.5.1", ["ex-0"], "new", placement=placement)
    )
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"disk": "ssd"}
    assert spec["priorityClassName"] == "system-cluster-critical"
    # the user's affinity, and the default spreading beside it
    assert spec["affinity"]["nodeAffinity"] == {"x": 1}
    assert spec["affinity"]["podAntiAffinity"] == resources.spread_members(REF)["podAntiAffinity"]
    assert spec["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "etcd"},
        *resources.STAY_ON_LOST_NODE,
    ]
    assert all("tolerationSeconds" not in t for t in resources.STAY_ON_LOST_NODE)
    own = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    pod = resources.member_pod(
        REF, MemberSpec("ex-0", "3.5.1", ["ex-0"], "new", placement={"affinity": own})
    )
    assert pod["spec"]["affinity"] == own  # theirs replaces the default spreading


def test_options_become_the_member_environment_and_a_config_digest() -> None:
    options = {"snapshotCount": 5000, "heartbeatIntervalMs": 50, "electionTimeoutMs": 500}
    pod = resources.member_pod(REF, MemberSpec("ex-0", "3.5.1", ["ex-0"], "new", options=options))
    env = pod["spec"]["containers"][0]["env"]
    assert env[1:] == [
        {"name": "ETCD_ELECTION_TIMEOUT", "value": "500"},
        {"name": "ETCD_HEARTBEAT_INTERVAL", "value": "50"},
        {"name": "ETCD_SNAPSHOT_COUNT", "value": "5000"},
    ]
    digest = pod["metadata"]["annotations"][resources.CONFIG_ANNOTATION]
    assert digest == resources.config_digest(dict(reversed(options.items())))
    assert digest != resources.config_digest({**options, "snapshotCount": 5001})


def test_no_options_is_the_empty_digest_of_older_releases_pods() -> None:
    pod = resources.member_pod(REF, MemberSpec("ex-0", "3.5.1", ["ex-0"], "new"))
    assert resources.CONFIG_ANNOTATION not in pod["metadata"]["annotations"]
    assert resources.config_digest({}) == resources.config_digest(None) == ""
    assert resources.config_digest({"snapshotCount": None}) == ""
