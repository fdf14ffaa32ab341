"""Container processes: namespaces, bind mounts, process groups, leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from olmtool.cluster.node.process import (
    LaunchSpec,
    PidRecords,
    command_line,
    isolation_available,
    launch,
    namespace_script,
    terminate_group,
)
from olmtool.cluster.node.volumes import Mount

needs_root = pytest.mark.skipif(
    not isolation_available(), reason="mount namespaces need root and util-linux"
)


def wait_exit(process: subprocess.Popen[bytes], timeout: float = 10) -> int:
    return process.wait(timeout=timeout)


def test_script_mounts_in_depth_order_and_restores_path(tmp_path: Path) -> None:
    spec = LaunchSpec(
        argv=["/bin/true"],
        env={"PATH": "/only/mine"},
        cwd="/tmp/work dir",
        mounts=[
            Mount(tmp_path / "a", "/tmp/a", read_only=True),
            Mount(tmp_path / "b", "/data", bind=False),
            Mount(tmp_path / "f", "/etc/x.yaml", is_file=True),
        ],
        hosts_file=tmp_path / "hosts",
        hostname="web-0",
        create_cwd=True,
    )
    script = namespace_script(spec)
    assert "echo web-0 > /proc/sys/kernel/hostname" in script
    assert f"mount --bind {tmp_path / 'a'} /tmp/a" in script
    assert "mount -o remount,bind,ro /tmp/a" in script
    assert "/data" not in script  # rewritten, not mounted
    assert ": > /etc/x.yaml" in script
    assert f"mount --bind {tmp_path / 'hosts'} /etc/hosts" in script
    assert "mkdir -p '/tmp/work dir'" in script
    assert script.endswith('exec "$@"')
    argv = command_line(spec, isolated=True)
    assert argv[-1] == "/bin/true" and argv[1:5] == ["-m", "-u", "--propagation", "private"]
    assert command_line(spec, isolated=False) == ["/bin/true"]


def test_a_pod_network_namespace_is_entered_first(tmp_path: Path) -> None:
    spec = LaunchSpec(
        argv=["/bin/true"],
        env={},
        resolv_file=tmp_path / "resolv.conf",
        netns="/run/netns/olm1-abc",
    )
    assert f"mount --bind {tmp_path / 'resolv.conf'} /etc/resolv.conf" in namespace_script(spec)
    argv = command_line(spec, isolated=True)
    assert Path(argv[0]).name == "nsenter" and argv[1:3] == ["--net=/run/netns/olm1-abc", "--"]
    assert Path(argv[3]).name == "unshare" and argv[-1] == "/bin/true"
    assert command_line(spec, isolated=False)[1:] == [
        "--net=/run/netns/olm1-abc",
        "--",
        "/bin/true",
    ]


def test_plain_launch_logs_and_groups(tmp_path: Path) -> None:
    log = tmp_path / "c" / "0.log"
    spec = LaunchSpec(
        argv=["/bin/sh", "-c", 'echo "out $GREETING $PWD"; echo err >&2; exit 3'],
        env={"GREETING": "hi"},
        cwd=str(tmp_path),
    )
    process = launch(spec, isolated=False, log_file=log)
    assert wait_exit(process) == 3
    assert log.read_text() == f"out hi {tmp_path}\nerr\n"
    assert os.getpgid(os.getpid()) != process.pid  # its own group


def test_terminate_group_kills_children(tmp_path: Path) -> None:
    spec = LaunchSpec(argv=["/bin/sh", "-c", "sleep 300 & sleep 300 & wait"], env={})
    process = launch(spec, isolated=False, log_file=tmp_path / "log")
    time.sleep(0.3)
    children = [
        int(p) for p in Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    ]
    assert len(children) == 2
    terminate_group(process, grace=2)
    time.sleep(0.1)
    for child in children:
        assert (
            not Path(f"/proc/{child}").exists()
            or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
        )


def test_leftovers_of_a_dead_agent_are_killed(tmp_path: Path) -> None:
    records = PidRecords(tmp_path / "pids")
    leftover = subprocess.Popen(["sleep", "300"], start_new_session=True)
    records.record(leftover.pid, {"pod": "ns/p", "container": "c"})
    stale = tmp_path / "pids" / "999999.json"
    stale.write_text('{"pid": 999999, "pgid": 999999, "start": 1}')
    assert records.kill_leftovers() == 1
    assert leftover.wait(timeout=5) == -signal.SIGKILL
    assert not list((tmp_path / "pids").iterdir())


def test_a_reused_pid_is_not_killed(tmp_path: Path) -> None:
    records = PidRecords(tmp_path / "pids")
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        records.record(bystander.pid, {})
        entry = tmp_path / "pids" / f"{bystander.pid}.json"
        # the recorded process started after the one now using its pid: not the same
        entry.write_text(
            f'{{"pid": {bystander.pid}, "pgid": {bystander.pid}, "start": 10000000000000}}'
        )
        assert records.kill_leftovers() == 0
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@needs_root
def test_isolated_container_sees_its_mounts_hosts_and_hostname(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    (volume / "data.txt").write_text("from the volume")
    rewritten = tmp_path / "rewritten"
    rewritten.mkdir()
    hosts = tmp_path / "hosts"
    hosts.write_text("127.1.2.3\tpeer.svc.ns.svc\n")
    target = f"/tmp/olmtool-test-{os.getpid()}/mnt"
    Path(target).mkdir(parents=True)
    try:
        spec = LaunchSpec(
            argv=[
                "/bin/sh",
                "-c",
                f"cat {target}/data.txt; echo; hostname; getent hosts peer.svc.ns.svc; "
                f"touch {target}/ro 2>/dev/null && echo writable || echo read-only; pwd",
            ],
            env={"PATH": "/usr/bin:/bin"},
            cwd=target,
            mounts=[Mount(volume, target, read_only=True), Mount(rewritten, "/data", bind=False)],
            hosts_file=hosts,
            hostname="pod-a",
        )
        process = launch(spec, isolated=True, log_file=tmp_path / "log")
        assert wait_exit(process) == 0, (tmp_path / "log").read_text()
        lines = (tmp_path / "log").read_text().splitlines()
        assert lines[0] == "from the volume"
        assert lines[1] == "pod-a"
        assert lines[2].split() == ["127.1.2.3", "peer.svc.ns.svc"]
        assert lines[3] == "read-only"
        assert lines[4] == target
        # the host saw none of it
        assert not (Path(target) / "data.txt").exists()
        assert os.uname().nodename != "pod-a"
    finally:
        Path(target).rmdir()
        Path(target).parent.rmdir()
