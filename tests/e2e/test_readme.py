"""The README's quick start, run as written: its marked shell blocks (tests/readme.py), in
order, by one bash, in a scratch copy of this repository.

What the unmarked steps (``make install``, ``make tools``, ``make assets``) would leave is
provided instead: ``.venv`` is a symlink to the environment running the tests (never
re-created), the control plane comes from the session's ``kube_assets``. The cluster is
the commands' own (default name) under a state root of this test, its registry and
``catalog serve`` on free ports (``OLMTOOL_REGISTRY_PORT``/``_GRPC_PORT``/``_HTTP_PORT``,
which the README documents), so it never meets another test's cluster or a fixed port;
``cluster down --delete`` runs whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool.images import find_registry_binary
from olmtool.ports import free_port
from tests.readme import readme_blocks, readme_script

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 600


def _scratch_copy(target: Path) -> None:
    """The checkout's files as git sees them (tracked, plus new ones not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.is_file() and not source.is_symlink():
            continue  # deleted in the working tree
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)


def _environment(tmp_path: Path, assets: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),  # the code under test, whatever the venv points at
        "KUBEBUILDER_ASSETS": str(assets),
        "OLMTOOL_CLUSTERS_DIR": str(tmp_path / "clusters"),
        "OLMTOOL_REGISTRY_PORT": "0",
        "OLMTOOL_GRPC_PORT": str(free_port()),
        "OLMTOOL_HTTP_PORT": str(free_port()),
    }


@pytest.fixture
def checkout(tmp_path: Path, kube_assets: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A scratch checkout with ``.venv``, and the environment; the cluster the README
    starts is deleted afterwards, also when a command failed."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no file list for the scratch copy")
    if not (Path(sys.prefix) / "bin" / "activate").is_file():
        pytest.skip(f"{sys.prefix} is no virtual environment (the README activates .venv)")
    if find_registry_binary() is None:
        pytest.skip("no docker-registry for the cluster's registry (make tools installs it)")
    if shutil.which("curl") is None:
        pytest.skip("no curl (the README queries catalogd with it)")
    root = tmp_path / "olmtool"
    root.mkdir()
    _scratch_copy(root)
    (root / ".venv").symlink_to(Path(sys.prefix))
    env = _environment(tmp_path, kube_assets)
    try:
        yield root, env
    finally:
        subprocess.run(
            [sys.executable, "-m", "olmtool", "cluster", "down", "--delete"],
            env=env,
            cwd=root,
            capture_output=True,
            timeout=120,
        )


def test_the_quick_start_runs_as_written(checkout: tuple[Path, dict[str, str]]) -> None:
    root, env = checkout
    log = root.parent / "readme.log"
    with log.open("wb") as output:
        bash = subprocess.Popen(
            ["bash", "-c", readme_script(readme_blocks())],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its background `catalog serve` goes with it
        )
        try:
            code = bash.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError):  # all ended already
                os.killpg(bash.pid, signal.SIGKILL)
            bash.wait()
    text = log.read_text(errors="replace")
    assert code == 0, f"the README's quick start failed (exit {code}):\n{text[-6000:]}"
    assert "foo-operator.v0.2.0" in text  # the graph after catalog add
    assert '"schema":"olm.package"' in text.replace(" ", "")  # catalogd answered
    assert "pushed" in text
