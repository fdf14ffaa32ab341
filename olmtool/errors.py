"""One exception hierarchy for olmtool, so callers can catch broadly or precisely.

::

    OlmtoolError                 everything olmtool raises on purpose
    +-- InputError               the user's files or arguments are wrong
    |   +-- UsageError           the command was called wrongly (CLI exit 2), e.g.
    |   |   +-- ProjectNotFound  no olmtool.yaml
    |   +-- InputErrors          several problems of one file, a line each
    |   +-- ArgumentError        one argument of a call (the CLI names its flag)
    |   +-- SchemaError          a Python schema has no structural Kubernetes form
    |   +-- KubeconfigError      a kubeconfig missing, not YAML, without a context
    +-- (service errors)         a system olmtool drives failed: an OCI registry, the
    |                            control plane, the asset build, a local cluster
    +-- ClusterClientError       a cluster used as a client: ClusterUnreachable,
    |                            ClusterAuthError (401/403), ClusterRequestError
    +-- ServiceError            a state of a long-running component (a pod that cannot
                                 start, a request a server refuses), reported where it
                                 belongs (pod status, gRPC status), not a user mistake

The CLI prints any ``OlmtoolError`` as one line (with the file and line when known) and
exits non-zero, never with a traceback. Anything else that escapes is a bug in olmtool
and keeps its traceback. Library messages say what is wrong; only the CLI names flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


class OlmtoolError(Exception):
    """A problem with the user's input, reported as one line.

    >>> print(InputError("unknown key 'foo'", path="olmtool.yaml", line=3))
    olmtool.yaml:3: unknown key 'foo'
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = display_path(path) if path is not None else None
        self.line = line

    @property
    def location(self) -> str | None:
        if self.path is None:
            return None
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class InputError(OlmtoolError):
    """A file olmtool was asked to read is missing, malformed or inconsistent."""


class UsageError(InputError):
    """The command was called wrongly rather than given wrong data: no project file where
    one is needed, flags that need each other. The CLI exits 2 for it, as for a flag the
    parser refuses."""


class ProjectNotFound(UsageError):
    """No ``olmtool.yaml`` was given or found upward from the working directory."""


class InputErrors(InputError):
    """Several problems of one input, each with its own location (path and line), printed
    one per line; ``problems`` keeps them, the first is this error's own location.

    >>> print(InputErrors([InputError("a", path="x.yaml", line=3), InputError("b", path="x.yaml", line=5)]))
    x.yaml:3: a
    x.yaml:5: b
    """

    def __init__(self, problems: list[InputError]):
        first = problems[0]
        super().__init__(first.message, path=first.path, line=first.line)
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


class ArgumentError(InputError):
    """An argument of a library call is wrong or missing. ``argument`` is the keyword
    argument's name and the message reads after it; the CLI, which knows the flag behind
    the argument, names the flag instead.

    >>> print(ArgumentError("'x' is not a Kubernetes version", argument="k8s_version"))
    k8s_version 'x' is not a Kubernetes version
    """

    def __init__(self, message: str, *, argument: str):
        super().__init__(message)
        self.argument = argument

    def __str__(self) -> str:
        return f"{self.argument} {self.message}"


class PortTaken(ArgumentError):
    """A port cannot be bound: another process holds it (or it is not allowed). ``port``
    is the port; ``argument`` the keyword argument that chose it, so the CLI names its
    flag ("" when olmtool picked the port itself: the caller may retry on another).

    >>> print(PortTaken("8080: in use; choose another port", port=8080, argument="http_port"))
    http_port 8080: in use; choose another port
    """

    def __init__(self, message: str, *, port: int, argument: str = ""):
        super().__init__(message, argument=argument)
        self.port = port

    def __str__(self) -> str:
        return f"{self.argument} {self.message}" if self.argument else self.message


class ServiceError(OlmtoolError):
    """Not the user's input: a runtime state of a component (catalog server, OLM engine)
    that is reported to its client (pod status, gRPC status) rather than to a terminal."""


class KubeconfigError(InputError):
    """A kubeconfig is missing, unreadable, not YAML, or names no current context, cluster
    or server; the message names the file and the problem."""


