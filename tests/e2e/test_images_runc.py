"""olmtool's images under a real OCI runtime: unpacked by umoci, run by runc.

No olmtool code runs the containers (:mod:`tests.e2e.ocirun`), so these prove the images
themselves: the operator image ``olmtool image build`` writes runs as uid 65532 on a
read-only root (and is reproducible), and runs under exactly the securityContext the
newest CSV declares; the etcd stand-ins report their versions and serve a one-member
cluster; busybox has a shell; the Python base has its standard library and CA bundle;
the peer images (``../shared/peers``) run opm and cpb; the catalog image
``olmtool catalog publish --image`` writes becomes SERVING and answers ListPackages.

Servers run in network namespaces of their own (fixed ports inside, never host ports).
Skipped, with the reason, without root, runc, umoci or ip, except in CI (a failure).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.images.debian import RECIPES, build_recipe
from olmtool.versions import parse_version, precedence_key
from tests.e2e import ocirun, peerimages
from tests.e2e.ocirun import Spec

pytestmark = pytest.mark.usefixtures("oci_runtime")

REPO = Path(__file__).resolve().parents[2]
PROJECT_FILES = ("olmtool.yaml", "operator", "bundle", "catalog")
PACKAGE = "etcd-operator"
TAG = "e2e-runc"
NONROOT = 65532
CATALOG_REF = "localhost:5000/olmtool/etcd-catalog:e2e-runc"
CONFIGS_LABEL = "operators.operatorframework.io.index.configs.v1"
GRPC_PORT = 50051  # inside the catalog container's own network namespace
# The capabilities a CRI runtime (containerd, CRI-O) gives a container by default.
DEFAULT_CAPABILITIES = (
    "CAP_AUDIT_WRITE",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_MKNOD",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_SETFCAP",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SYS_CHROOT",
)
# seccompProfile RuntimeDefault, approximated: the syscalls the default profiles of
# Docker and containerd refuse to an unprivileged container, as EPERM.
RUNTIME_DEFAULT_DENIED = [
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "delete_module",
    "finit_module",
    "get_mempolicy",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mbind",
    "mount",
    "move_pages",
    "name_to_handle_at",
    "open_by_handle_at",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "quotactl",
    "reboot",
    "request_key",
    "set_mempolicy",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "sysfs",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
]


# --- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of the repository's project (olmtool.yaml and what it names): builds
    write there, not in the repository, and both builds see the same inputs even while
    the repository is being edited."""
    root = tmp_path_factory.mktemp("project")
    for name in PROJECT_FILES:
        source = REPO / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(source, root / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, root / name)
    return root


@dataclass(frozen=True)
class Built:
    digest: str
    layout: Path
    output: dict[str, Any] = field(repr=False)


