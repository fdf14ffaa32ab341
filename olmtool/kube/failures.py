"""What a request's failure means: the apiserver not reached (:func:`connection_problem`),
and every failure as one :class:`~olmtool.errors.OlmtoolError` line (:func:`map_error`,
:func:`cluster_errors`):

* no connection (refused, timed out, TLS, 502/503/504): ``ClusterUnreachable``, naming
  the server's URL;
* 401: ``ClusterAuthError``, the kubeconfig's credentials were refused;
* 403: ``ClusterAuthError`` with the apiserver's message;
* any other refusal: ``ClusterRequestError`` with the status and the apiserver's message.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import urllib3
from kubernetes.client.exceptions import ApiException

from olmtool.errors import (
    ClusterAuthError,
    ClusterRequestError,
    ClusterUnreachable,
    display_path,
)

if TYPE_CHECKING:
    from olmtool.kube.client import Kube
    from olmtool.kube.kubeconfig import Target


def status_of(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, ApiException) else None


# answers of an apiserver that is starting, overloaded or behind a proxy whose backend is
# away: worth sending again during an outage
RETRY_STATUSES = (429, 502, 503, 504)


@dataclass(frozen=True)
class ConnectionProblem:
    """Why a request did not reach the apiserver: ``text`` for a message (``connection
    refused``), ``retry`` whether the same request may get through later (a certificate
    the client rejects will not)."""

    text: str
    retry: bool = True


def connection_problem(exc: BaseException) -> ConnectionProblem | None:
    """The problem when ``exc`` (raised by a request) means the apiserver was not reached
    or answered as a server in trouble does; None for an answer (and anything else)."""
    if isinstance(exc, ApiException):
        if exc.status in RETRY_STATUSES:
            return ConnectionProblem(f"{exc.status} {exc.reason}")
        if exc.status == 0 and str(exc.reason or "").startswith("SSLError"):
            return _tls_problem(str(exc.reason).partition("\n")[2])
        return None
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        return connection_problem(exc.reason) or ConnectionProblem(_plain(exc.reason))
    if isinstance(exc, urllib3.exceptions.SSLError):
        return _tls_problem(str(exc.args[0] if exc.args else exc))
    if isinstance(exc, urllib3.exceptions.NameResolutionError):
        return ConnectionProblem(f"cannot resolve the host name ({_plain(exc)})")
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return ConnectionProblem(_plain(exc).partition("new connection: ")[2] or _plain(exc))
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
        return ConnectionProblem("connection timed out")
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return ConnectionProblem("no answer in time (read timed out)")
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return ConnectionProblem(f"connection lost ({_plain(exc)})")
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return ConnectionProblem(_plain(exc))
    return None


def _tls_problem(text: str) -> ConnectionProblem:
    verify = "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text
    return ConnectionProblem(f"TLS failed: {text.strip() or 'handshake'}", retry=not verify)


def _plain(exc: BaseException) -> str:
    """An exception's text without errno prefixes (``[Errno 111] Connection refused``)."""
    text = str(exc.args[-1] if isinstance(exc, OSError) and exc.args else exc)
    if isinstance(exc, urllib3.exceptions.ProtocolError) and len(exc.args) > 1:
        text = f"{exc.args[0]}: {exc.args[1]}"
    return re.sub(r"\[Errno -?\d+\] ", "", text).strip().rstrip(".")


@contextlib.contextmanager
def cluster_errors(kube: Kube, target: Target | None = None) -> Iterator[None]:
    """Turn what a request of ``kube`` raises into one-line OlmtoolErrors (see the
    module); anything else passes unchanged."""
    try:
        yield
    except Exception as exc:
        shown = target.shown if target is not None else display_path(kube.kubeconfig)
        mapped = map_error(exc, kube.server, shown)
        if mapped is None:
            raise
        raise mapped from None


def map_error(exc: BaseException, server: str, kubeconfig: str) -> Exception | None:
    """The OlmtoolError for what a request to ``server`` raised (``kubeconfig``: how to
    name the kubeconfig in it); None when ``exc`` is not a request's failure."""
    problem = connection_problem(exc)
    if problem is not None:
        return ClusterUnreachable(
            f"apiserver {server} is unreachable: {problem.text} (kubeconfig {kubeconfig})",
            server=server,
        )
    if not isinstance(exc, ApiException):
        return None
    said = _status_message(exc)
    if exc.status == 401:
        return ClusterAuthError(
            f"apiserver {server} refused the credentials in kubeconfig {kubeconfig} "
            "(401 Unauthorized)",
            server=server,
        )
    if exc.status == 403:
        return ClusterAuthError(
            f"apiserver {server} forbids it (403 Forbidden): {said or exc.reason}",
            server=server,
        )
    return ClusterRequestError(
        f"apiserver {server} refused a request: {exc.status} {exc.reason}"
        + (f": {said}" if said else ""),
        server=server,
        status=int(exc.status or 0),
    )


def describe(exc: BaseException) -> str:
    """A request's failure in a few words (``apiserver unreachable: Connection refused``,
    ``403 Forbidden: ...``), for lists of what could not be done."""
    problem = connection_problem(exc)
    if problem is not None:
        return f"apiserver unreachable: {problem.text}"
    if isinstance(exc, ApiException):
        said = _status_message(exc)
        return f"{exc.status} {exc.reason}" + (f": {said}" if said else "")
    return str(exc) or type(exc).__name__


def _status_message(exc: Any) -> str:
    """The ``message`` of the apiserver's Status answer ("" when there is none)."""
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return ""
    return str(body.get("message") or "").strip() if isinstance(body, dict) else ""
