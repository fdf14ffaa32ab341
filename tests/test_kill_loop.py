"""kill -9 loops over ``catalog publish`` and ``bundle build`` (issue 15).

On a copy of the repository's project, each command runs in a subprocess with
``OLMTOOL_TEST_WRITE_PAUSE`` (``fsutil``'s test hook: every step of a write prints a line
and sleeps), and is SIGKILLed at a seeded random moment: mostly inside the write (after
its first step line), sometimes anywhere in the run. Each run changes what it writes (two
variants of olmtool.yaml, alternately). After every kill the target directory must exist
and hold exactly the old or the new tree, the loaders must not read what the kill left
(no "duplicate package", no extra bundle) and the Dockerfile must never be newer than the
catalog (``--check`` reports a catalog whose Dockerfile is behind). A last run, not
killed, must leave no leftovers anywhere in the project.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from olmtool.actions import catalog_publish
from olmtool.catalog.load import catalog_files, load_catalog
from olmtool.catalog.publishing import _expand
from olmtool.fsutil import PAUSE_ENV, is_staging, read_tree

REPO = Path(__file__).resolve().parents[1]
PAUSE = 0.1  # seconds per step of a write
KILLS = 22  # per command
SEED = 15
RUN_TIMEOUT = 60.0
pytestmark = pytest.mark.slow  # ~30 s on an idle 2-core machine; make test-unit runs it
# fsutil's paused steps in one run: the tree half written, staged, swapped in (the old
# tree not yet removed); publish then writes the Dockerfile (written: not yet renamed)
STEPS = {
    "bundle": ["staging", "staged", "swapped"],
    "catalog": ["staging", "staged", "swapped", "written"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kill-loop") / "project"
    root.mkdir()
    for name in ("olmtool.yaml", "catalog.Dockerfile"):
        shutil.copy2(REPO / name, root / name)
    for name in ("bundle", "catalog", "operator"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def variant(project: Path, command: str, which: int) -> None:
    """olmtool.yaml as the repository has it (0) or changed where ``command`` reads (1)."""
    text = (REPO / "olmtool.yaml").read_text(encoding="utf-8")
    if which and command == "bundle":
        text = text.replace("displayName: etcd operator (olmtool)", "displayName: etcd (B)", 1)
    elif which:
        text = text.replace("upgrade to 0.3.0.", "upgrade to 0.3.0 (B).", 1)
        text = text.replace("\n  output: catalog\n", "\n  output: catalog\n  baseImage: opm:b\n")
    (project / "olmtool.yaml").write_text(text, encoding="utf-8")


def olmtool_argv(command: str) -> list[str]:
    verb = ["bundle", "build"] if command == "bundle" else ["catalog", "publish"]
    return [sys.executable, "-m", "olmtool", *verb]


def run(project: Path, command: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        olmtool_argv(command),
        cwd=project,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr


def run_and_kill(
    project: Path, command: str, rng: random.Random, typical: float
) -> tuple[str, str]:
    """Start the command and SIGKILL it: a quarter of the time at a random moment of the
    run, else at a random step of its write (within that step's pause or just after).
    Returns (where, "killed" or "exited")."""
    process = subprocess.Popen(
        olmtool_argv(command),
        cwd=project,
        env={**os.environ, PAUSE_ENV: str(PAUSE)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        if rng.random() < 0.25:
            where = "anywhere"
            time.sleep(rng.uniform(0, typical))
        else:
            where = rng.choice(STEPS[command])
            marker = f"{PAUSE_ENV}: {where} ".encode()
            deadline, buffer = time.monotonic() + RUN_TIMEOUT, b""
            while marker not in buffer and time.monotonic() < deadline:
                ready, _, _ = select.select([process.stderr], [], [], 0.5)
                if ready:
                    chunk = os.read(process.stderr.fileno(), 4096)
                    if not chunk:
                        break  # exited without that step (nothing of that kind to write)
                    buffer += chunk
            time.sleep(rng.uniform(0, PAUSE * 1.5))
        if process.poll() is not None:
            return where, "exited"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=RUN_TIMEOUT)
        return where, "killed"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


def leftovers(project: Path) -> list[str]:
    found = []
    for directory, dirnames, filenames in os.walk(project):
        for name in dirnames + filenames:
            if is_staging(name) or ".old-" in name:
                found.append(os.path.relpath(os.path.join(directory, name), project))
    return sorted(found)


def catalog_state(project: Path) -> tuple[dict[str, str], str]:
    return read_tree(project / "catalog" / "etcd-operator"), (
        project / "catalog.Dockerfile"
    ).read_text(encoding="utf-8")


BUNDLE = Path("bundle/etcd-operator/0.5.0")  # the newest: what bundle build writes


def check_bundle(project: Path, old: dict[str, str], new: dict[str, str]) -> str:
    target = project / BUNDLE
    assert target.is_dir(), "the bundle directory went missing"
    tree = read_tree(target)
    assert tree in (old, new), "the bundle directory is neither the old nor the new tree"
    bundles = _expand("bundle/etcd-operator/*", project)
    assert [Path(b).name for b in bundles] == ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"]
    return "new" if tree == new else "old"


def check_catalog(
    project: Path, old: tuple[dict[str, str], str], new: tuple[dict[str, str], str]
) -> str:
    assert (project / "catalog" / "etcd-operator").is_dir(), "the package directory went missing"
    tree, docker = catalog_state(project)
    assert tree in (old[0], new[0]), "the package is neither the old nor the new tree"
    assert docker in (old[1], new[1]), "the Dockerfile is neither the old nor the new one"
    catalog_new, docker_new = tree == new[0], docker == new[1]
    if old[0] != new[0] and old[1] != new[1]:
        assert catalog_new or not docker_new, "the Dockerfile was published before the catalog"
    loaded = load_catalog(project / "catalog")
    assert not loaded.errors, loaded.errors
    assert not [p for p in catalog_files(project / "catalog") if is_staging(p.parent.name)]
    if catalog_new and not docker_new:
        assert catalog_publish(config=project / "olmtool.yaml", check=True).failed
        return "catalog new, Dockerfile old"
    return "new" if catalog_new and tree != old[0] else "old"


def kill_loop(
    project: Path,
    command: str,
    state: Callable[[], object],
    check: Callable[[object, object], str],
    primary: Callable[[object], object] = lambda state: state,
) -> Counter[str]:
    rng = random.Random(f"{SEED}/{command}")
    trees = []
    for which in (1, 0):  # the two trees, written by runs that are not killed
        variant(project, command, which)
        started = time.monotonic()
        run(project, command, {PAUSE_ENV: str(PAUSE)})
        typical = time.monotonic() - started
        trees.append(state())
    new_of = {1: trees[0], 0: trees[1]}
    outcomes: Counter[str] = Counter()
    iteration = 0
    while outcomes["kills"] < KILLS and iteration < KILLS * 2:
        iteration += 1
        old = state()
        # the variant whose target tree differs from the one on disk (a run killed before
        # its swap left the old one), so that every run has a tree to write
        which = 0 if primary(old) == primary(new_of[1]) else 1
        variant(project, command, which)
        where, happened = run_and_kill(project, command, rng, typical)
        outcomes["kills" if happened == "killed" else "exited"] += 1
        outcomes[f"{happened} at {where}"] += 1
        outcomes[check(old, new_of[which])] += 1
        outcomes["with leftovers"] += bool(leftovers(project))
    run(project, command)  # not killed, without the pause hook
    assert leftovers(project) == []
    assert state() == new_of[which]
    return outcomes


def test_kill_loop_bundle_build(project: Path) -> None:
    outcomes = kill_loop(
        project,
        "bundle",
        lambda: read_tree(project / BUNDLE),
        lambda old, new: check_bundle(project, old, new),  # type: ignore[arg-type]
    )
    print(f"bundle build: {dict(outcomes)}")
    assert outcomes["kills"] == KILLS
    assert all(outcomes[f"killed at {step}"] for step in STEPS["bundle"])
    assert outcomes["old"] and outcomes["new"]  # kills landed before and after the swap
    assert outcomes["with leftovers"]  # which the last run removed


def test_kill_loop_catalog_publish(project: Path) -> None:
    outcomes = kill_loop(
        project,
        "catalog",
        lambda: catalog_state(project),
        lambda old, new: check_catalog(project, old, new),  # type: ignore[arg-type]
        lambda state: state[0],  # type: ignore[index]  # the package tree
    )
    print(f"catalog publish: {dict(outcomes)}")
    assert outcomes["kills"] == KILLS
    assert all(outcomes[f"killed at {step}"] for step in STEPS["catalog"][:3])
    assert outcomes["old"] and outcomes["new"] + outcomes["catalog new, Dockerfile old"]
    assert outcomes["with leftovers"]
