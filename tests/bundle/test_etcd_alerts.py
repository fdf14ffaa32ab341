"""The etcd operator's alerting rules, evaluated by Prometheus's own ``promtool test rules``.

Each alert is fed series shaped like those the ServiceMonitor produces (``job="etcd"``,
``namespace``, ``service``, ``pod``) or kube-state-metrics exports, and must fire exactly
where expected. Annotations are left out of the comparison (they are templates checked by
``promtool check rules``). Skipped without ``promtool`` (Debian's ``prometheus``; ``make
tools`` installs it).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from olmtool import yamlwrite

RULES = (
    Path(__file__).resolve().parents[2] / "operator/config/manifests/extra/etcd-prometheusrule.yaml"
)
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool not found (make tools)")

MEMBER = 'job="etcd",namespace="db",service="main-metrics",endpoint="metrics"'


def member(index: int) -> str:
    return f'{MEMBER},pod="main-{index}",instance="10.0.0.{index}:2381"'


TESTS: list[dict[str, Any]] = [
    {  # one member loses its leader; the others keep theirs
        "interval": "1m",
        "input_series": [
            {"series": f"etcd_server_has_leader{{{member(0)}}}", "values": "1 0 0 0 0"},
            {"series": f"etcd_server_has_leader{{{member(1)}}}", "values": "1 1 1 1 1"},
        ],
        "alert_rule_test": [
            {"eval_time": "1m", "alertname": "etcdNoLeader", "exp_alerts": []},
            {
                "eval_time": "3m",
                "alertname": "etcdNoLeader",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "severity": "critical",
                            "job": "etcd",
                            "namespace": "db",
                            "service": "main-metrics",
                            "endpoint": "metrics",
                            "pod": "main-0",
                            "instance": "10.0.0.0:2381",
                        }
                    }
                ],
            },
        ],
    },
    {  # 3 members: one down is a warning after 10m, two down lose the quorum
        "interval": "1m",
        "input_series": [
            {"series": f"up{{{member(0)}}}", "values": "1 0x15"},
            {"series": f"up{{{member(1)}}}", "values": "1x5 0x10"},
            {"series": f"up{{{member(2)}}}", "values": "1x15"},
        ],
        "alert_rule_test": [
            {"eval_time": "4m", "alertname": "etcdInsufficientMembers", "exp_alerts": []},
            {
                "eval_time": "10m",
                "alertname": "etcdInsufficientMembers",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "severity": "critical",
                            "namespace": "db",
                            "service": "main-metrics",
                        }
                    }
                ],
            },
            {"eval_time": "9m", "alertname": "etcdMembersDown", "exp_alerts": []},
            {
                "eval_time": "12m",
                "alertname": "etcdMembersDown",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "severity": "warning",
                            "namespace": "db",
                            "service": "main-metrics",
                        }
                    }
                ],
            },
        ],
    },
    {  # a leader change every minute on every member: one alert per cluster
        "interval": "1m",
        "input_series": [
            {"series": f"etcd_server_leader_changes_seen_total{{{member(0)}}}", "values": "0+1x30"},
            {"series": f"etcd_server_leader_changes_seen_total{{{member(1)}}}", "values": "0+1x30"},
            {
                "series": 'etcd_server_leader_changes_seen_total{job="etcd",namespace="db",'
                'service="calm-metrics",pod="calm-0"}',
                "values": "0x30",
            },
        ],
        "alert_rule_test": [
            {
                "eval_time": "25m",
                "alertname": "etcdHighNumberOfLeaderChanges",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "severity": "warning",
                            "namespace": "db",
                            "service": "main-metrics",
                        }
                    }
                ],
            }
        ],
    },
    {  # failed backup Jobs alert only where an etcd cluster is monitored
        "interval": "1m",
        "input_series": [
            {"series": f"up{{{member(0)}}}", "values": "1x10"},
            {
                "series": 'kube_job_failed{job="kube-state-metrics",namespace="db",'
                'job_name="main-backup-28391040",condition="true"}',
                "values": "1x10",
            },
            {
                "series": 'kube_job_failed{job="kube-state-metrics",namespace="db",'
                'job_name="main-backup-28391100",condition="true"}',
                "values": "0x10",
            },
            {
                "series": 'kube_job_failed{job="kube-state-metrics",namespace="web",'
                'job_name="site-backup-1",condition="true"}',
                "values": "1x10",
            },
        ],
        "alert_rule_test": [
            {
                "eval_time": "5m",
                "alertname": "etcdBackupFailed",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "severity": "warning",
                            "job": "kube-state-metrics",
                            "namespace": "db",
                            "job_name": "main-backup-28391040",
                            "condition": "true",
                        }
                    }
                ],
            }
        ],
    },
]


def _rule_files(tmp_path: Path, *, annotations: bool) -> Path:
    groups = yamlwrite.plain(yamlwrite.load(RULES)["spec"]["groups"])
    if not annotations:
        for group in groups:
            for rule in group["rules"]:
                rule.pop("annotations", None)
    path = tmp_path / ("rules.yaml" if annotations else "rules-bare.yaml")
    path.write_text(yamlwrite.dump({"groups": groups}))
    return path


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)


def test_rules_and_templates_parse(tmp_path: Path) -> None:
    result = _promtool("check", "rules", str(_rule_files(tmp_path, annotations=True)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout


def test_alerts_fire_where_expected(tmp_path: Path) -> None:
    rules = _rule_files(tmp_path, annotations=False)
    tests = tmp_path / "tests.yaml"
    tests.write_text(yamlwrite.dump({"rule_files": [rules.name], "tests": TESTS}))
    result = _promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
