"""The README's quick start, checked without a cluster: the marked blocks exist, come in
an order that works on a fresh machine, and name no fixed port (tests/e2e/test_readme.py
runs them)."""

from __future__ import annotations

import re

import pytest

from tests.readme import readme_blocks, readme_script


def _commands() -> list[str]:
    return [
        line.split("#", 1)[0].strip()
        for block in readme_blocks()
        for line in block.splitlines()
        if line.split("#", 1)[0].strip()
    ]


def test_the_quick_start_is_marked_to_run() -> None:
    commands = _commands()
    assert commands[0] == "source .venv/bin/activate"  # as the README says to
    for needed in (
        "olmtool init foo --package foo-operator --group demo.example.com --kind Widget",
        "olmtool cluster up",
        "olmtool cluster down",
    ):
        assert needed in commands


def test_the_cluster_is_up_before_any_push_and_down_at_the_end() -> None:
    commands = _commands()
    up = commands.index("olmtool cluster up")
    pushes = [i for i, command in enumerate(commands) if "--push" in command]
    assert pushes and min(pushes) > up
    assert commands[-1].startswith("olmtool cluster down")
    uses = [i for i, c in enumerate(commands) if "olmtool cluster" in c and "up" not in c]
    assert all(i > up for i in uses)


def test_the_quick_start_names_no_fixed_port() -> None:
    """The registry's address comes from the cluster, the server's ports from flags or
    their variables (a test runs the commands on free ports); ``localhost:5000/`` is the
    cluster registry's alias, not a port."""
    commands = "\n".join(_commands()).replace("${OLMTOOL_HTTP_PORT:-8080}", "PORT")
    assert not re.findall(r"127\.0\.0\.1:\d+|localhost:(?!5000/)\d+", commands)
    assert "$REGISTRY/" in commands and "$(olmtool cluster registry)" in commands


def test_catalog_add_takes_a_version_the_catalog_does_not_hold() -> None:
    commands = _commands()
    release = next(c for c in commands if c.startswith("olmtool bundle release"))
    version = release.split()[3]
    added = next(c for c in commands if c.startswith("olmtool catalog add"))
    assert f"/{version}" in added and commands.index(release) < commands.index(added)


def test_marks_without_a_block_are_errors() -> None:
    with pytest.raises(ValueError, match="must be followed by a ```sh block"):
        readme_blocks("<!-- readme-test -->\ntext\n")
    with pytest.raises(ValueError, match="never closed"):
        readme_blocks("<!-- readme-test -->\n```sh\nls\n")
    assert readme_blocks("a\n<!-- readme-test -->\n\n```sh\nls\ncd x\n```\n```sh\nno\n```") == [
        "ls\ncd x"
    ]


def test_the_script_stops_at_the_first_failure() -> None:
    script = readme_script(["echo a", "cd x"])
    assert script.startswith("set -euo pipefail\n")
    assert script.index("echo a") < script.index("cd x")
