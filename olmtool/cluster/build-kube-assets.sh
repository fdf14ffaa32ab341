#!/usr/bin/env bash
# build-kube-assets.sh - build a local Kubernetes control plane from Debian's
# `kubernetes` source package (no Docker, no prebuilt downloads).
#
# Usage: build-kube-assets.sh [OUTPUT_DIR]
#
# OUTPUT_DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/olmtool/assets/kubernetes-1.20.2-<recipe>,
# where <recipe> is the first 12 hex digits of this script's sha256: a changed recipe
# (a new patch) builds into a new folder instead of reusing binaries built without it
# and receives kube-apiserver, kube-controller-manager, kube-scheduler (built
# from source), etcd (Debian etcd-server) and kubectl (Debian kubernetes-client,
# or a symlink to the kubectl on PATH). The layout matches envtest's
# KUBEBUILDER_ASSETS convention. The node's binaries come from the same source:
# kubelet (static), kube-proxy and pause (the sandbox's process, from build/pause).
#
# Idempotent: if OUTPUT_DIR already holds the required executables the script
# exits 0 immediately; only the missing components are built. The Go build cache is kept under the user cache
# dir so a rebuild is faster; the source tree is removed after the build.
#
# Environment:
#   KUBE_DEB_VERSION   Debian source version (default 1.20.5+really1.20.2-1.1+deb12u1)
#   OLMTOOL_GOCACHE    Go build cache (default <cache>/olmtool/go-build)
#   VERBOSE=1          stream apt/build output to stderr instead of
#                      <cache>/olmtool/build/build-kube-assets.log
set -euo pipefail

KUBE_VERSION="1.20.2"
KUBE_DEB_VERSION="${KUBE_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}"
DEB_SUITE="bookworm"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/olmtool"
RECIPE="$(sha256sum "$0" | cut -c1-12)"
OUT_DIR="${1:-$CACHE_ROOT/assets/kubernetes-$KUBE_VERSION-$RECIPE}"
BUILD_ROOT="$CACHE_ROOT/build"
WORK_DIR="$BUILD_ROOT/kubernetes-$KUBE_VERSION" # fixed path: keeps Go cache hits across runs
GO_CACHE_DIR="${OLMTOOL_GOCACHE:-$CACHE_ROOT/go-build}"
BUILD_LOG="$BUILD_ROOT/build-kube-assets.log"
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler)
NODE_COMPONENTS=(kubelet kube-proxy)
REQUIRED=("${COMPONENTS[@]}" etcd "${NODE_COMPONENTS[@]}" pause)
REFLECT2_DEBIAN=/usr/share/gocode/src/github.com/modern-go/reflect2
SRC_LIST=/etc/apt/sources.list.d/olmtool-deb-src.sources

PROG="build-kube-assets"
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
stage() { printf '%s: ==> %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

case "${1:-}" in
-h | --help)
    sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac


OUT_DIR="$(realpath -m -- "$OUT_DIR")"

assets_complete() {
    local f
    for f in "${REQUIRED[@]}"; do
        [[ -f "$1/$f" && -x "$1/$f" ]] || return 1
    done
}

if assets_complete "$OUT_DIR"; then
    log "Kubernetes $KUBE_VERSION assets already present in $OUT_DIR (nothing to do)"
    exit 0
fi

# ---------------------------------------------------------------- preflight
stage "checking system"
command -v apt-get >/dev/null 2>&1 ||
    die "apt-get not found: this is not a Debian system (hint: run on Debian $DEB_SUITE, or put kube-apiserver/etcd/kubectl into a folder and use it as KUBEBUILDER_ASSETS)"

SUDO=()
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is missing (hint: run as root or install sudo)"
    SUDO=(sudo)
fi
as_root() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive "$@"; }

mkdir -p "$BUILD_ROOT" "$GO_CACHE_DIR" "$(dirname "$OUT_DIR")"

