"""Reading container logs from the agent's state directory."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from olmtool.cluster.node.logs import (
    LogFilter,
    LogOptions,
    LogOptionsError,
    LogsError,
    TimeIndex,
    instance_logs,
    line_times,
    log_path,
    mark_deleted,
    pod_dir,
    prune,
    read_logs,
    render_log,
    rfc3339_nano,
    tail_start,
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


# -- kubelet's log options (GET /containerLogs) ------------------------------------------


def query(**values: str) -> dict[str, list[str]]:
    return {k: [v] for k, v in values.items()}


def test_log_options_parse_like_kubelet() -> None:
    options = LogOptions.from_query(
        query(follow="true", previous="1", timestamps="true", tailLines="3", limitBytes="10"),
        now=1000.0,
    )
    assert options == LogOptions(True, True, True, 3, 10, None)
    assert LogOptions.from_query(query(sinceSeconds="60"), now=1000.0).since == 940.0
    since = LogOptions.from_query(query(sinceTime="1970-01-01T00:16:40Z"), now=0).since
    assert since == 1000.0
    assert LogOptions.from_query({}, now=0) == LogOptions()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"tailLines": "-1"}, "tailLines: must be greater than or equal to 0"),
        ({"limitBytes": "0"}, "limitBytes: must be greater than 0"),
        ({"sinceSeconds": "x"}, "sinceSeconds: invalid value 'x'"),
        ({"sinceSeconds": "5", "sinceTime": "2024-01-01T00:00:00Z"}, "at most one of"),
        ({"sinceTime": "yesterday"}, "sinceTime: invalid RFC 3339"),
    ],
)
def test_log_options_refused(values: dict[str, str], message: str) -> None:
    with pytest.raises(LogOptionsError, match=re.escape(message)):
        LogOptions.from_query(query(**values), now=0)


def test_tail_start_counts_lines_from_the_end() -> None:
    data = b"a\nb\nc\n"
    assert data[tail_start(data, 2) :] == b"b\nc\n"
    assert data[tail_start(data, 0) :] == b""
    assert data[tail_start(data, 10) :] == data
    assert data[tail_start(data, None) :] == data
    partial = b"a\nb\nc"  # a last line without its newline is a line
    assert partial[tail_start(partial, 1) :] == b"c"
    assert partial[tail_start(partial, 2) :] == b"b\nc"


def test_log_filter_since_timestamps_and_limit() -> None:
    since = LogFilter(LogOptions(since=10.0))
    assert since.feed(b"old\n", 5.0) + since.feed(b"new\n", 10.0) == b"new\n"
    # a line that spans pieces is kept or dropped by the time of its first byte
    assert since.feed(b"half", 5.0) + since.feed(b" line\nnext\n", 20.0) == b"next\n"

    stamped = LogFilter(LogOptions(timestamps=True))
    out = stamped.feed(b"one\ntw", 1.5) + stamped.feed(b"o\n", 2.0)
    assert out == b"1970-01-01T00:00:01.5Z one\n1970-01-01T00:00:01.5Z two\n"

    limited = LogFilter(LogOptions(limit_bytes=6))
    assert limited.feed(b"abcd\n", 0) == b"abcd\n"
    assert limited.feed(b"efgh\n", 0) == b"e"
    assert limited.done and limited.feed(b"more\n", 0) == b""


def test_rfc3339_nano_drops_trailing_zeros() -> None:
    assert rfc3339_nano(0) == "1970-01-01T00:00:00Z"
    assert rfc3339_nano(1.25) == "1970-01-01T00:00:01.25Z"
    assert rfc3339_nano(1.000001) == "1970-01-01T00:00:01.000001Z"


def test_line_times_come_from_the_first_sample_covering_the_line() -> None:
    data = b"a\nbb\nccc\n"  # lines start at 0, 2 and 5
    samples = [(2, 100.0), (5, 101.0)]
    assert line_times(data, 0, samples, mtime=999.0) == [
        (b"a\n", 100.0),
        (b"bb\n", 101.0),
        (b"ccc\n", 999.0),  # written after the last sample: the file's mtime
    ]
    assert line_times(b"ccc\n", 5, samples, 999.0) == [(b"ccc\n", 999.0)]


def test_time_index_samples_growth_and_render_log(tmp_path: Path) -> None:
    log_file = tmp_path / "main" / "0.log"
    log_file.parent.mkdir()
    log_file.write_bytes(b"early\n")
    index = TimeIndex(log_file)
    index.sample(100.0)
    index.sample(101.0)  # no growth: no sample
    with log_file.open("ab") as out:
        out.write(b"late 1\nlate 2\n")
    os.utime(log_file, (300.0, 300.0))
    TimeIndex(log_file).sample(200.0)  # a new index (restarted agent) continues the file
    assert index.samples() == [(6, 100.0), (20, 200.0)]

    data, offset, _ = render_log(log_file, LogOptions(since=150.0, timestamps=True))
    assert offset == 20
    assert data == b"1970-01-01T00:03:20Z late 1\n1970-01-01T00:03:20Z late 2\n"
    data, _, _ = render_log(log_file, LogOptions(tail_lines=1, limit_bytes=4))
    assert data == b"late"
    assert instance_logs(tmp_path, "main") == [log_file]
