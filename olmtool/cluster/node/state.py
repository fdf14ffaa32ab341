"""The state machine of one container, as plain data: what it is doing now
(:class:`ContainerPhase`, with the reason as data), how its instances ended, and its
restart accounting. Transitions take the time as an argument and do nothing else, so
the status a Pod reports (:func:`.status.pod_status`) is a function of these states.

::

    WAITING (ContainerCreating, ErrImagePull -> ImagePullBackOff,
             CreateContainerConfigError)
       |  started()                       ^
       v                                  | exited()/cannot_run(), will restart:
    RUNNING  --------------------------->-+ WAITING (CrashLoopBackOff)
       |  exited()/cannot_run(), will not restart
       v
    TERMINATED (Completed, Error, ContainerCannotRun)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

JSON = dict[str, Any]

CREATING = "ContainerCreating"
CRASH_LOOP = "CrashLoopBackOff"
ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACKOFF = "ImagePullBackOff"
CONFIG_ERROR = "CreateContainerConfigError"
CANNOT_RUN = "ContainerCannotRun"
PULL_BACKOFF_AFTER = 1.0  # seconds an ErrImagePull shows before it becomes ImagePullBackOff


class ContainerPhase(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    TERMINATED = "terminated"


@dataclass(frozen=True)
class Termination:
    """How one instance of a container ended (``state.terminated`` of its status)."""

    exit_code: int
    reason: str = ""
    message: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    container_id: str = ""
    signal: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> JSON:
        """The API form; empty fields are left out, as the apiserver leaves them out."""
        out: JSON = {"exitCode": self.exit_code}
        for key, value in (
            ("reason", self.reason),
            ("message", self.message),
            ("startedAt", self.started_at),
            ("finishedAt", self.finished_at),
            ("containerID", self.container_id),
            ("signal", self.signal),
        ):
            if value:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Termination:
        signal = data.get("signal")
        return cls(
            exit_code=int(data.get("exitCode") or 0),
            reason=str(data.get("reason") or ""),
            message=str(data.get("message") or ""),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            container_id=str(data.get("containerID") or ""),
            signal=int(signal) if signal else None,
        )


@dataclass
class ContainerState:
    """Everything a container's status is made of. ``termination`` is how the latest
    instance ended (shown as ``state`` when TERMINATED, as ``lastState`` while WAITING
    to restart); ``previous`` is how the instance before it ended."""

    name: str
    image: str
    init: bool = False
    phase: ContainerPhase = ContainerPhase.WAITING
    reason: str = CREATING  # why it is WAITING
    message: str = ""
    since: float = 0.0  # monotonic time the waiting reason was set
    next_start: float = 0.0  # monotonic time before which it must not (re)start
    restart_count: int = 0
    # it ran under a previous agent: its next start counts as a restart
    increment_on_start: bool = False
    pid: int = 0
    started_at: str | None = None
    image_id: str = ""
    ready: bool = False
    started: bool = False  # the startup probe (if any) passed
    backoff: float = 0.0  # the crash-loop delay in force, for the CrashLoopBackOff message
    termination: Termination | None = None
    previous: Termination | None = None

    # -- queries --------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.phase is ContainerPhase.RUNNING

    @property
    def succeeded(self) -> bool:
        return self.termination is not None and self.termination.succeeded

    @property
    def restarting(self) -> bool:
        """It ended and waits for its next start (crash loop)."""
        return self.phase is ContainerPhase.WAITING and self.termination is not None

    def next_restart_count(self) -> int:
        """The restart count its next start will have (names the next log file)."""
        return self.restart_count + 1 if self._restarts_on_start() else self.restart_count

    def _restarts_on_start(self) -> bool:
        return self.termination is not None or self.increment_on_start

    # -- transitions ------------------------------------------------------------------

    def adopt(self, old: Mapping[str, Any]) -> None:
        """Take over the restart count (and, for an init container, a completed run) of
        the status a previous agent reported."""
        self.restart_count = int(old.get("restartCount") or 0)
        state = old.get("state") or {}
        self.increment_on_start = (
            "running" in state
            or "terminated" in state
            or bool((old.get("lastState") or {}).get("terminated"))
        )
        done = state.get("terminated") or {}
        if self.init and done.get("exitCode") == 0:
            self.termination = Termination.from_json(done)  # it already ran to completion
            self.phase = ContainerPhase.TERMINATED

    def wait(self, reason: str, message: str, now: float, retry_in: float) -> None:
        """It cannot start yet (image, configuration); try again after ``retry_in``."""
        self.phase = ContainerPhase.WAITING
        self.reason, self.message, self.since = reason, message, now
        self.next_start = now + retry_in

    def pull_backing_off(self, now: float) -> None:
        """An ``ErrImagePull`` shown for a moment turns into ``ImagePullBackOff``."""
        if self.reason != ERR_IMAGE_PULL or now - self.since < PULL_BACKOFF_AFTER:
            return
        detail = self.message.split(": ", 1)[-1] if self.message else ""
        self.reason = IMAGE_PULL_BACKOFF
        self.message = f'Back-off pulling image "{self.image}": {detail}'

    def volumes_pending(self, message: str) -> None:
        self.message = message

    def started_instance(self, pid: int, started_at: str, image_id: str) -> None:
        """A new instance of it runs as ``pid``."""
        self._count_restart()
        self.phase = ContainerPhase.RUNNING
        self.pid, self.started_at, self.image_id = pid, started_at, image_id
        self.reason, self.message = "", ""
        self.ready = self.started = False

    def ended(self, termination: Termination, restart: bool, delay: float, now: float) -> None:
        """The instance ended (or could not run); ``restart`` after ``delay`` seconds."""
        self._count_restart()  # an instance that could not run still counts as one
        self.termination = termination
        self.pid = 0
        self.ready = self.started = False
        self.backoff = delay
        if restart:
            self.phase, self.reason, self.message = ContainerPhase.WAITING, CRASH_LOOP, ""
            self.next_start = now + delay
        else:
            self.phase = ContainerPhase.TERMINATED

    def _count_restart(self) -> None:
        if not self._restarts_on_start():
            return
        self.restart_count += 1
        self.increment_on_start = False
        if self.termination is not None:
            self.previous, self.termination = self.termination, None
