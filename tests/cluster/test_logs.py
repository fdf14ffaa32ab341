"""Reading container logs from the agent's state directory."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from olmtool.cluster.node.logs import (
    LogsError,
    log_path,
    mark_deleted,
    pod_dir,
    prune,
    read_logs,
    write_pod_meta,
)


def make(state: Path, uid: str, logs: dict[str, list[str]]) -> Path:
    directory = pod_dir(state, "ns", "web-0", uid)
    write_pod_meta(directory, "ns", "web-0", uid, list(logs))
    for container, texts in logs.items():
        for restart, text in enumerate(texts):
            path = log_path(directory, container, restart)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return directory


def test_current_and_previous(tmp_path: Path) -> None:
    make(tmp_path, "u1", {"main": ["first\n", "second\n"], "sidecar": ["side\n"]})
    assert read_logs(tmp_path, "ns", "web-0") == "second\n"
    assert read_logs(tmp_path, "ns", "web-0", "main", previous=True) == "first\n"
    assert read_logs(tmp_path, "ns", "web-0", "sidecar") == "side\n"
    with pytest.raises(LogsError, match="previous terminated container"):
        read_logs(tmp_path, "ns", "web-0", "sidecar", previous=True)


def test_restart_numbers_sort_numerically(tmp_path: Path) -> None:
    make(tmp_path, "u1", {"main": [f"run {i}\n" for i in range(12)]})
    assert read_logs(tmp_path, "ns", "web-0") == "run 11\n"


def test_newest_pod_of_that_name_wins(tmp_path: Path) -> None:
    old = make(tmp_path, "u1", {"main": ["old\n"]})
    past = time.time() - 100
    os.utime(old / ".pod.json", (past, past))
    make(tmp_path, "u2", {"main": ["new\n"]})
    assert read_logs(tmp_path, "ns", "web-0") == "new\n"


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(LogsError, match='pod "web-0" not found in namespace "ns"'):
        read_logs(tmp_path, "ns", "web-0")
    make(tmp_path, "u1", {"main": []})
    assert read_logs(tmp_path, "ns", "web-0") == ""  # not started yet
    with pytest.raises(LogsError, match="choose one of: main"):
        read_logs(tmp_path, "ns", "web-0", "nope")


def test_prune_keeps_the_newest_deleted_pods(tmp_path: Path) -> None:
    live = make(tmp_path, "live", {"main": ["x\n"]})
    dirs = [make(tmp_path, f"gone-{i}", {"main": ["x\n"]}) for i in range(5)]
    for age, directory in enumerate(reversed(dirs)):
        mark_deleted(directory)
        stamp = time.time() - 10 * age
        os.utime(directory / ".deleted", (stamp, stamp))
    assert prune(tmp_path, keep=2) == 3
    assert [d.exists() for d in dirs] == [False, False, False, True, True]
    assert live.exists()
    assert read_logs(tmp_path, "ns", "web-0") == "x\n"