class ClusterClientError(OlmtoolError):
    """A cluster olmtool uses as a client (``install``, ``uninstall``, ``test upgrade``)
    could not be used; ``server`` is its apiserver's URL."""

    def __init__(self, message: str, *, server: str = ""):
        super().__init__(message)
        self.server = server


class ClusterUnreachable(ClusterClientError):
    """The apiserver did not answer: connection refused or timed out, TLS failed, or an
    outage outlasted the retries."""


class ClusterAuthError(ClusterClientError):
    """The apiserver refused the kubeconfig's credentials (401) or the request (403)."""


class OlmNotInstalled(ClusterClientError):
    """The cluster does not serve OLM's API (``operators.coreos.com``): OLM is not
    installed there."""


class ClusterRequestError(ClusterClientError):
    """The apiserver refused a request for another reason; ``status`` is its HTTP code."""

    def __init__(self, message: str, *, server: str = "", status: int = 0):
        super().__init__(message, server=server)
        self.status = status


class SchemaError(InputError):
    """A Python schema cannot be expressed as a structural Kubernetes schema.

    ``model`` and ``field`` name the offending declaration.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        field: str | None = None,
        path: str | Path | None = None,
        line: int | None = None,
    ):
        where = ".".join(part for part in (model, field) if part)
        super().__init__(f"{where}: {message}" if where else message, path=path, line=line)
        self.model = model
        self.field = field


class SettingError(ValueError):
    """Raised by a validator of ``olmtool.yaml``'s models about one of the model's keys.

    A model-level rule (``defaultChannel`` must be one of ``channels``) would otherwise be
    reported at the model's own line; ``field`` is the key's path relative to the model
    (``defaultChannel``, ``releases[2].image``), so the error names the key's line. A
    ``ValueError`` because pydantic turns only those into validation errors."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class SettingErrors(ValueError):
    """Several :class:`SettingError` s of one model (the releases of ``bundle.releases``),
    each reported at its own key."""

    def __init__(self, problems: list[SettingError]):
        super().__init__("; ".join(problem.message for problem in problems))
        self.problems = problems


def raise_settings(problems: list[SettingError]) -> None:
    """Raise what ``problems`` holds: nothing, the one problem, or all of them."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise SettingErrors(problems)


def setting_problems(error: Mapping[str, Any]) -> list[tuple[str, str]]:
    """:func:`setting_problem` for each problem ``error`` carries (a
    :class:`SettingErrors` carries several)."""
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, SettingErrors):
        return [setting_problem({**error, "ctx": {"error": one}}) for one in cause.problems]
    return [setting_problem(error)]


# pydantic's error types that read better in olmtool.yaml's words
_SETTING_MESSAGES = {"extra_forbidden": "unknown key", "missing": "required key is missing"}


def setting_problem(error: Mapping[str, Any]) -> tuple[str, str]:
    """A pydantic error (one entry of ``ValidationError.errors()``) as the key's path
    (``a.b[0].c``, the notation :func:`olmtool.yamlread.YamlFile.line_at` reads) and a
    message; a :class:`SettingError`'s own field is appended to where it was raised."""
    path = ""
    cause = (error.get("ctx") or {}).get("error")
    extra = (cause.field,) if isinstance(cause, SettingError) else ()
    for part in (*error["loc"], *extra):
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.startswith("["):
            path += part
        elif not part.startswith("function-"):  # validator wrappers are not keys
            path += f".{part}" if path else part
    if isinstance(cause, SettingError):
        return path, cause.message
    message = _SETTING_MESSAGES.get(error["type"], error["msg"].removeprefix("Value error, "))
    return path, message


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it is inside it, else as given.

    Its last component is kept as written: a symlink is named, not its target (the file
    a finding is about may be a dangling or hostile link)."""
    given = Path(path)
    try:
        if given.name in ("", ".", ".."):
            resolved = given.resolve()
        else:
            resolved = given.parent.resolve() / given.name
        return str(resolved.relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (< 3.13)
        return str(path)