# Serialize concurrent runs; re-check after getting the lock.
exec 9>"$BUILD_ROOT/.lock"
if command -v flock >/dev/null 2>&1; then
    flock -n 9 || { log "another build is running; waiting for it"; flock 9; }
    if assets_complete "$OUT_DIR"; then
        log "Kubernetes $KUBE_VERSION assets already present in $OUT_DIR (built by a concurrent run)"
        exit 0
    fi
fi

TMP_OUT=""
cleanup() {
    local rc=$?
    [[ -n "$TMP_OUT" && -d "$TMP_OUT" ]] && rm -rf -- "$TMP_OUT"
    # The source tree goes; the Go cache (a symlink target outside it) stays.
    [[ -d "$WORK_DIR" ]] && rm -rf -- "$WORK_DIR"
    if [[ $rc != 0 ]]; then
        log "failed (exit $rc)"
    fi
    exit $rc
}
trap cleanup EXIT

# Run a command with its output going to the build log (or to stderr with VERBOSE=1);
# on failure show the log's tail.
quiet() {
    if [[ "${VERBOSE:-0}" == 1 ]]; then
        "$@" >&2
        return
    fi
    local rc=0
    "$@" >>"$BUILD_LOG" 2>&1 || rc=$?
    if [[ $rc != 0 ]]; then
        tail -n 30 "$BUILD_LOG" | sed 's/^/    /' >&2
    fi
    return $rc
}
: >"$BUILD_LOG"

APT_UPDATED=0
apt_update() {
    if [[ $APT_UPDATED == 0 ]]; then
        log "apt-get update"
        quiet as_root apt-get -q update || die "apt-get update failed (hint: check /etc/apt/sources.list.d/* and network access to the Debian mirror)"
        APT_UPDATED=1
    fi
}

pkg_installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == installed ]]
}

