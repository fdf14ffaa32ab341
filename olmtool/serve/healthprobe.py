"""``grpc_health_probe``: grpc-ecosystem/grpc-health-probe's command, over grpcio.

OLM's registry pods probe their catalog image with ``grpc_health_probe -addr=:50051``
(readiness and liveness exec probes), so olmtool's catalog image carries this at
``/usr/bin/grpc_health_probe``: a ``#!/usr/bin/python3`` script calling :func:`main`
(also ``python -m olmtool.serve.healthprobe``). It takes upstream's flags, parsed as Go's
``flag`` package parses them (``-addr=:50051``, ``--addr :50051``; durations such as
``1s``, ``250ms``, ``1m30s``): ``-addr`` (required), ``-service``, ``-connect-timeout``
and ``-rpc-timeout`` (default 1s each), ``-user-agent``, ``-v``; TLS is not offered (the
catalog server speaks plaintext). It prints upstream's lines to stderr and exits with
upstream's codes:

===  ===========================================================
0    the service answered SERVING (``status: SERVING``)
1    invalid arguments
2    no connection within ``-connect-timeout``
3    the Check RPC failed (or did not end within ``-rpc-timeout``)
4    the service answered, but not SERVING
===  ===========================================================

It imports grpcio, grpcio-health-checking and what they import, nothing else (no
olmtool module either: the image's script loads this file alone), so a probe starts fast.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence

OK = 0
INVALID_ARGUMENTS = 1
CONNECTION_FAILURE = 2
RPC_FAILURE = 3
UNHEALTHY = 4

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class ArgumentProblem(Exception):
    """A flag Go's ``flag`` package (or the probe's own checks) would refuse."""


class Options:
    """The flags' values (a plain class: dataclasses would import inspect's helpers)."""

    def __init__(
        self,
        addr: str = "",
        service: str = "",
        user_agent: str = "grpc_health_probe",
        connect_timeout: float = 1.0,
        rpc_timeout: float = 1.0,
        verbose: bool = False,
    ) -> None:
        self.addr, self.service, self.user_agent = addr, service, user_agent
        self.connect_timeout, self.rpc_timeout, self.verbose = connect_timeout, rpc_timeout, verbose

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Options) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"Options({vars(self)})"


USAGE = """Usage of grpc_health_probe:
  -addr string
    \t(required) tcp host:port to connect
  -connect-timeout duration
    \ttimeout for establishing connection (default 1s)
  -rpc-timeout duration
    \ttimeout for health check rpc (default 1s)
  -service string
    \tservice name to check (default: "")
  -user-agent string
    \tuser-agent header value of health check requests (default "grpc_health_probe")
  -v\tverbose logs
