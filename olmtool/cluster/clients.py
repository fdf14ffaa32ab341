"""A cluster as olmtool's client verbs use it (``install``, ``uninstall``, ``test
upgrade``): which kubeconfig, a checked :class:`~olmtool.cluster.kube.Kube` for it,
and every way that fails as one :class:`~olmtool.errors.OlmtoolError` line.

Which kubeconfig (:func:`resolve_target`): the one given, else the local cluster named,
else the first file of ``$KUBECONFIG`` that exists, else the local cluster ``olmtool``.
A kubeconfig and a local cluster's name are not given together.

:func:`connect` reads the kubeconfig (missing, unreadable, not YAML, no current context,
cluster or server: :class:`~olmtool.errors.KubeconfigError` naming the file) and asks the
apiserver for its ``/version`` once, so an unreachable server or refused credentials are
reported before anything is done. :func:`cluster_errors` maps what a request raises:

* no connection (refused, timed out, TLS, 502/503/504): ``ClusterUnreachable``, naming
  the server's URL;
* 401: ``ClusterAuthError``, the kubeconfig's credentials were refused;
* 403: ``ClusterAuthError`` with the apiserver's message;
* any other refusal: ``ClusterRequestError`` with the status and the apiserver's message.

Long-running verbs connect with ``outage_grace`` (:data:`OUTAGE_GRACE`): once the first
request got through, a request that cannot reach the apiserver is retried with back-off
for up to that long (an apiserver restarting), saying so through the progress callback.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olmtool.cluster import local
from olmtool.errors import (
    ArgumentError,
    ClusterAuthError,
    ClusterRequestError,
    ClusterUnreachable,
    KubeconfigError,
    display_path,
)

if TYPE_CHECKING:  # the client module pulls in the kubernetes package: imported on use
    from olmtool.cluster.kube import Kube

# how long an install or upgrade test rides out an apiserver that stopped answering
OUTAGE_GRACE = 60.0


@dataclass(frozen=True)
class Target:
    """The kubeconfig a verb uses; ``origin`` says where it came from ("" when given),
    ``cluster`` the local cluster it was taken from (when taken from one)."""

    kubeconfig: Path
    origin: str = ""
    cluster: local.Cluster | None = None

    @property
    def shown(self) -> str:
        where = f" ({self.origin})" if self.origin else ""
        return f"{display_path(self.kubeconfig)}{where}"


def resolve_target(kubeconfig: Path | None = None, name: str | None = None) -> Target:
    """``kubeconfig``, else the local cluster ``name``, else ``$KUBECONFIG`` (its first
    file that exists, else its first), else the local cluster ``olmtool``."""
    if kubeconfig is not None and name:
        raise ArgumentError(
            f"cannot be combined with a kubeconfig ({kubeconfig}): give one of them",
            argument="name",
        )
    if kubeconfig is not None:
        return Target(Path(kubeconfig))
    if name:
        cluster = local.read_cluster(name)
        if cluster is None:
            raise local.ClusterError(
                f"no local cluster named {name!r} (start one: olmtool cluster up --name {name})"
            )
        return Target(Path(cluster.kubeconfig), f"local cluster {name}", cluster)
    paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if paths:
        return Target(next((p for p in paths if p.exists()), paths[0]), "$KUBECONFIG")
    cluster = local.read_cluster(local.DEFAULT_NAME)
    if cluster is None:
        raise KubeconfigError(
            f"no kubeconfig given, $KUBECONFIG is not set and there is no local cluster "
            f"{local.DEFAULT_NAME!r} (start one: olmtool cluster up)"
        )
    return Target(Path(cluster.kubeconfig), f"local cluster {local.DEFAULT_NAME}", cluster)


def resolve_kubeconfig(kubeconfig: Path | None = None, name: str | None = None) -> Path:
    return resolve_target(kubeconfig, name).kubeconfig


def local_cluster_of(target: Target) -> local.Cluster | None:
    """The local cluster whose kubeconfig ``target`` is (by resolved path), if any."""
    if target.cluster is not None:
        return target.cluster
    try:
        wanted = target.kubeconfig.resolve()
    except (OSError, RuntimeError):
        return None
    root = local.clusters_root()
    names = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    for name in names:
        try:
            cluster = local.read_cluster(name)
        except (OSError, ValueError, TypeError, ArgumentError):  # not a cluster's state
            continue
        if cluster is not None and Path(cluster.kubeconfig).resolve() == wanted:
            return cluster
    return None


def check_kubeconfig(target: Target) -> None:
    """KubeconfigError naming the file unless it is a YAML kubeconfig whose current
    context names a cluster with a server."""
    import yaml

    shown = target.shown
    path = target.kubeconfig
    if not path.exists():
        raise KubeconfigError(f"kubeconfig {shown} does not exist")
    if not path.is_file():
        raise KubeconfigError(f"kubeconfig {shown} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KubeconfigError(f"kubeconfig {shown} cannot be read: {_reason(exc)}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig {shown} is not YAML: {_yaml_problem(exc)}") from None
    if data is None:
        raise KubeconfigError(f"kubeconfig {shown} is empty")
    if not isinstance(data, dict):
        raise KubeconfigError(
            f"kubeconfig {shown} is not a kubeconfig (a mapping with clusters, users, "
            f"contexts and current-context), but a YAML {type(data).__name__}"
        )
    current = data.get("current-context")
    if not current:
        raise KubeconfigError(f"kubeconfig {shown} has no current-context")
    context = _named(data, "contexts", current)
    if context is None:
        raise KubeconfigError(
            f"kubeconfig {shown}: its current-context {current!r} is not among its contexts"
        )
    cluster_name = (context.get("context") or {}).get("cluster")
    if not cluster_name:
        raise KubeconfigError(f"kubeconfig {shown}: context {current!r} names no cluster")
    cluster = _named(data, "clusters", cluster_name)
    if cluster is None:
        raise KubeconfigError(
            f"kubeconfig {shown}: cluster {cluster_name!r} of context {current!r} is not "
            "among its clusters"
        )
    if not (cluster.get("cluster") or {}).get("server"):
        raise KubeconfigError(f"kubeconfig {shown}: cluster {cluster_name!r} has no server")


def _named(data: dict[str, Any], section: str, name: object) -> dict[str, Any] | None:
    entries = data.get(section)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def _yaml_problem(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(problem)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def connect(
    target: Target,
    *,
    outage_grace: float = 0.0,
    progress: Callable[[str], None] | None = None,
) -> Kube:
    """A client for ``target`` whose apiserver answered ``/version`` with the
    kubeconfig's credentials; its requests then ride out outages of up to
    ``outage_grace`` seconds (see :class:`~olmtool.cluster.kube.Kube`)."""
    from kubernetes.config.config_exception import ConfigException

    from olmtool.cluster.kube import Kube

    check_kubeconfig(target)
    try:
        kube = Kube(target.kubeconfig)
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise KubeconfigError(f"kubeconfig {target.shown} cannot be used: {_reason(exc)}") from None
    try:
        with cluster_errors(kube, target):
            kube.get("/version")
    except BaseException:
        kube.close()
        raise
    kube.outage_grace = outage_grace
    kube.on_outage = progress
    return kube


@contextlib.contextmanager
def cluster_errors(kube: Kube, target: Target | None = None) -> Iterator[None]:
    """Turn what a request of ``kube`` raises into one-line OlmtoolErrors (see the
    module); anything else passes unchanged."""
    try:
        yield
    except Exception as exc:
        mapped = map_error(exc, kube.server, target or Target(kube.kubeconfig))
        if mapped is None:
            raise
        raise mapped from None


def map_error(exc: BaseException, server: str, target: Target) -> Exception | None:
    """The OlmtoolError for what a request to ``server`` raised; None when ``exc`` is not
    a request's failure."""
    from kubernetes.client.exceptions import ApiException

    from olmtool.cluster.kube import connection_problem

    problem = connection_problem(exc)
    if problem is not None:
        return ClusterUnreachable(
            f"apiserver {server} is unreachable: {problem.text} (kubeconfig {target.shown})",
            server=server,
        )
    if not isinstance(exc, ApiException):
        return None
    said = _status_message(exc)
    if exc.status == 401:
        return ClusterAuthError(
            f"apiserver {server} refused the credentials in kubeconfig {target.shown} "
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
    from kubernetes.client.exceptions import ApiException

    from olmtool.cluster.kube import connection_problem

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


__all__ = [
    "OUTAGE_GRACE",
    "Target",
    "check_kubeconfig",
    "cluster_errors",
    "connect",
    "describe",
    "local_cluster_of",
    "map_error",
    "resolve_kubeconfig",
    "resolve_target",
]
