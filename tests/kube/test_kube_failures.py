"""The cluster clients of ``install``, ``uninstall`` and ``test upgrade``: every way a
cluster cannot be used is one line and exit 1 (unreachable, missing or malformed
kubeconfig, refused credentials), which kubeconfig is used (``--kubeconfig``, ``--name``,
``$KUBECONFIG``, the default local cluster), and requests riding out an apiserver outage.

The apiservers here are tiny HTTP servers in this process; the real apiserver's
answers are checked in the e2e tests."""

from __future__ import annotations

import contextlib
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from olmtool.cli import main
from olmtool.cluster.target import resolve_target
from olmtool.errors import (
    ArgumentError,
    ClusterAuthError,
    ClusterRequestError,
    ClusterUnreachable,
    KubeconfigError,
)
from olmtool.kube import Kube, Target, check_kubeconfig, cluster_errors, connect, connection_problem
from olmtool.ports import free_port

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "catalog"

VERSION = {"major": "1", "minor": "20", "gitVersion": "v1.20.2"}


def kubeconfig(path: Path, server: str, token: str = "t0ken") -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


class Apiserver:
    """An HTTP server answering every request with ``status`` and ``body`` (JSON); the
    ``answers`` list, when not empty, gives the next answers first."""

    def __init__(self, port: int = 0, status: int = 200, body: Any = VERSION) -> None:
        self.status, self.body = status, body
        self.answers: list[tuple[int, Any]] = []
        self.requests: list[tuple[str, str]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                owner.requests.append((self.command, self.path))
                status, body = owner.answers.pop(0) if owner.answers else (owner.status, owner.body)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def apiserver(**kwargs: Any) -> Iterator[Apiserver]:
    server = Apiserver(**kwargs)
    try:
        yield server
    finally:
        server.stop()


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["olmtool", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    return int(exc.value.code or 0)


# every verb that talks to a cluster, with arguments that get as far as the cluster
VERBS = {
    "install": ["install", "etcd-operator", "--catalog", "127.0.0.1:1", "--timeout", "5"],
    "uninstall": ["uninstall", "etcd-operator"],
    "test upgrade": [
        "test",
        "upgrade",
        "--catalog",
        str(CATALOG),
        "--package",
        "etcd-operator",
        "--from",
        "0.2.0",
    ],
}


@pytest.fixture
def no_local_clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "clusters"
    monkeypatch.setenv("OLMTOOL_CLUSTERS_DIR", str(root))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return root


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return " ".join(lines[0].split())


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_an_apiserver_nobody_listens_on_is_one_line(
    verb: str,
    tmp_path: Path,
    no_local_clusters: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = f"https://127.0.0.1:{free_port()}"
    config = kubeconfig(tmp_path / "kc.yaml", server)
    started = time.monotonic()
    assert run_main(monkeypatch, *VERBS[verb], "--kubeconfig", str(config)) == 1
    assert time.monotonic() - started < 10  # the first contact is not retried
    line = _one_line(capsys.readouterr().err)
    assert f"apiserver {server} is unreachable: Connection refused" in line
    assert str(config) in line


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_missing_kubeconfig_is_named(
    verb: str,
    tmp_path: Path,
    no_local_clusters: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "nowhere.yaml"
    assert run_main(monkeypatch, *VERBS[verb], "--kubeconfig", str(missing)) == 1
    line = _one_line(capsys.readouterr().err)
    assert line == f"error: kubeconfig {missing} does not exist"


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_kubeconfig_that_is_not_yaml_is_named_with_the_problem(
    verb: str,
    tmp_path: Path,
    no_local_clusters: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [\n  - name: c\n")
    assert run_main(monkeypatch, *VERBS[verb], "--kubeconfig", str(broken)) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"error: kubeconfig {broken} is not YAML: line ")


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_refused_credentials_are_one_line(
    verb: str,
    tmp_path: Path,
    no_local_clusters: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with apiserver(status=401, body=status(401, "Unauthorized", "Unauthorized")) as api:
        config = kubeconfig(tmp_path / "kc.yaml", api.url, token="wrong")
        assert run_main(monkeypatch, *VERBS[verb], "--kubeconfig", str(config)) == 1
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"error: apiserver {api.url} refused the credentials in kubeconfig {config} "
        "(401 Unauthorized)"
    )


def test_kubeconfig_from_the_environment_is_used_and_named(
    tmp_path: Path,
    no_local_clusters: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "env.yaml"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    assert run_main(monkeypatch, *VERBS["test upgrade"]) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"error: kubeconfig {missing} ($KUBECONFIG) does not exist"
    )


def test_the_real_entry_point_prints_one_line(tmp_path: Path, no_local_clusters: Path) -> None:
    config = kubeconfig(tmp_path / "kc.yaml", f"https://127.0.0.1:{free_port()}")
    result = subprocess.run(
        [sys.executable, "-m", "olmtool", "uninstall", "x", "--kubeconfig", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "is unreachable: Connection refused" in _one_line(result.stderr)


def test_kubeconfig_and_name_together_are_a_usage_error(
    tmp_path: Path,
    no_local_clusters: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "kc.yaml"
    for args in (VERBS["install"], VERBS["test upgrade"], VERBS["uninstall"]):
        assert run_main(monkeypatch, *args, "--kubeconfig", str(config), "--name", "dev") == 2
        assert "--kubeconfig and --name" in _one_line(capsys.readouterr().err)


# -- kubeconfig checks -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "is empty"),
        ("- a\n- b\n", "is not a kubeconfig"),
        ("apiVersion: v1\nkind: Config\n", "has no current-context"),
        ("current-context: x\ncontexts: []\n", "current-context 'x' is not among its contexts"),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n",
            "cluster 'c' of context 'x' is not among its clusters",
        ),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
            "clusters: [{name: c, cluster: {}}]\n",
            "cluster 'c' has no server",
        ),
        ("a: b: c\n", "is not YAML: line 1, column 5"),
    ],
)
def test_kubeconfig_problems_name_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "kc.yaml"
    path.write_text(text)
    with pytest.raises(KubeconfigError) as caught:
        check_kubeconfig(Target(path))
    assert str(path) in str(caught.value) and words in str(caught.value)


def test_a_directory_is_not_a_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="is not a file"):
        check_kubeconfig(Target(tmp_path))


def test_a_kubeconfig_the_client_cannot_load_is_a_kubeconfig_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc.yaml", "https://127.0.0.1:6443")
    data = json.loads(path.read_text())
    data["clusters"][0]["cluster"]["certificate-authority"] = str(tmp_path / "no-ca.crt")
    path.write_text(json.dumps(data))
    with pytest.raises(KubeconfigError, match="cannot be used"):
        connect(Target(path))


# -- which kubeconfig --------------------------------------------------------------------


def _local_cluster(root: Path, name: str, registry: str | None = "127.0.0.1:5001") -> Path:
    state = root / name
    state.mkdir(parents=True)
    config = kubeconfig(state / "kubeconfig", f"https://127.0.0.1:{free_port()}")
    record = {
        "name": name,
        "state_dir": str(state),
        "server": "https://127.0.0.1:6443",
        "kubeconfig": str(config),
        "ca_file": str(state / "ca.crt"),
        "token": "t",
        "registry": registry,
    }
    (state / "cluster.json").write_text(json.dumps(record))
    return config


def test_the_kubeconfig_is_chosen_flag_then_name_then_environment_then_default(
    tmp_path: Path, no_local_clusters: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = _local_cluster(no_local_clusters, "olmtool")
    dev = _local_cluster(no_local_clusters, "dev")
    given = tmp_path / "given.yaml"
    assert resolve_target().kubeconfig == default
    assert resolve_target().origin == "local cluster olmtool"
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{dev}")
    assert resolve_target().kubeconfig == dev  # the first file that exists
    assert resolve_target().origin == "$KUBECONFIG"
    assert resolve_target(name="olmtool").kubeconfig == default  # --name first
    assert resolve_target(given).kubeconfig == given
    with pytest.raises(ArgumentError) as caught:
        resolve_target(given, "dev")
    assert caught.value.argument == "name"


def test_the_environments_kubeconfig_decides_the_local_cluster_a_catalog_goes_to(
    tmp_path: Path, no_local_clusters: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``install --catalog DIR`` pushes to the registry of the cluster it subscribes on:
    the one $KUBECONFIG names, not the default cluster."""
    from olmtool.actions.install import _registry_cluster

    _local_cluster(no_local_clusters, "olmtool", registry="127.0.0.1:5001")
    dev = _local_cluster(no_local_clusters, "dev", registry="127.0.0.1:5002")
    monkeypatch.setenv("KUBECONFIG", str(dev))
    assert _registry_cluster(CATALOG, resolve_target()).name == "dev"
    assert _registry_cluster(CATALOG, resolve_target(name="olmtool")).name == "olmtool"
    other = kubeconfig(tmp_path / "other.yaml", "https://10.0.0.1:6443")
    with pytest.raises(ArgumentError, match="is not a local cluster's"):
        _registry_cluster(CATALOG, resolve_target(other))


def test_no_kubeconfig_and_no_cluster_says_what_was_looked_for(no_local_clusters: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"\$KUBECONFIG is not set.*cluster up"):
        resolve_target()
    with pytest.raises(Exception, match="cluster up --name dev"):
        resolve_target(name="dev")


# -- error mapping -----------------------------------------------------------------------


def test_forbidden_carries_the_apiservers_message(tmp_path: Path) -> None:
    said = 'namespaces "x" is forbidden: User "bob" cannot get resource "namespaces"'
    with apiserver() as api:
        config = kubeconfig(tmp_path / "kc.yaml", api.url)
        kube = connect(Target(config))
        api.answers.append((403, status(403, "Forbidden", said)))
        with pytest.raises(ClusterAuthError) as caught, cluster_errors(kube):
            kube.get("/api/v1/namespaces/x")
        api.answers.append((422, status(422, "Invalid", "spec.x: Invalid value")))
        with pytest.raises(ClusterRequestError) as refused, cluster_errors(kube):
            kube.create("/api/v1/namespaces", {"metadata": {"name": "x"}})
        kube.close()
    assert str(caught.value) == f"apiserver {api.url} forbids it (403 Forbidden): {said}"
    assert refused.value.status == 422
    assert str(refused.value).endswith("422 Unprocessable Entity: spec.x: Invalid value")


def test_other_errors_pass_through_the_mapping(tmp_path: Path) -> None:
    with apiserver() as api:
        kube = connect(Target(kubeconfig(tmp_path / "kc.yaml", api.url)))
    with pytest.raises(ZeroDivisionError), cluster_errors(kube):
        raise ZeroDivisionError
    kube.close()


@pytest.mark.parametrize(
    ("exc", "text", "retry"),
    [
        (
            urllib3.exceptions.MaxRetryError(
                None,
                "/version",
                urllib3.exceptions.NewConnectionError(
                    None, "Failed to establish a new connection: [Errno 111] Connection refused"
                ),
            ),
            "Connection refused",
            True,
        ),
        (
            urllib3.exceptions.ProtocolError(
                "Connection aborted.", ConnectionResetError(104, "Connection reset by peer")
            ),
            "connection lost",
            True,
        ),
        (ApiException(status=503, reason="Service Unavailable"), "503 Service Unavailable", True),
        (
            ApiException(
                status=0,
                reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed",
            ),
            "TLS failed",
            False,
        ),
        (ConnectionRefusedError(111, "Connection refused"), "Connection refused", True),
    ],
)
def test_connection_problems_are_told_apart_from_answers(
    exc: BaseException, text: str, retry: bool
) -> None:
    problem = connection_problem(exc)
    assert problem is not None and text in problem.text and problem.retry is retry


@pytest.mark.parametrize("exc", [ApiException(status=404), ValueError("x"), KeyError("y")])
def test_answers_and_bugs_are_no_connection_problem(exc: BaseException) -> None:
    assert connection_problem(exc) is None


# -- riding out an outage ----------------------------------------------------------------


def test_requests_ride_out_an_apiserver_that_comes_back(tmp_path: Path) -> None:
    port = free_port()
    kube = Kube(kubeconfig(tmp_path / "kc.yaml", f"http://127.0.0.1:{port}"), outage_grace=20)
    said: list[str] = []
    kube.on_outage = said.append
    servers: list[Apiserver] = []
    later = threading.Timer(1.5, lambda: servers.append(Apiserver(port=port)))
    later.start()
    started = time.monotonic()
    try:
        assert kube.get("/version") == VERSION
    finally:
        later.join()
        for server in servers:
            server.stop()
        kube.close()
    assert 1.0 < time.monotonic() - started < 10
    assert said[0] == (
        f"apiserver http://127.0.0.1:{port} unreachable (Connection refused); "
        "retrying for up to 20 s"
    )
    assert said[-1].startswith(f"apiserver http://127.0.0.1:{port} is back after ")


def test_a_starting_apiserver_503_is_retried(tmp_path: Path) -> None:
    with apiserver() as api:
        api.answers += [(503, status(503, "ServiceUnavailable", "starting"))] * 2
        kube = Kube(kubeconfig(tmp_path / "kc.yaml", api.url), outage_grace=20)
        kube.on_outage = lambda _line: None
        assert kube.get("/version") == VERSION
        kube.close()
    assert len(api.requests) == 3


def test_an_outage_longer_than_the_grace_is_one_line(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    kube = Kube(kubeconfig(tmp_path / "kc.yaml", server), outage_grace=1.0)
    kube.on_outage = lambda _line: None
    started = time.monotonic()
    with pytest.raises(ClusterUnreachable) as caught:
        kube.get("/version")
    kube.close()
    assert time.monotonic() - started < 5
    assert str(caught.value).startswith(f"apiserver {server} unreachable for 1 s")
    assert "gave up after retrying for 1 s" in str(caught.value)


def test_without_a_grace_nothing_is_retried(tmp_path: Path) -> None:
    kube = Kube(kubeconfig(tmp_path / "kc.yaml", f"http://127.0.0.1:{free_port()}"))
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        kube.get("/version")
    kube.close()


def test_a_create_whose_answer_was_lost_reads_what_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube = Kube(kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1"), outage_grace=5)
    kube.on_outage = lambda _line: None
    answers: list[Any] = [
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        ApiException(status=409, reason="Conflict"),
        {"metadata": {"name": "x"}, "kind": "Namespace"},
    ]
    sent: list[tuple[str, str]] = []

    def send(method: str, path: str, *_: Any) -> Any:
        sent.append((method, path))
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(kube, "_send", send)
    made = kube.create("/api/v1/namespaces", {"metadata": {"name": "x"}})
    assert made["metadata"]["name"] == "x"
    assert sent == [
        ("POST", "/api/v1/namespaces"),
        ("POST", "/api/v1/namespaces"),
        ("GET", "/api/v1/namespaces/x"),
    ]
    kube.close()


def test_connect_checks_the_server_once_then_rides_out_outages(tmp_path: Path) -> None:
    with apiserver() as api:
        config = kubeconfig(tmp_path / "kc.yaml", api.url)
        lines: list[str] = []
        kube = connect(Target(config), outage_grace=30, progress=lines.append)
        assert api.requests == [("GET", "/version")]
        assert kube.outage_grace == 30 and kube.on_outage is not None
        kube.close()
