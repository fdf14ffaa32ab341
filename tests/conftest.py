"""Shared fixtures: real ``docker-registry`` servers on loopback, and skopeo
as an independent client to check what olmtool pushed and wrote.

Without ``docker-registry`` or ``skopeo`` the tests that need them are skipped with the
reason, except under CI (``$CI`` set), where a missing tool is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from olmtool.cluster import pki
from olmtool.images import Credentials, LocalRegistry, find_registry_binary, start_registry

INSTALL = "apt-get install docker-registry skopeo"
POLICY = Path("/etc/containers/policy.json")
USER = Credentials("olmtool", "s3cret-pass")

Skopeo = Callable[..., Any]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (the e2e tests' workers): the longest modules first
    (tests/e2e/schedule.py); any other mode is xdist's own."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from tests.e2e.schedule import LongestModuleFirst

    return LongestModuleFirst(config, log)


def _require(available: bool, what: str) -> None:
    if available:
        return
    reason = f"{what} is not installed ({INSTALL})"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def bcrypt_hash(password: str) -> str | None:
    """A bcrypt hash (the only kind docker-registry's htpasswd accepts), from whatever
    this machine has: the bcrypt package, libcrypt via ``crypt``, or apache2-utils."""
    try:
        import bcrypt  # type: ignore[import-not-found]

        return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    except ImportError:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt  # removed in Python 3.13

            hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
            if hashed and hashed.startswith("$2"):
                return hashed
        except (ImportError, AttributeError, OSError):
            pass
    if shutil.which("htpasswd"):
        out = subprocess.run(
            ["htpasswd", "-nbB", "-C", "4", "x", password], capture_output=True, text=True
        )
        return out.stdout.strip().partition(":")[2] or None
    return None


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    _require(find_registry_binary() is not None, "docker-registry")
    with start_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="session")
def auth_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    """A registry with htpasswd Basic auth for ``USER``, over plain HTTP."""
    _require(find_registry_binary() is not None, "docker-registry")
    hashed = bcrypt_hash(USER.password)
    _require(hashed is not None, "a bcrypt implementation (pip install bcrypt)")
    state = tmp_path_factory.mktemp("auth-registry")
    htpasswd = state / "htpasswd"
    htpasswd.write_text(f"{USER.username}:{hashed}\n")
    with start_registry(state, htpasswd=htpasswd) as running:
        yield running


@pytest.fixture(scope="session")
def tls_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalRegistry, Path]]:
    """A registry serving HTTPS with a certificate from a throwaway CA; yields the CA file."""
    _require(find_registry_binary() is not None, "docker-registry")
    state = tmp_path_factory.mktemp("tls-registry")
    ca = pki.create_ca(state)
    serving = pki.create_serving_cert(
        state, ca, "registry", hosts=("localhost",), ips=("127.0.0.1",)
    )
    with start_registry(state, tls=(serving.cert, serving.key)) as running:
        yield running, ca.cert


@pytest.fixture(scope="session")
def skopeo() -> Skopeo:
    """Run skopeo; returns parsed JSON for ``inspect``, the completed process otherwise."""
    _require(shutil.which("skopeo") is not None, "skopeo")
    policy = [] if POLICY.is_file() else ["--insecure-policy"]

    def run(*args: str) -> Any:
        done = subprocess.run(
            ["skopeo", *policy, *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"skopeo {' '.join(args)} failed: {done.stderr}"
        return json.loads(done.stdout) if args[0] == "inspect" else done

    return run
