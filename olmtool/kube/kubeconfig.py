"""Which kubeconfig, and a checked client for it.

:func:`from_environment` is ``$KUBECONFIG``'s choice (its first file that exists, else
its first). :func:`connect` reads the kubeconfig (missing, unreadable, not YAML, no
current context, cluster or server: :class:`~olmtool.errors.KubeconfigError` naming the
file) and asks the apiserver for its ``/version`` once, so an unreachable server or
refused credentials are reported before anything is done.

Long-running verbs connect with ``outage_grace`` (:data:`OUTAGE_GRACE`): once the first
request got through, a request that cannot reach the apiserver is retried with back-off
for up to that long (an apiserver restarting), saying so through the progress callback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olmtool.errors import KubeconfigError, display_path
from olmtool.kube.failures import cluster_errors

if TYPE_CHECKING:  # the client module pulls in the kubernetes package: imported on use
    from olmtool.kube.client import Kube

# how long an install or upgrade test rides out an apiserver that stopped answering
OUTAGE_GRACE = 60.0


@dataclass(frozen=True)
class Target:
    """The kubeconfig a verb uses; ``origin`` says where it came from ("" when given:
    ``$KUBECONFIG``, ``local cluster NAME``)."""

    kubeconfig: Path
    origin: str = ""

    @property
    def shown(self) -> str:
        where = f" ({self.origin})" if self.origin else ""
        return f"{display_path(self.kubeconfig)}{where}"


def from_environment() -> Target | None:
    """``$KUBECONFIG``'s kubeconfig (its first file that exists, else its first); None
    when it is not set."""
    paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not paths:
        return None
    return Target(next((p for p in paths if p.exists()), paths[0]), "$KUBECONFIG")


def check_kubeconfig(target: Target) -> None:
    """KubeconfigError naming the file unless it is a YAML kubeconfig whose current
    context names a cluster with a server."""
    shown = target.shown
    data = _kubeconfig_data(target)
    current = data.get("current-context")
    if not current:
        raise KubeconfigError(f"kubeconfig {shown} has no current-context")
    missing = f"its current-context {current!r} is not among its contexts"
    context = _named(data, "contexts", current, shown, missing)
    cluster_name = (context.get("context") or {}).get("cluster")
    if not cluster_name:
        raise KubeconfigError(f"kubeconfig {shown}: context {current!r} names no cluster")
    missing = f"cluster {cluster_name!r} of context {current!r} is not among its clusters"
    cluster = _named(data, "clusters", cluster_name, shown, missing)
    if not (cluster.get("cluster") or {}).get("server"):
        raise KubeconfigError(f"kubeconfig {shown}: cluster {cluster_name!r} has no server")


def _kubeconfig_data(target: Target) -> dict[str, Any]:
    """The kubeconfig's YAML mapping (KubeconfigError naming the file otherwise)."""
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
    return data


def _named(
    data: dict[str, Any], section: str, name: object, shown: str, missing: str
) -> dict[str, Any]:
    """The entry of ``section`` called ``name`` (KubeconfigError saying ``missing``)."""
    entries = data.get(section)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    raise KubeconfigError(f"kubeconfig {shown}: {missing}")


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
    ``outage_grace`` seconds (see :class:`~olmtool.kube.Kube`)."""
    from kubernetes.config.config_exception import ConfigException

    from olmtool.kube.client import Kube

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
