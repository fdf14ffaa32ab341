"""One exception hierarchy for olmtool.

``OlmtoolError`` subclasses are *user* errors: bad input files, schemas the generator
cannot express, configuration mistakes. The CLI prints them as one line (with the file
and line when known) and exits non-zero, never with a traceback. Anything else that
escapes is a bug in olmtool and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class OlmtoolError(Exception):
    """A problem with the user's input, reported as one line.

    >>> str(InputError("unknown key 'foo'", path="olmtool.yaml", line=3))
    'olmtool.yaml:3: unknown key \\'foo\\''
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


class SchemaError(OlmtoolError):
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


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it is inside it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)