apt_install() {
    local missing=() p
    for p in "$@"; do pkg_installed "$p" || missing+=("$p"); done
    [[ ${#missing[@]} == 0 ]] && return 0
    apt_update
    log "apt-get install ${missing[*]}"
    quiet as_root apt-get -y -q install --no-install-recommends "${missing[@]}"
}

# ------------------------------------------------------------ deb-src entry
# Adds `deb-src <same mirror> bookworm main`, derived from the existing `deb`
# entry (same URI, same Signed-By / options), unless one is configured already.
ensure_deb_src() {
    if apt-get indextargets --no-release-info --format '$(RELEASE) $(COMPONENT)' 'Identifier: Sources' 2>/dev/null |
        grep -qx "$DEB_SUITE main"; then
        return 0
    fi
    local entry file idx
    entry="$(apt-get indextargets --no-release-info --format '$(SOURCESENTRY)' \
        'Identifier: Packages' "Release: $DEB_SUITE" 'Component: main' 2>/dev/null | head -n1 || true)"
    [[ -n "$entry" ]] || die "no 'deb ... $DEB_SUITE main' entry in apt sources (hint: this script needs Debian $DEB_SUITE; add 'deb-src http://deb.debian.org/debian $DEB_SUITE main' to /etc/apt/sources.list.d/)"
    file="${entry%:*}"
    idx="${entry##*:}"
    local text
    if [[ "$file" == *.sources ]]; then
        # deb822: copy stanza number $idx, rewriting Types/Suites/Components.
        text="$(awk -v want="$idx" -v suite="$DEB_SUITE" '
            BEGIN { RS = ""; FS = "\n" }
            NR == want {
                for (i = 1; i <= NF; i++) {
                    line = $i
                    if (line ~ /^#/) continue
                    if (line ~ /^[Tt]ypes:/) line = "Types: deb-src"
                    else if (line ~ /^[Ss]uites:/) line = "Suites: " suite
                    else if (line ~ /^[Cc]omponents:/) line = "Components: main"
                    else if (line ~ /^[Ee]nabled:/) continue
                    print line
                }
            }' "$file")"
        [[ -n "$text" ]] && text="# Added by olmtool scripts/build-kube-assets.sh (derived from $entry)"$'\n'"$text"
    else
        # one-line format: deb [opts] URI suite components...
        local line
        line="$(awk -v n="$idx" 'NR == n' "$file")"
        text="$(awk -v suite="$DEB_SUITE" '{
                out = "deb-src"; i = 2
                if ($i ~ /^\[/) { while (i <= NF) { out = out " " $i; if ($i ~ /\]$/) { i++; break } i++ } }
                print out " " $i " " suite " main"
            }' <<<"$line")"
        SRC_LIST="${SRC_LIST%.sources}.list"
        [[ -n "$text" ]] && text="# Added by olmtool scripts/build-kube-assets.sh (derived from $entry)"$'\n'"$text"
    fi
    [[ -n "$text" ]] || die "could not derive a deb-src entry from $entry (hint: add 'deb-src <mirror> $DEB_SUITE main' to /etc/apt/sources.list.d/ yourself)"
    log "adding deb-src entry $SRC_LIST"
    printf '%s\n' "$text" | as_root tee "$SRC_LIST" >/dev/null
    APT_UPDATED=0
    apt_update
}

# ------------------------------------------------------------- packages
stage "installing Debian packages (golang-go, rsync, reflect2 1.0.2, etcd-server)"
ensure_deb_src
apt_install golang-go rsync make patch xz-utils golang-github-modern-go-reflect2-dev etcd-server gcc libc6-dev ||
    die "apt-get install failed (hint: run 'apt-get update' and check that golang-go, rsync, golang-github-modern-go-reflect2-dev and etcd-server are installable)"

export PATH="/usr/lib/go/bin:$PATH"
command -v go >/dev/null 2>&1 || die "go not found after installing golang-go (hint: apt-get install golang-go, or put Go >= 1.15 on PATH)"
[[ -d "$REFLECT2_DEBIAN" ]] || die "$REFLECT2_DEBIAN missing (hint: apt-get install golang-github-modern-go-reflect2-dev)"
ETCD_BIN="$(command -v etcd || true)"
[[ -x /usr/bin/etcd ]] && ETCD_BIN=/usr/bin/etcd
[[ -n "$ETCD_BIN" ]] || die "etcd not found after installing etcd-server (hint: apt-get install etcd-server)"
log "using $(go version) at $(command -v go); etcd $ETCD_BIN"

# ------------------------------------------------------------- source
stage "downloading source package kubernetes=$KUBE_DEB_VERSION"
rm -rf -- "$WORK_DIR"
mkdir -p "$WORK_DIR/dl"
fetch_source() { (cd "$WORK_DIR/dl" && quiet apt-get -q source --download-only "kubernetes=$KUBE_DEB_VERSION"); }
fetch_source || {
    apt_update
    fetch_source
} || die "apt-get source kubernetes=$KUBE_DEB_VERSION failed: no deb-src access (hint: add 'deb-src http://deb.debian.org/debian $DEB_SUITE main' to /etc/apt/sources.list.d/, run apt-get update; or set KUBE_DEB_VERSION to the version 'apt-cache showsrc kubernetes' lists)"

stage "unpacking and patching source"
SRC="$WORK_DIR/src"
mkdir -p "$SRC"
orig="$(ls "$WORK_DIR"/dl/kubernetes_*.orig.tar.* | head -n1)"
debtar="$(ls "$WORK_DIR"/dl/kubernetes_*.debian.tar.* | head -n1)"
tar -C "$SRC" --strip-components=1 -xf "$orig"
tar -C "$SRC" -xf "$debtar"
rm -rf -- "$WORK_DIR/dl"
if [[ -f "$SRC/debian/patches/series" ]]; then
    while read -r p opts; do
        [[ -z "$p" || "$p" == \#* ]] && continue
        # shellcheck disable=SC2086
        patch -d "$SRC" -s -p1 ${opts:-} <"$SRC/debian/patches/$p" || die "debian patch $p does not apply"
    done <"$SRC/debian/patches/series"
fi

# Kubernetes 1.20 vendors modern-go/reflect2 v1.0.1, which breaks with Go >= 1.18
# (kube-apiserver panics in reflect2.(*UnsafeMapType).Key on the first CRD create).
log "replacing vendored modern-go/reflect2 v1.0.1 with Debian's v1.0.2"
rm -rf -- "$SRC/vendor/github.com/modern-go/reflect2"
mkdir -p "$SRC/vendor/github.com/modern-go/reflect2"
rsync -a --exclude '*_test.go' --exclude 'test*/' "$REFLECT2_DEBIAN/" "$SRC/vendor/github.com/modern-go/reflect2/"
sed -i 's#modern-go/reflect2 v1\.0\.1#modern-go/reflect2 v1.0.2#g' "$SRC/vendor/modules.txt" "$SRC/go.mod"
if grep -q 'modern-go/reflect2 v1\.0\.1' "$SRC/vendor/modules.txt" "$SRC/go.mod" ||
    [[ ! -f "$SRC/vendor/github.com/modern-go/reflect2/go_above_118.go" ]]; then
    die "replacing reflect2 failed (need Debian's golang-github-modern-go-reflect2-dev >= 1.0.2)"
fi

# Kubernetes 1.20's vendored OpenAPI validators take "", 0 and false for null when built
# with Go >= 1.16 (reflect.Zero shares one zero buffer): the apiserver then rejects every
# empty string, zero or false in a custom resource's status or in a patch
# (kubernetes/kubernetes#99804). Apply the upstream fix (kubernetes/kube-openapi#230,
# go-openapi/validate#138): only a nil value is null.
ZERO_CHECK='if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {'
for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
    grep -qF "$ZERO_CHECK" "$SRC/$f" || die "zero-value fix: pattern not found in $f (the recipe needs updating for this source)"
    log "zero-value fix in $f"
    sed -i 's/if data == nil || reflect\.DeepEqual(reflect\.Zero(reflect\.TypeOf(data)), reflect\.ValueOf(data)) {/if data == nil {/' "$SRC/$f"
    ! grep -qF "$ZERO_CHECK" "$SRC/$f" || die "zero-value fix did not apply to $f"
done

# The kubelet's cAdvisor asks Docker for its root folder 5 times, a second apart, before it
# falls back to /var/lib/docker: 5 s of every node's start where no Docker runs (ours runs
# containerd; later cAdvisor releases ask once). Ask none.
DOCKER_RETRIES='const rootDirRetries = 5'
f=vendor/github.com/google/cadvisor/container/docker/factory.go
grep -qF "$DOCKER_RETRIES" "$SRC/$f" || die "docker root retries: pattern not found in $f (the recipe needs updating for this source)"
log "no Docker root retries in $f"
sed -i 's/^const rootDirRetries = 5$/const rootDirRetries = 0/' "$SRC/$f"
! grep -qF "$DOCKER_RETRIES" "$SRC/$f" || die "docker root retries: the change did not apply to $f"

# ------------------------------------------------------------- build
# Only what OUTPUT_DIR lacks: a control plane already built gains the node's binaries.
TO_BUILD=()
for c in "${COMPONENTS[@]}" "${NODE_COMPONENTS[@]}"; do [[ -x "$OUT_DIR/$c" ]] || TO_BUILD+=("$c"); done
mkdir -p "$SRC/.go/src/k8s.io" "$SRC/_output/local/go"
ln -sfn ../../.. "$SRC/.go/src/k8s.io/kubernetes"
# hack/lib/golang.sh forces GOCACHE=_output/local/go/cache: point it at the persistent cache.
ln -sfn "$GO_CACHE_DIR" "$SRC/_output/local/go/cache"
if [[ ${#TO_BUILD[@]} != 0 ]]; then
    stage "building ${TO_BUILD[*]} (cold: ~5-6 min on 2 cores for the control plane, ~12 CPU-min more for kubelet; log: $BUILD_LOG)"
    what=""
    for c in "${TO_BUILD[@]}"; do what+="cmd/$c "; done
    build_start=$SECONDS
    # KUBE_STATIC_OVERRIDES: kubelet is linked statically like the control plane, so it
    # depends on nothing of the host's but the kernel.
    build() {
        cd "$SRC" &&
            env GOPATH="$SRC/.go" GOCACHE="$GO_CACHE_DIR" CGO_ENABLED=0 GOFLAGS= GO111MODULE= GOTOOLCHAIN=local \
                KUBE_STATIC_OVERRIDES=kubelet make WHAT="${what% }"
    }
    quiet build || die "build failed (full log: $BUILD_LOG)"
    log "build finished in $((SECONDS - build_start)) s"
fi

# ------------------------------------------------------------- install
stage "installing into $OUT_DIR"
TMP_OUT="$(mktemp -d "$OUT_DIR.tmp.XXXXXX")"
for c in "${TO_BUILD[@]}"; do
    [[ -x "$SRC/_output/bin/$c" ]] || die "build produced no _output/bin/$c (see $BUILD_LOG)"
    install -m 0755 "$SRC/_output/bin/$c" "$TMP_OUT/$c"
done
[[ -x "$TMP_OUT/kube-apiserver" ]] && log "built: $("$TMP_OUT/kube-apiserver" --version)"
if [[ ! -x "$OUT_DIR/pause" ]]; then
    # The sandbox image's only file: Kubernetes' own pause, static (no libc at run time).
    log "building pause from build/pause/linux/pause.c"
    gcc -Os -static -DVERSION="$KUBE_VERSION" -o "$TMP_OUT/pause" "$SRC/build/pause/linux/pause.c" ||
        die "building pause failed (hint: apt-get install gcc libc6-dev)"
    strip "$TMP_OUT/pause" 2>/dev/null || true
fi
install -m 0755 "$ETCD_BIN" "$TMP_OUT/etcd"

# kubectl: Debian's kubernetes-client (same 1.20.2 version) extracted without
# installing it (it would clash with another /usr/bin/kubectl); else the one on PATH.
kubectl_dl="$WORK_DIR/kubectl-deb"
mkdir -p "$kubectl_dl"
if (cd "$kubectl_dl" && apt-get -q download kubernetes-client >/dev/null 2>&1) &&
    dpkg-deb -x "$(ls "$kubectl_dl"/kubernetes-client_*.deb | head -n1)" "$kubectl_dl/x" &&
    [[ -x "$kubectl_dl/x/usr/bin/kubectl" ]]; then
    install -m 0755 "$kubectl_dl/x/usr/bin/kubectl" "$TMP_OUT/kubectl"
    log "kubectl: Debian kubernetes-client"
elif command -v kubectl >/dev/null 2>&1; then
    ln -s "$(command -v kubectl)" "$TMP_OUT/kubectl"
    log "kubectl: symlink to $(command -v kubectl)"
else
    log "kubectl: not available (optional; apt-get install kubernetes-client)"
fi

if [[ -d "$OUT_DIR" ]] && [[ -n "$(ls -A "$OUT_DIR")" ]]; then
    # Existing non-empty dir (maybe user files in it): rename each file into place.
    for f in "$TMP_OUT"/*; do mv -fT -- "$f" "$OUT_DIR/$(basename "$f")"; done
    rmdir "$TMP_OUT"
else
    [[ -d "$OUT_DIR" ]] && rmdir "$OUT_DIR"
    mv -T -- "$TMP_OUT" "$OUT_DIR"
fi
TMP_OUT=""
assets_complete "$OUT_DIR" || die "install into $OUT_DIR incomplete"

stage "done: Kubernetes $KUBE_VERSION control plane in $OUT_DIR"
ls -l "$OUT_DIR" >&2