def olmtool(project: Path, *args: str, timeout: float = 300) -> dict[str, Any]:
    """Run the olmtool CLI (``-o json``) in ``project``; its JSON result."""
    done = subprocess.run(
        [sys.executable, "-m", "olmtool", *args, "-c", str(project / "olmtool.yaml"), "-o", "json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"olmtool {' '.join(args)} failed:\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def build_operator(project: Path) -> Built:
    result = olmtool(project, "image", "build", "--tag", TAG)
    (saved,) = result["tags"]
    assert saved["digest"] == result["digest"]
    return Built(result["digest"], project / saved["layout"], result)


@pytest.fixture(scope="module")
def operator_build(project: Path) -> Built:
    return build_operator(project)


@pytest.fixture(scope="module")
def operator_bundle(operator_build: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ocirun.unpack(operator_build.layout, TAG, tmp_path_factory.mktemp("op") / "bundle")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``unpacked(recipe key)``: the recipe's image (olmtool's cache), unpacked once."""
    bundles: dict[str, Path] = {}

    def get(key: str) -> Path:
        if key not in bundles:
            built = build_recipe(RECIPES[key])
            dest = tmp_path_factory.mktemp(key) / "bundle"
            bundles[key] = ocirun.unpack(built.layout, built.tag, dest)
        return bundles[key]

    return get


# --- the operator image -------------------------------------------------------------------


def test_operator_image_runs_as_nonroot_on_a_readonly_root(
    operator_build: Built, operator_bundle: Path
) -> None:
    config = ocirun.image_config(operator_build.layout, TAG)
    assert config["Entrypoint"] == ["python3", "-m", "etcd_operator"]
    assert "Cmd" not in config
    assert config["User"] == str(NONROOT)
    assert config["WorkingDir"] == "/app"
    process = ocirun.image_process(operator_bundle)
    assert process["args"] == ["python3", "-m", "etcd_operator"]
    assert process["user"]["uid"] == NONROOT
    assert process["cwd"] == "/app"

    done = ocirun.run(operator_bundle, [*process["args"], "--help"], user=NONROOT)

    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout.lower()
    assert "etcd_operator" in done.stdout or "etcd-operator" in done.stdout


def test_operator_image_is_reproducible(project: Path, operator_build: Built) -> None:
    again = build_operator(project)

    assert again.digest == operator_build.digest
    index = json.loads((again.layout / "index.json").read_text())
    assert [m["digest"] for m in index["manifests"]] == [operator_build.digest]


def test_operator_image_under_the_newest_csv_security_context(
    project: Path, operator_bundle: Path
) -> None:
    version, pod, container = newest_operator_container(project)
    image = ocirun.image_process(operator_bundle)
    as_pod = pod_run(pod, container, image)
    command = container.get("command") or image["args"]

    done = ocirun.run(
        operator_bundle, [*command, *container.get("args", []), "--help"], **as_pod.options()
    )
    assert done.returncode == 0, f"{version}: {done.stderr}"
    assert "usage:" in done.stdout.lower()

    # The container really got that context, not a kinder one.
    probe = ocirun.run(
        operator_bundle, ["python3", "-c", PROBE, *as_pod.empty_dirs], **as_pod.options()
    )
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert seen["uid"] == as_pod.user[0] != 0
    assert seen["gid"] == as_pod.user[1]
    assert set(as_pod.groups) <= set(seen["groups"])
    bounding = capability_mask(as_pod.capabilities)
    assert seen["CapBnd"] == f"{bounding:016x}"
    assert seen["CapEff"] == f"{bounding if as_pod.user[0] == 0 else 0:016x}"
    assert seen["NoNewPrivs"] == ("1" if as_pod.no_new_privileges else "0")
    assert seen["Seccomp"] == ("2" if as_pod.seccomp else "0")
    assert seen["writable"]["/"] is (not as_pod.readonly)
    for path in as_pod.empty_dirs:
        assert seen["writable"][path] is True, f"{path} (an emptyDir) is not writable"


PROBE = textwrap.dedent(
    """
    import json, os, sys
    status = dict(
        line.split(":", 1) for line in open("/proc/self/status").read().splitlines()
    )
    def writable(path):
        try:
            with open(os.path.join(path, ".probe-%d" % os.getpid()), "w") as handle:
                os.unlink(handle.name)
            return True
        except OSError:
            return False
    paths = ["/", "/tmp", *sys.argv[1:]]
    print(json.dumps({
        "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
        **{key: status[key].strip() for key in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp")},
        "writable": {path: writable(path) for path in paths},
    }))
    """
)


def newest_operator_container(project: Path) -> tuple[str, Mapping[str, Any], Mapping[str, Any]]:
    """The newest bundle's version, and the operator Deployment's pod spec and container
    (the one running the CSV's ``containerImage``, else the first)."""
    releases = [d for d in (project / "bundle" / PACKAGE).iterdir() if d.is_dir()]
    newest = max(releases, key=lambda d: precedence_key(parse_version(d.name)))
    (csv_file,) = (newest / "manifests").glob("*clusterserviceversion.yaml")
    csv = yaml.safe_load(csv_file.read_text())
    image = csv["metadata"].get("annotations", {}).get("containerImage")
    for deployment in csv["spec"]["install"]["spec"]["deployments"]:
        pod = deployment["spec"]["template"]["spec"]
        for container in pod["containers"]:
            if image is None or container["image"] == image:
                return newest.name, pod, container
    raise AssertionError(f"{csv_file}: no deployment runs {image}")


@dataclass
class PodRun:
    """A Pod's container as runc options: what a kubelet + CRI runtime would set."""

    user: tuple[int, int]
    groups: list[int]
    readonly: bool
    no_new_privileges: bool
    capabilities: list[str]
    seccomp: bool
    empty_dirs: list[str]
    tmpfs: list[str]
    env: dict[str, str]
    cwd: str | None
    read_only_mounts: list[str] = field(default_factory=list)

    def options(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "readonly": self.readonly,
            "tmpfs": self.tmpfs,
            "env": self.env,
            "cwd": self.cwd,
            "edit": self.edit,
        }

    def edit(self, config: Spec) -> None:
        process = config["process"]
        process["user"]["additionalGids"] = self.groups
        process["noNewPrivileges"] = self.no_new_privileges
        # Non-root with no ambient capabilities: execve leaves the effective set empty,
        # the bounding set is what the context allows.
        caps = list(self.capabilities)
        process["capabilities"] = {
            "bounding": caps,
            "permitted": caps,
            "effective": caps,
            "inheritable": [],
            "ambient": [],
        }
        if self.seccomp:
            config["linux"]["seccomp"] = {
                "defaultAction": "SCMP_ACT_ALLOW",
                "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
                "syscalls": [{"names": RUNTIME_DEFAULT_DENIED, "action": "SCMP_ACT_ERRNO"}],
            }
        for mount in config["mounts"]:
            if mount["destination"] in self.read_only_mounts:
                mount["options"].append("ro")


def pod_run(
    pod: Mapping[str, Any], container: Mapping[str, Any], image: Mapping[str, Any]
) -> PodRun:
    """Translate a pod spec's container (securityContext, pod securityContext, volumes)
    into runc options. emptyDirs become tmpfs mounts (0777, as the kubelet makes them);
    other volume kinds an empty read-only tmpfs (their content is not what is tested)."""
    context = container.get("securityContext") or {}
    pod_context = pod.get("securityContext") or {}

    def setting(name: str) -> Any:
        return context.get(name, pod_context.get(name))

    assert not context.get("privileged"), "privileged containers are not translated"
    uid = setting("runAsUser")
    uid = image["user"]["uid"] if uid is None else uid
    gid = setting("runAsGroup")
    gid = image["user"]["gid"] if gid is None else gid
    if setting("runAsNonRoot"):
        assert uid != 0, "runAsNonRoot with an image that runs as root: the kubelet refuses"
    groups = [*pod_context.get("supplementalGroups", [])]
    if pod_context.get("fsGroup") is not None:
        groups.append(pod_context["fsGroup"])

    capabilities = context.get("capabilities") or {}
    dropped = set(capabilities.get("drop") or [])
    kept = set() if "ALL" in dropped else set(DEFAULT_CAPABILITIES) - {f"CAP_{c}" for c in dropped}
    kept |= {f"CAP_{c}" for c in capabilities.get("add") or []}

    profile = (setting("seccompProfile") or {}).get("type", "Unconfined")
    assert profile in ("RuntimeDefault", "Unconfined"), f"seccomp {profile} is not translated"

    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    empty_dirs, tmpfs, read_only = [], [], []
    for mount in container.get("volumeMounts") or []:
        path = mount["mountPath"]
        if "emptyDir" in volumes[mount["name"]]:
            empty_dirs.append(path)
            tmpfs.append(f"{path}:mode=0777")
        else:
            tmpfs.append(path)
            read_only.append(path)
        if mount.get("readOnly"):
            read_only.append(path)

    env = {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}
    return PodRun(
        user=(uid, gid),
        groups=groups,
        readonly=bool(context.get("readOnlyRootFilesystem")),
        # allowPrivilegeEscalation defaults to true (no_new_privs unset)
        no_new_privileges=context.get("allowPrivilegeEscalation") is False,
        capabilities=sorted(kept),
        seccomp=profile == "RuntimeDefault",
        empty_dirs=empty_dirs,
        tmpfs=tmpfs,
        env=env,
        cwd=container.get("workingDir"),
        read_only_mounts=read_only,
    )


CAPABILITY_BITS = {
    "CAP_CHOWN": 0,
    "CAP_DAC_OVERRIDE": 1,
    "CAP_FOWNER": 3,
    "CAP_FSETID": 4,
    "CAP_KILL": 5,
    "CAP_SETGID": 6,
    "CAP_SETUID": 7,
    "CAP_SETPCAP": 8,
    "CAP_NET_BIND_SERVICE": 10,
    "CAP_NET_RAW": 13,
    "CAP_SYS_CHROOT": 18,
    "CAP_MKNOD": 27,
    "CAP_AUDIT_WRITE": 29,
    "CAP_SETFCAP": 31,
}


def capability_mask(capabilities: list[str]) -> int:
    """``capabilities`` as the hex mask /proc/PID/status shows (CapBnd, CapEff)."""
    return sum(1 << CAPABILITY_BITS[name] for name in capabilities)


# --- etcd, busybox, the Python base -------------------------------------------------------

ETCD = [("etcd-3.4.23", "3.4.23"), ("etcd-3.5.1", "3.5.1")]


@pytest.mark.parametrize(("key", "version"), ETCD)
def test_etcd_reports_its_version(unpacked: Callable[[str], Path], key: str, version: str) -> None:
    bundle = unpacked(key)

    done = ocirun.run(bundle, ["etcd", "--version"])
    assert done.returncode == 0, done.stderr
    assert f"etcd Version: {version}" in done.stdout

    done = ocirun.run(bundle, ["etcdctl", "version"])
    assert done.returncode == 0, done.stderr
    assert f"etcdctl version: {version}" in done.stdout


@pytest.mark.parametrize(("key", "version"), ETCD)
def test_etcd_serves_a_one_member_cluster(
    unpacked: Callable[[str], Path], key: str, version: str
) -> None:
    bundle = unpacked(key)
    client, peer = "http://127.0.0.1:2379", "http://127.0.0.1:2380"  # in its own netns
    etcd = [
        "etcd",
        "--name=m0",
        "--data-dir=/var/etcd/data",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=m0={peer}",
    ]
    with (
        ocirun.network_namespace() as netns,
        ocirun.detached(bundle, etcd, netns=netns, tmpfs=["/tmp", "/var/etcd:mode=0700"]) as box,
    ):

        def etcdctl(*args: str) -> subprocess.CompletedProcess[str]:
            return box.exec("etcdctl", f"--endpoints={client}", *args)

        box.wait_until(lambda: etcdctl("endpoint", "health").returncode == 0, 30, "healthy")
        health = etcdctl("endpoint", "health")
        assert "is healthy" in health.stdout + health.stderr
        assert etcdctl("put", "greeting", "hello").returncode == 0
        assert etcdctl("get", "greeting", "--print-value-only").stdout.strip() == "hello"

        # and from the host, inside the namespace
        script = f"import urllib.request; print(urllib.request.urlopen('{client}/version').read().decode())"
        done = ocirun.netns_exec(netns, [sys.executable, "-c", script])
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["etcdserver"] == version
    assert subprocess.run(["runc", "state", box.id], capture_output=True).returncode != 0
    assert not (ocirun.NETNS_DIR / netns).exists()


def test_busybox_shell(unpacked: Callable[[str], Path]) -> None:
    done = ocirun.run(unpacked("busybox-1.35"), ["sh", "-c", "echo ok; id -u"])

    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n0\n"


PYTHON_CHECK = textwrap.dedent(
    """
    import ssl, sqlite3, ctypes, lzma, bz2, uuid, readline, zlib, hashlib, json, os, tempfile
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(b"x")
    print(json.dumps({
        "uid": os.getuid(),
        "sqlite": sqlite3.connect(":memory:").execute("select sqlite_version()").fetchone()[0],
        "libc": ctypes.CDLL("libc.so.6").getpid() == os.getpid(),
        "lzma": lzma.decompress(lzma.compress(b"olm" * 100)) == b"olm" * 100,
        "bz2": bz2.decompress(bz2.compress(b"olm" * 100)) == b"olm" * 100,
        "zlib": zlib.decompress(zlib.compress(b"olm")) == b"olm",
        "uuid": uuid.uuid4().version,
        "sha3": hashlib.sha3_256(b"").hexdigest()[:8],
        "tempdir": tempfile.gettempdir(),
        "openssl": ssl.OPENSSL_VERSION,
        "certs": ssl.create_default_context().cert_store_stats(),
    }))
    """
)


def test_python_base_has_its_standard_library_and_ca_bundle(
    unpacked: Callable[[str], Path],
) -> None:
    bundle = unpacked("python-3.11")
    assert ocirun.image_process(bundle)["user"]["uid"] == NONROOT

    done = ocirun.run(bundle, ["python3", "-c", PYTHON_CHECK])

    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["uid"] == NONROOT
    assert seen["sqlite"].startswith("3.")
    assert seen["libc"] and seen["lzma"] and seen["bz2"] and seen["zlib"]
    assert seen["uuid"] == 4
    assert seen["sha3"] == "a7ffc6f8"
    assert seen["tempdir"] == "/tmp"
    assert seen["openssl"].startswith("OpenSSL 3.")
    assert seen["certs"]["x509_ca"] > 100


LIST_PACKAGES = textwrap.dedent(
    f"""
    import json, grpc
    from olmtool.proto import registry_pb2, registry_pb2_grpc
    options = [("grpc.enable_http_proxy", 0)]
    with grpc.insecure_channel("127.0.0.1:{GRPC_PORT}", options=options) as channel:
        stub = registry_pb2_grpc.RegistryStub(channel)
        request = registry_pb2.ListPackageRequest()
        print(json.dumps(sorted(p.name for p in stub.ListPackages(request, timeout=10))))
    """
)


def serving(box: ocirun.Container) -> bool:
    """``grpc_health_probe -addr=:50051`` in the container says SERVING (exit 0); a probe
    that cannot run at all fails at once instead of being polled for a minute."""
    done = box.exec("grpc_health_probe", f"-addr=:{GRPC_PORT}")
    broken = "Traceback" in done.stderr or "not found" in done.stderr
    assert not broken, (
        f"grpc_health_probe cannot run:\n{done.stderr[-1500:]}\ncontainer log:\n{box.logs()[-1500:]}"
    )
    if done.returncode == 0:
        assert "status: SERVING" in done.stderr + done.stdout
    return done.returncode == 0


def list_packages(netns: str) -> list[str]:
    """ListPackages over the registry API from the host, inside ``netns``."""
    done = ocirun.netns_exec(netns, [sys.executable, "-c", LIST_PACKAGES])
    assert done.returncode == 0, done.stderr
    names: list[str] = json.loads(done.stdout)
    return names


# --- peer images (../shared/peers) --------------------------------------------------------


@pytest.fixture(scope="module")
def peer_bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    peerimages.require_peers("opm", "cpb")
    bundles = {}
    for name, image in (("opm", peerimages.opm_image()), ("util", peerimages.util_image())):
        bundles[name] = ocirun.unpack(image.layout, image.tag, tmp_path_factory.mktemp(name) / "b")
    return bundles


def test_opm_peer_image(peer_bundles: dict[str, Path]) -> None:
    bundle = peer_bundles["opm"]
    assert ocirun.image_process(bundle)["args"] == ["/bin/opm"]

    done = ocirun.run(bundle, ["/bin/opm", "version"])

    assert done.returncode == 0, done.stderr
    assert 'OpmVersion:"v1.26.0"' in done.stdout
    assert peerimages.assemble_opm().digest == peerimages.opm_image().digest  # deterministic


def test_opm_peer_image_serves_with_the_catalog_images_health_probe(
    peer_bundles: dict[str, Path], project: Path
) -> None:
    """``opm serve`` in the opm image, probed by the same grpc_health_probe as olmtool's
    catalog image, answers ListPackages for the repository's catalog."""
    bundle = peer_bundles["opm"]
    if ocirun.which(bundle, "grpc_health_probe") is None:
        pytest.skip("the opm image has no grpc_health_probe (olmtool.images.catalogimage)")
    configs = {
        "destination": "/configs",
        "type": "bind",
        "source": str(project / "catalog"),
        "options": ["rbind", "ro"],
    }
    serve = ["/bin/opm", "serve", "/configs", f"--port={GRPC_PORT}", "--cache-dir=/tmp/cache"]
    with (
        ocirun.network_namespace() as netns,
        ocirun.detached(
            bundle, serve, netns=netns, edit=lambda config: config["mounts"].append(configs)
        ) as box,
    ):
        box.wait_until(lambda: serving(box), 60, "opm SERVING")
        assert list_packages(netns) == catalog_packages(project / "catalog")


def test_util_peer_image(peer_bundles: dict[str, Path]) -> None:
    bundle = peer_bundles["util"]

    done = ocirun.run(bundle, ["/bin/cpb", "--help"])
    assert done.returncode == 0, done.stderr
    assert "Usage:\n  cpb [output directory]" in done.stdout

    # what OLM v0.18.3's unpack Job runs in its util init container
    copied = ocirun.run(bundle, ["/bin/cp", "-Rv", "/bin/cpb", "/util/cpb"], tmpfs=["/util"])
    assert copied.returncode == 0, copied.stderr
    assert "/util/cpb" in copied.stdout
    assert peerimages.assemble_util().digest == peerimages.util_image().digest


# --- the catalog image ---------------------------------------------------------------------


def test_catalog_image_serves_the_catalog(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp("catalog")
    published = olmtool(
        project,
        "catalog",
        "publish",
        "--output-dir",
        str(out / "catalog"),
        "--image",
        CATALOG_REF,
        "--layout",
        str(out / "layout"),
    )
    layout, tag = Path(published["layout"]), CATALOG_REF.rpartition(":")[2]
    config = ocirun.image_config(layout, tag)
    assert config.get("Labels", {}).get(CONFIGS_LABEL) == "/configs"
    assert config.get("Entrypoint") or config.get("Cmd"), (
        f"the catalog image has no Entrypoint or Cmd: nothing serves /configs ({config})"
    )
    bundle = ocirun.unpack(layout, tag, out / "bundle")
    assert ocirun.rootfs_path(bundle, "/configs") is not None
    assert ocirun.which(bundle, "grpc_health_probe"), "no grpc_health_probe on the image's PATH"

    # As OLM v0.18.3's registry pod: the image's own command, its root writable.
    with (
        ocirun.network_namespace() as netns,
        ocirun.detached(bundle, netns=netns, readonly=False, tmpfs=()) as box,
    ):
        box.wait_until(lambda: serving(box), 60, "grpc_health_probe SERVING")

        assert list_packages(netns) == catalog_packages(out / "catalog")


def catalog_packages(directory: Path) -> list[str]:
    """The names of the ``olm.package`` blobs of a file-based catalog."""
    names = set()
    for path in sorted(directory.rglob("*")):
        if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
            for document in yaml.safe_load_all(path.read_text()):
                if isinstance(document, dict) and document.get("schema") == "olm.package":
                    names.add(document["name"])
    assert names, f"no olm.package in {directory}"
    return sorted(names)
