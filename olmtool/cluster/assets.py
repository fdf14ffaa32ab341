"""Where the Kubernetes control-plane binaries come from.

In order: ``KUBEBUILDER_ASSETS`` (the envtest convention), then the olmtool cache
(``$XDG_CACHE_HOME/olmtool/assets/kubernetes-<version>-<recipe>``), which
:func:`build_assets` fills by building Kubernetes from Debian's source package. The
recipe is a digest of the build script, so binaries built by an older recipe (without a
patch the current one applies) are rebuilt, never reused; their folders are removed once
the new build is in place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from olmtool.errors import OlmtoolError

KUBERNETES_VERSION = "1.20.2"
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
NODE = ("kubelet", "kube-proxy", "pause")
EVERYTHING = (*CONTROL_PLANE, *NODE)
BUILD_SCRIPT = Path(__file__).with_name("build-kube-assets.sh")


class AssetsError(OlmtoolError):
    """The control-plane binaries are missing and cannot be built here."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "olmtool"


def recipe_revision() -> str:
    """The build recipe's revision: the first 12 hex digits of the script's sha256 (the
    script computes the same for its default output folder)."""
    return hashlib.sha256(BUILD_SCRIPT.read_bytes()).hexdigest()[:12]


def default_assets_dir() -> Path:
    return cache_dir() / "assets" / f"kubernetes-{KUBERNETES_VERSION}-{recipe_revision()}"


def _remove_stale_builds(current: Path) -> None:
    """Folders of older recipes (and of the unversioned layout) in the cache."""
    for folder in current.parent.glob(f"kubernetes-{KUBERNETES_VERSION}*"):
        if folder != current and folder.is_dir() and ".tmp." not in folder.name:
            shutil.rmtree(folder, ignore_errors=True)


def _complete(directory: Path, required: tuple[str, ...]) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in required)


def find_assets(required: tuple[str, ...] = EVERYTHING) -> Path | None:
    """A directory holding every ``required`` binary, or None."""
    envtest = os.environ.get("KUBEBUILDER_ASSETS")
    if envtest and _complete(Path(envtest), required):
        return Path(envtest)
    cached = default_assets_dir()
    return cached if _complete(cached, required) else None


def build_blocker() -> str | None:
    """Why the control plane cannot be built here, or None when it can."""
    if shutil.which("apt-get") is None:
        return "not a Debian system (no apt-get)"
    if os.geteuid() != 0 and shutil.which("sudo") is None:
        return "apt-get needs root or sudo"
    return None


def build_assets(target: Path | None = None) -> Path:
    """Build the control plane and the node's kubelet, kube-proxy and pause from Debian's
    kubernetes source package (minutes, cached; only what the folder lacks is built).

    The build script prints a line per stage on stderr (inherited: callers that capture
    output, like pytest, must let it through for the build to show progress)."""
    target = target or default_assets_dir()
    blocker = build_blocker()
    if blocker:
        raise AssetsError(
            f"cannot build Kubernetes here: {blocker}; "
            "set KUBEBUILDER_ASSETS to a folder with kube-apiserver and etcd"
        )
    result = subprocess.run(["bash", str(BUILD_SCRIPT), str(target)], check=False)
    if result.returncode != 0:
        raise AssetsError(
            f"building Kubernetes {KUBERNETES_VERSION} failed (exit {result.returncode}); "
            f"see {cache_dir() / 'build' / 'build-kube-assets.log'}"
        )
    if target == default_assets_dir():
        _remove_stale_builds(target)
    return target


def ensure_assets(required: tuple[str, ...] = EVERYTHING) -> Path:
    return find_assets(required) or build_assets()


def find_kubectl() -> Path:
    """The kubectl of the control plane's release (Debian's kubernetes-client 1.20, put
    beside the binaries by the build): a newer one warns about version skew against the
    local cluster's 1.20 server."""
    folder = find_assets(("kubectl",))
    if folder is None:
        raise AssetsError(
            f"no kubectl {KUBERNETES_VERSION} among the control-plane binaries "
            f"({default_assets_dir()}): `make assets` (olmtool cluster assets) puts it there"
        )
    return folder / "kubectl"
