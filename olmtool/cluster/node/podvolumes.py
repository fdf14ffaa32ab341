"""The volumes of one Pod: set up all at once (a Pod starts only when every volume can
be), refreshed while it runs (ConfigMap, Secret and downward-API files every minute,
tokens when due), and turned into the mounts of each container.

The service-account token volume the admission plugin injects is replaced by the
agent's own directory (TokenRequest token, ``ca.crt``, ``namespace``), mounted at
:data:`~.volumes.SA_MOUNT`.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from olmtool.cluster.node.env import ConfigError
from olmtool.cluster.node.volumes import (
    SA_MOUNT,
    Mount,
    Volume,
    VolumeContext,
    atomic_write,
    materialise,
    plan_mounts,
    service_account_files,
)

JSON = dict[str, Any]
REFRESH_VOLUMES = 60.0  # seconds between rewrites of ConfigMap/Secret/downward volumes
SA_VOLUME = "__serviceaccount"
SA_REFRESH = 0.8  # renew the service-account token after 80% of its lifetime


def is_sa_volume(volume: JSON, pod_spec: JSON) -> bool:
    """The service-account token volume the admission plugin injects."""
    account = str(pod_spec.get("serviceAccountName") or "default")
    name = str(volume.get("name") or "")
    secret = (volume.get("secret") or {}).get("secretName") or ""
    if secret.startswith(f"{account}-token-") and name == secret:
        return True
    return name.startswith("kube-api-access-") and "projected" in volume


class PodVolumeSet:
    """The materialised volumes of a Pod, under its directory."""

    def __init__(self, pod_dir: Path) -> None:
        self.root = pod_dir / ".volumes"
        self.sa_dir = pod_dir / ".serviceaccount"
        self.volumes: dict[str, Volume] | None = None  # None until all could be set up
        self.refreshed = 0.0

    @property
    def ready(self) -> bool:
        return self.volumes is not None

    def set_up(self, pod_spec: JSON, ctx: VolumeContext, automount: bool, now: float) -> None:
        """Materialise every volume, or none: raises ``VolumeError``/``ConfigError`` (or an
        API error) while one cannot be."""
        volumes: dict[str, Volume] = {}
        for volume in pod_spec.get("volumes") or []:
            if automount and is_sa_volume(volume, pod_spec):
                continue  # replaced by the agent's TokenRequest directory
            made = materialise(volume, self.root, ctx)
            volumes[made.name] = made
        if automount:
            volumes[SA_VOLUME] = self._sa_volume(ctx)
        self.volumes = volumes
        self.refreshed = now

    def refresh(self, pod_spec: JSON, ctx: VolumeContext, now: float) -> None:
        """Rewrite the volumes that are due: all managed ones every minute, token volumes
        when their token is due. Raises what a rewrite raised; the old files stay (a due
        token is tried again on the next call, the rest at the next period)."""
        if self.volumes is None:
            return
        periodic = now - self.refreshed >= REFRESH_VOLUMES
        due = [v for v in self.volumes.values() if v.refresh_at and v.refresh_at <= now]
        if not periodic and not due:
            return
        if periodic:
            self.refreshed = now
        if any(v.name == SA_VOLUME for v in due):
            self.volumes[SA_VOLUME] = self._sa_volume(ctx)
        for volume in pod_spec.get("volumes") or []:
            current = self.volumes.get(str(volume.get("name")))
            if current is not None and _refresh_now(current, due, periodic):
                self.volumes[current.name] = materialise(volume, self.root, ctx)

    def _sa_volume(self, ctx: VolumeContext) -> Volume:
        files, lifetime = service_account_files(ctx)
        atomic_write(self.sa_dir, files, private=True, owner=ctx.owner)
        return Volume(SA_VOLUME, self.sa_dir, refresh_at=time.monotonic() + lifetime * SA_REFRESH)

    def mounts(self, container_spec: JSON, pod_spec: JSON, isolated: bool) -> list[Mount]:
        """Where the container sees its volumes (raises ``ConfigError`` for a volumeMount
        of a volume the Pod does not define)."""
        assert self.volumes is not None
        by_name = {str(v.get("name")): v for v in pod_spec.get("volumes") or []}
        wanted: list[tuple[str, Path, bool, str]] = []
        sa = self.volumes.get(SA_VOLUME)
        for mount in container_spec.get("volumeMounts") or []:
            name = str(mount.get("name"))
            target = os.path.normpath(str(mount.get("mountPath")))
            if sa is not None and (
                target == SA_MOUNT or is_sa_volume(by_name.get(name, {}), pod_spec)
            ):
                continue  # the agent's service-account directory takes its place
            volume = self.volumes.get(name)
            if volume is None:
                raise ConfigError(f"volume {name!r} of volumeMount {target} is not defined")
            sub_path = str(mount.get("subPath") or "")
            wanted.append((target, volume.path, bool(mount.get("readOnly")), sub_path))
        if sa is not None:
            wanted.append((SA_MOUNT, sa.path, True, ""))
        state_dir = self.root.parents[2]  # <state>/pods/<pod>/.volumes: images live there too
        return plan_mounts(wanted, isolated=isolated, visible=[state_dir])

    def remove(self) -> None:
        """Delete what the agent wrote for the Pod (hostPath and claim data stay)."""
        for path in (self.root, self.sa_dir):
            shutil.rmtree(path, ignore_errors=True)


def _refresh_now(volume: Volume, due: list[Volume], periodic: bool) -> bool:
    if not volume.managed:
        return False  # hostPath and claim directories are not the agent's to write
    if volume.refresh_at is not None:
        return volume in due  # holds a token: rewritten when the token is due
    return periodic
