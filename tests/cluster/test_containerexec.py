"""kubectl exec's command runner: options, status, the process and its streams."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from olmtool.cluster.node.containerexec import (
    ExecError,
    ExecOptions,
    Invocation,
    exec_status,
    namespace_flags,
    run,
    status_json,
    status_text,
)

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a host sh")


class Streams:
    """An exec client in memory: what it types, what it gets."""

    def __init__(self, typed: bytes | None = None, resize: bytes | None = None) -> None:
        self.stdin: asyncio.StreamReader | None = None
        self.resize: asyncio.StreamReader | None = None
        self._typed, self._resize = typed, resize
        self.stdout = bytearray()
        self.stderr = bytearray()

    def open(self) -> Streams:  # readers need the running loop
        if self._typed is not None:
            self.stdin = asyncio.StreamReader()
            self.stdin.feed_data(self._typed)
            self.stdin.feed_eof()
        if self._resize is not None:
            self.resize = asyncio.StreamReader()
            self.resize.feed_data(self._resize)
        return self

    async def write_stdout(self, data: bytes) -> None:
        self.stdout += data

    async def write_stderr(self, data: bytes) -> None:
        self.stderr += data


def test_options_from_the_apiserver_query() -> None:
    options = ExecOptions.from_query(
        {"command": ["sh", "-c", "x"], "input": ["1"], "output": ["1"], "error": ["1"]}
    )
    assert options == ExecOptions(("sh", "-c", "x"), stdin=True, stdout=True, stderr=True)
    tty = ExecOptions.from_query(
        {"command": ["sh"], "stdout": ["true"], "error": ["1"], "tty": ["1"]}
    )
    assert tty.tty and not tty.stderr  # the terminal carries both
    with pytest.raises(ExecError, match="at least one command"):
        ExecOptions.from_query({"output": ["1"]})
    with pytest.raises(ExecError, match="at least 1 of stdin, stdout, stderr"):
        ExecOptions.from_query({"command": ["true"]})


def test_status_as_remotecommand_v4_reports_it() -> None:
    assert exec_status(0, ["true"]) == {"metadata": {}, "status": "Success"}
    failed = exec_status(3, ["sh", "-c", "exit 3"])
    assert failed["reason"] == "NonZeroExitCode"
    assert failed["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    broken = exec_status(None, ["x"], "executable not found")
    assert broken["reason"] == "InternalError" and broken["code"] == 500
    assert status_text(exec_status(0, ["true"])) == b""
    assert b"exit code 3" in status_text(failed)
    assert status_json(exec_status(0, [])) == b'{"metadata":{},"status":"Success"}'


def test_no_namespaces_to_join_for_a_process_of_our_own() -> None:
    assert namespace_flags(os.getpid()) == []
    with pytest.raises(ExecError, match="not running"):
        namespace_flags(2**22 + 12345)  # no such pid


def test_run_with_stdin_stdout_stderr_and_exit_code() -> None:
    async def scenario() -> tuple[int, Streams]:
        streams = Streams(typed=b"a\nb\n").open()
        invoked = Invocation(
            ["sh", "-c", "wc -l; echo $GREETING >&2; exit 3"], {"GREETING": "hi"}, "/"
        )
        code = await run(invoked, ExecOptions(("x",), stdin=True), streams)
        return code, streams

    code, streams = asyncio.run(scenario())
    assert code == 3
    assert streams.stdout.strip() == b"2"
    assert streams.stderr == b"hi\n"


def test_run_killed_by_signal_and_unstartable() -> None:
    async def scenario() -> int:
        return await run(
            Invocation(["sh", "-c", "kill -9 $$"], {}, "/"), ExecOptions(("x",)), Streams()
        )

    assert asyncio.run(scenario()) == 137

    async def missing() -> int:
        return await run(Invocation(["/no/such/program"], {}, "/"), ExecOptions(("x",)), Streams())

    with pytest.raises(ExecError, match="/no/such/program"):
        asyncio.run(missing())


def test_run_with_a_terminal_and_its_size() -> None:
    if shutil.which("stty") is None:
        pytest.skip("needs stty")

    async def scenario() -> tuple[int, Streams]:
        streams = Streams(typed=b"", resize=b'{"Width":100,"Height":30}\n').open()
        invoked = Invocation(["sh", "-c", "sleep 0.3; tty; stty size; exit 4"], {}, "/")
        code = await run(invoked, ExecOptions(("x",), stdin=True, stderr=False, tty=True), streams)
        return code, streams

    code, streams = asyncio.run(scenario())
    assert code == 4
    lines = streams.stdout.decode().split("\r\n")
    assert lines[0].startswith("/dev/pts/")
    assert lines[1] == "30 100"
