"""A node's mount namespace, made for real (root and util-linux's unshare/nsenter)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from olmtool.cluster.kubeletnode import mountns

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")),
    reason="a mount namespace needs root and util-linux",
)


def test_the_nodes_log_folders_are_its_own_and_the_namespace_ends_with_release(
    tmp_path: Path,
) -> None:
    pin = mountns.ensure(tmp_path / "node", f"test-{uuid.uuid4().hex[:8]}")
    try:
        assert mountns.ensure(tmp_path / "node", pin.name) == pin  # pinned: reused
        marker = f"marker-{uuid.uuid4().hex[:8]}"
        argv = mountns.enter(pin, ["sh", "-c", f"touch /var/log/pods/{marker}; sleep 60"])
        sleeper = subprocess.Popen(argv)
        try:
            for _ in range(50):
                if (tmp_path / "node" / "logs" / "pods" / marker).exists():
                    break
                subprocess.run(["sleep", "0.1"], check=True)
            assert (tmp_path / "node" / "logs" / "pods" / marker).exists()
            assert not Path("/var/log/pods", marker).exists()  # the host's folder untouched
        finally:
            killed = mountns.release(pin)
            sleeper.wait(timeout=10)
        assert sleeper.pid in killed  # what still ran in the namespace went with it
        assert not pin.exists()
    finally:
        mountns.release(pin)