"""

_STRINGS = {"addr": "addr", "service": "service", "user-agent": "user_agent"}
_DURATIONS = {"connect-timeout": "connect_timeout", "rpc-timeout": "rpc_timeout"}
_BOOLS = {"v": "verbose"}


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration``, in seconds (``"0"`` alone needs no unit)."""
    value = text
    sign = 1.0
    if value[:1] in "+-" and value:
        sign = -1.0 if value[0] == "-" else 1.0
        value = value[1:]
    if value == "0":
        return 0.0
    if not value:
        raise ValueError(f"time: invalid duration {_quote(text)}")
    total, position = 0.0, 0
    while position < len(value):
        match = _DURATION_PART.match(value, position)
        if match is None:
            if re.match(r"(\d+\.?\d*|\.\d+)$", value[position:]):
                raise ValueError(f"time: missing unit in duration {_quote(text)}")
            raise ValueError(f"time: invalid duration {_quote(text)}")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String`` for the values a probe prints (``1s``, ``250ms``, ``1m30s``)."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 1:
        for unit, size in (("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
            if seconds >= size:
                return f"{sign}{_trim(seconds / size)}{unit}"
    hours, rest = divmod(seconds, 3600)
    minutes, rest = divmod(rest, 60)
    text = f"{int(hours)}h" if hours else ""
    if hours or minutes:
        text += f"{int(minutes)}m"
    return f"{sign}{text}{_trim(rest)}s"


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_args(argv: Sequence[str]) -> Options:
    """Go ``flag`` rules: ``-name=value``, ``-name value`` (``--`` works like ``-``), a
    bare ``-v`` for booleans; parsing stops at ``--`` or the first non-flag."""
    options = Options()
    args = list(argv)
    while args:
        arg = args[0]
        if len(arg) < 2 or arg[0] != "-":
            break
        if arg == "--":
            break
        args.pop(0)
        name = arg[2:] if arg.startswith("--") else arg[1:]
        if not name or name[0] in "-=":
            raise ArgumentProblem(f"bad flag syntax: {arg}")
        name, has_value, value = name.partition("=")
        if name in ("h", "help"):
            raise ArgumentProblem("")  # upstream prints the usage and exits 1 too
        if name in _BOOLS:
            if has_value and value not in _TRUE + _FALSE:
                raise ArgumentProblem(f'invalid boolean value "{value}" for -{name}: parse error')
            setattr(options, _BOOLS[name], not has_value or value in _TRUE)
            continue
        if name not in _STRINGS and name not in _DURATIONS:
            raise ArgumentProblem(f"flag provided but not defined: -{name}")
        if not has_value:
            if not args:
                raise ArgumentProblem(f"flag needs an argument: -{name}")
            value = args.pop(0)
        if name in _STRINGS:
            setattr(options, _STRINGS[name], value)
            continue
        try:
            setattr(options, _DURATIONS[name], parse_duration(value))
        except ValueError:
            raise ArgumentProblem(
                f'invalid value "{value}" for flag -{name}: parse error'
            ) from None
    _check(options)
    return options


def _check(options: Options) -> None:
    if not options.addr:
        raise ArgumentProblem("error: -addr not specified")
    for flag, value in (
        ("connect-timeout", options.connect_timeout),
        ("rpc-timeout", options.rpc_timeout),
    ):
        if value <= 0:
            raise ArgumentProblem(
                f"error: -{flag} must be greater than zero (specified: {format_duration(value)})"
            )


def target(addr: str) -> str:
    """Go dials ``:50051`` on the local system; gRPC's resolver wants a host."""
    return f"localhost{addr}" if addr.startswith(":") else addr


def probe(options: Options, log: Callable[[str], None] | None = None) -> int:
    """Connect, call ``grpc.health.v1.Health/Check``, and return upstream's exit code."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    say = log or _stderr
    if options.verbose:
        say("parsed options:")
        say(
            f"> addr={options.addr} conn_timeout={format_duration(options.connect_timeout)} "
            f"rpc_timeout={format_duration(options.rpc_timeout)}"
        )
        say("> tls=false")
        say("establishing connection")
    channel = grpc.insecure_channel(
        target(options.addr), options=[("grpc.primary_user_agent", options.user_agent)]
    )
    try:
        try:
            grpc.channel_ready_future(channel).result(timeout=options.connect_timeout)
        except grpc.FutureTimeoutError:
            say(
                f"timeout: failed to connect service {_quote(options.addr)} "
                f"within {format_duration(options.connect_timeout)}"
            )
            return CONNECTION_FAILURE
        if options.verbose:
            say("connection established")
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service=options.service)
        try:
            response = stub.Check(request, timeout=options.rpc_timeout)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code == grpc.StatusCode.UNIMPLEMENTED:
                say(
                    "error: this server does not implement the grpc health protocol "
                    "(grpc.health.v1.Health)"
                )
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                say(
                    "timeout: health rpc did not complete within "
                    f"{format_duration(options.rpc_timeout)}"
                )
            else:
                say(f"error: health rpc failed: {_rpc_error(exc)}")
            return RPC_FAILURE
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
        if response.status != health_pb2.HealthCheckResponse.SERVING:
            say(f"service unhealthy (responded with {_quote(status)})")
            return UNHEALTHY
        say(f"status: {status}")
        return OK
    finally:
        channel.close()


def _rpc_error(exc: object) -> str:
    """Go's ``rpc error: code = NotFound desc = unknown service``."""
    code = getattr(exc, "code", lambda: None)()
    details = getattr(exc, "details", lambda: "")() or ""
    if code is None:
        return str(exc)
    name = "".join(part.capitalize() for part in code.name.split("_"))
    return f"rpc error: code = {name} desc = {details}"


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """The command: parse ``argv`` (default ``sys.argv[1:]``), probe, return the exit code."""
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except ArgumentProblem as problem:
        if str(problem):
            _stderr(str(problem))
        if not str(problem).startswith("error: "):
            sys.stderr.write(USAGE)
        return INVALID_ARGUMENTS
    try:
        return probe(options)
    except KeyboardInterrupt:
        _stderr("cancellation received")
        return CONNECTION_FAILURE


if __name__ == "__main__":
    sys.exit(main())
