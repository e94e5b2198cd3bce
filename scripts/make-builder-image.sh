#!/usr/bin/env bash
# The builder image: `make builder-image`.
#
#   scripts/make-builder-image.sh DIST_TARBALL OUT_LAYOUT
#
# writes OUT_LAYOUT, an OCI image layout holding one image, tagged with the version of the
# release archive DIST_TARBALL (scripts/make-dist.sh: chartreg-build-VERSION-ARCH-linux.tar.xz),
# and the tag to OUT_LAYOUT/../builder-tag, so that a CI job or a build machine without internet
# runs `chartreg-build fetch|build` in it with nothing else:
#
#   skopeo copy oci:target/dist/builder-oci:$(cat target/dist/builder-tag) docker://REGISTRY/chartreg-builder:TAG
#
# Its layers, each made here from its source, never from another image:
#   1. Debian 12 (bookworm), minbase, from Debian's packages (mmdebstrap), with the packages
#      PACKAGES lists (why each is there is written beside it); no documentation, man pages or
#      translations. The package download is cached beside OUT_LAYOUT as
#      builder-rootfs-<key>.tar, keyed by everything mmdebstrap is given: a rerun does not fetch
#      again (delete the file to take newer packages).
#   2. /usr/local/rust: this machine's own Rust toolchain (`rustc --print sysroot`; RUSTC=...
#      names another; stable only), only what compiling and linking need: rustc, cargo, their
#      shared libraries, the host's standard library, rust-lld (the linker rustc uses on x86_64).
#   3. /opt/chartreg-build: the release archive unpacked (the tool and the server kit beside it),
#      and /usr/local/bin/chartreg-build, a symbolic link to its binary (the tool finds the kit
#      through it: it looks beside the file the link resolves to).
#   4. /var/cache/chartreg: a warm build cache (CHARTREG_CACHE in the image's environment). The
#      server is compiled once here, in the root file system of layers 1-3 with no network
#      (`unshare -n`, `chroot`) and an empty CARGO_HOME, from a sample chart; every dependency of
#      the server is then compiled, and a team's `chartreg-build build` in the image recompiles
#      only the small crate that embeds its content, and links. The sample and the binary are not
#      kept. The cache is writable by every user (CI jobs may run as any uid).
#
# With BUILDER_CROSS=arm64 (on an x86_64 machine; `make builder-image-cross`) the image also
# builds linux/arm64 servers, offline: layer 1 adds Debian's own Rust (rustc-web, /usr/bin/rustc,
# from bookworm-security) with the aarch64 standard library (libstd-rust-web-dev:arm64), the
# aarch64 cross gcc and static C library, since the copied toolchain of layer 2 has the host's
# standard library only (`chartreg-build build --platform linux/arm64` takes Debian's rustc by
# itself then); the warm-up also compiles the sample's arm64 server, which must be an aarch64
# executable and, run under this machine's qemu-aarch64-static, list the sample chart; the cache
# keeps both platforms' dependencies.
# The image: Env PATH (the toolchain first) and CHARTREG_CACHE, WorkingDir /work, Cmd bash,
# labels org.opencontainers.image.{title,version,licenses,created,description} and the kit and
# Rust versions it carries. Made with umoci (no engine, no daemon); layers gzip'd; times from
# SOURCE_DATE_EPOCH (default: the last commit's time). The layout is written beside OUT_LAYOUT
# and renamed into place. When none of the inputs changed (this script, the archive, the
# toolchain, the packages, the sample chart), the layout there is kept ("up to date").
#
# Runs as root (mmdebstrap, chroot and the namespaces need it); needs mmdebstrap, umoci,
# unshare (scripts/install-tools.sh installs them) and reaches http://deb.debian.org (layer 1,
# once). Each step's time and size is logged to stderr.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 DIST_TARBALL OUT_LAYOUT" >&2; exit 2; }
DIST=$(realpath -ms "$1")
OUT=$(realpath -ms "$2")
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '[builder] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$(id -u)" == 0 ]] || die "needs root (mmdebstrap, chroot and unshare): sudo -E $0 $*"
for tool in mmdebstrap mmtarfilter umoci unshare chroot tar gzip xz sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: scripts/install-tools.sh installs it"
done
[[ -f "$DIST" ]] || die "$DIST is not a file (make dist writes the release archive)"

# The release archive: chartreg-build-VERSION-ARCH-linux.tar.xz holds chartreg-build-VERSION-ARCH-linux/.
ARCHIVE=$(basename "$DIST" .tar.xz)
[[ "$ARCHIVE" =~ ^chartreg-build-([0-9][A-Za-z0-9.+_-]*)-(x86_64|aarch64)-linux$ ]] ||
    die "$DIST is not named as a release archive (chartreg-build-VERSION-ARCH-linux.tar.xz)"
VERSION=${BASH_REMATCH[1]}
ARCH=${BASH_REMATCH[2]}
[[ "$ARCH" == "$(uname -m)" ]] || die "$DIST is for $ARCH, this machine is $(uname -m)"
# An OCI tag: the version, with `+` (build metadata) written `_`.
TAG=${VERSION//+/_}
[[ "$TAG" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "version $VERSION makes no image tag"
case "$ARCH" in
    x86_64) HOST=x86_64-unknown-linux-gnu ;;
    aarch64) HOST=aarch64-unknown-linux-gnu ;;
esac

# The toolchain to copy: the real rustc and cargo of the sysroot, not rustup's proxies.
RUSTC=${RUSTC:-rustc}
SYSROOT=$("$RUSTC" --print sysroot) || die "$RUSTC does not run (a Rust toolchain is copied into the image)"
RUST_VV=$("$SYSROOT/bin/rustc" -vV) || die "$SYSROOT/bin/rustc does not run"
RUST_RELEASE=$(sed -n 's/^release: //p' <<<"$RUST_VV")
[[ "$(sed -n 's/^host: //p' <<<"$RUST_VV")" == "$HOST" ]] || die "$SYSROOT is not a toolchain for $HOST"
[[ "$RUST_RELEASE" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    die "$SYSROOT is Rust $RUST_RELEASE: the builder image carries a stable toolchain (RUSTC=... names another)"
[[ -x "$SYSROOT/bin/cargo" ]] || die "$SYSROOT has no bin/cargo"
CARGO_VERSION=$("$SYSROOT/bin/cargo" -V)

# The chart the warm-up build packs (any chart does: the cache holds the server's dependencies).
SAMPLE=$ROOT/charts/hello-1.0.0.tgz
[[ -f "$SAMPLE" ]] || die "$SAMPLE is missing (the sample chart the cache is warmed with)"

EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)
export SOURCE_DATE_EPOCH=$EPOCH

# Layer 1's packages, beside Debian's minbase (apt, dpkg, bash, coreutils, tar, gzip ...):
PACKAGES=(
    gcc             # cc: rustc links through it (the server and build scripts), ring compiles C with it
    libc6-dev       # libc.a and the C headers: the server is linked statically (crt-static)
    ca-certificates # fetch verifies chart repositories and registries over HTTPS with the system's roots
)
# Not git (with perl, 90 MB): CI systems check the repository out with their own helpers
# (GitLab's runner helper, actions/checkout's REST download, Jenkins on its agent).
CROSS=${BUILDER_CROSS:-}
ARCHITECTURES=()
case "$CROSS" in
    '') ;;
    arm64)
        [[ "$ARCH" == x86_64 ]] || die "BUILDER_CROSS=arm64 is for an x86_64 machine's builder image"
        command -v qemu-aarch64-static >/dev/null 2>&1 ||
            die "qemu-aarch64-static is missing (make tools-cross installs it): the arm64 warm-up runs under it"
        PACKAGES+=(
            rustc-web                  # /usr/bin/rustc (1.96), whose sysroot holds the aarch64 library below
            libstd-rust-web-dev:arm64  # the aarch64 standard library, which the copied toolchain lacks
            gcc-aarch64-linux-gnu      # the aarch64 linker and C compiler (ring, the server's link)
            libc6-dev-arm64-cross      # the aarch64 libc.a: arm64 servers are linked statically too
        )
        ARCHITECTURES=(--architectures=amd64,arm64)
        ;;
    *) die "BUILDER_CROSS=$CROSS: only arm64 (beside this machine's amd64) is built" ;;
esac
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
MMDEBSTRAP=(
    --variant=minbase --mode=root --format=tar ${ARCHITECTURES[@]+"${ARCHITECTURES[@]}"}
    "--include=$(IFS=,; printf '%s' "${PACKAGES[*]}")"
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
    # The build machine's name server and host name stay out of the image (runtimes provide them).
    --customize-hook='rm -f "$1/etc/resolv.conf"; echo chartreg-builder >"$1/etc/hostname"'
    "$SUITE" -
    "deb $MIRROR $SUITE main"
    "deb $MIRROR $SUITE-updates main"
    "deb $MIRROR-security $SUITE-security main"
)
ROOTFS_KEY=$(printf '%s\n' "$EPOCH" "${MMDEBSTRAP[@]}" | sha256sum | cut -c1-16)

mkdir -p "$(dirname "$OUT")"
DIR=$(dirname "$OUT")
ROOTFS_TAR=$DIR/builder-rootfs-$ROOTFS_KEY.tar
TAG_FILE=$DIR/builder-tag
STAMP=$DIR/.$(basename "$OUT").inputs
INPUTS=$({
    sha256sum "$0" "$DIST" "$SAMPLE" | cut -d' ' -f1
    printf '%s\n' "$ROOTFS_KEY" "$EPOCH" "$RUST_VV" "$CARGO_VERSION"
} | sha256sum | cut -d' ' -f1)
if [[ -f "$OUT/index.json" && -f "$STAMP" && "$(cat "$STAMP")" == "$INPUTS" &&
    "$(cat "$TAG_FILE" 2>/dev/null)" == "$TAG" ]]; then
    log "up to date: $OUT ($TAG)"
    exit 0
fi

STARTED=$SECONDS
STEP_STARTED=$SECONDS
step() { log "$*"; STEP_STARTED=$SECONDS; }
took() { log "  $* ($((SECONDS - STEP_STARTED)) s)"; }
size() { du -sh --apparent-size "$@" | cut -f1; }

STAGE=$(mktemp -d "$DIR/.builder.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
R=$STAGE/root

# -- 1. Debian ------------------------------------------------------------------------------------
if [[ -f "$ROOTFS_TAR" ]]; then
    log "Debian $SUITE root file system: cached, $ROOTFS_TAR ($(size "$ROOTFS_TAR"))"
else
    step "Debian $SUITE root file system from $MIRROR: minbase + ${PACKAGES[*]}"
    # Device nodes stay out: runtimes make /dev, and a rootless unpack could not.
    mmdebstrap --quiet "${MMDEBSTRAP[@]}" | mmtarfilter --path-exclude='/dev/*' >"$STAGE/rootfs.tar"
    mv "$STAGE/rootfs.tar" "$ROOTFS_TAR"
    for old in "$DIR"/builder-rootfs-*.tar; do
        [[ "$old" == "$ROOTFS_TAR" ]] || rm -f "$old"
    done
    took "$ROOTFS_TAR, $(size "$ROOTFS_TAR")"
fi
mkdir "$R"
tar -C "$R" --numeric-owner -xpf "$ROOTFS_TAR"

# in_root ARG...: `env -i ARG...` in the root file system, as a container runs it, with no
# network: new mount and network namespaces, then scripts/in-root.sh (/proc, a /dev of the nodes
# compilers open, bound from this machine's), the image's environment and HOME.
IMAGE_ENV=(
    PATH=/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    CHARTREG_CACHE=/var/cache/chartreg
)
in_root() {
    unshare --net --mount --fork -- "$ROOT/scripts/in-root.sh" "$R" "${IMAGE_ENV[@]}" HOME=/root "$@"
}

# -- 2. The Rust toolchain ------------------------------------------------------------------------
step "Rust $RUST_RELEASE from $SYSROOT into /usr/local/rust"
RUST=$R/usr/local/rust
TARGET_LIB=lib/rustlib/$HOST
mkdir -p "$RUST/bin" "$RUST/$TARGET_LIB/lib"
cp -p "$SYSROOT/bin/rustc" "$SYSROOT/bin/cargo" "$RUST/bin/"
shopt -s nullglob
LIBS=("$SYSROOT"/lib/librustc_driver-*.so "$SYSROOT"/lib/libLLVM*.so* "$SYSROOT"/lib/libstd-*.so)
shopt -u nullglob
((${#LIBS[@]})) || die "$SYSROOT/lib holds no librustc_driver-*.so"
cp -a "${LIBS[@]}" "$RUST/lib/"
# The standard library; not the sanitizer runtimes (only nightly's -Zsanitizer uses them).
find "$SYSROOT/$TARGET_LIB/lib" -mindepth 1 -maxdepth 1 ! -name 'librustc-*_rt.*' \
    -exec cp -a -t "$RUST/$TARGET_LIB/lib/" {} +
# The linker rustc uses for this target (rust-lld through gcc-ld/ld.lld) and its objcopy.
for tool in rust-lld rust-objcopy gcc-ld/ld.lld; do
    if [[ -e "$SYSROOT/$TARGET_LIB/bin/$tool" ]]; then
        mkdir -p "$(dirname "$RUST/$TARGET_LIB/bin/$tool")"
        cp -p "$SYSROOT/$TARGET_LIB/bin/$tool" "$RUST/$TARGET_LIB/bin/$tool"
    fi
done
# It compiles and links a static program in the root file system, offline.
printf 'fn main() { println!("hello from rustc"); }\n' >"$R/tmp/hello.rs"
in_root rustc -C target-feature=+crt-static -o /tmp/hello /tmp/hello.rs ||
    die "the copied toolchain does not compile in the image's root file system"
[[ "$(in_root /tmp/hello)" == "hello from rustc" ]] || die "the program the copied toolchain built does not run"
in_root cargo -V >/dev/null || die "the copied cargo does not run in the image's root file system"
rm -f "$R/tmp/hello" "$R/tmp/hello.rs"
took "toolchain $(size "$RUST")"

# -- 3. The build tool and its kit ----------------------------------------------------------------
step "chartreg-build $VERSION from $DIST into /opt/chartreg-build"
tar -C "$R/opt" --no-same-owner -xJf "$DIST"
[[ -x "$R/opt/$ARCHIVE/bin/chartreg-build" ]] || die "$DIST holds no $ARCHIVE/bin/chartreg-build"
mv "$R/opt/$ARCHIVE" "$R/opt/chartreg-build"
ln -s /opt/chartreg-build/bin/chartreg-build "$R/usr/local/bin/chartreg-build"
mkdir -p "$R/work"
KIT_ID=$(cat "$R/opt/chartreg-build/share/chartreg/kit/KIT_ID")
took "tool and kit $KIT_ID, $(size "$R/opt/chartreg-build")"

# -- 4. The warm cache ----------------------------------------------------------------------------
step "warm cache: the cold compile of the server in the root file system, offline, empty CARGO_HOME"
CACHE=$R/var/cache/chartreg
rm -rf "$R/tmp/warm" "$R/tmp/cargo-home" "$CACHE"
in_root chartreg-build init /tmp/warm >/dev/null
cp "$SAMPLE" "$R/tmp/warm/charts/"
# Found by the PATH, through the symbolic link: the kit is found beside the link's target.
in_root CARGO_HOME=/tmp/cargo-home chartreg-build build --config /tmp/warm/content.yaml \
    --out /tmp/warm/chartreg >&2 || die "the warm-up build failed in the image's root file system"
in_root /tmp/warm/chartreg ls | grep 'charts/hello' >/dev/null ||
    die "the server built in the image's root file system does not hold the sample chart"
TARGET_DIR=$CACHE/build-$KIT_ID/$HOST/release
[[ -d "$TARGET_DIR" ]] || die "the warm-up build left no $TARGET_DIR"
if [[ "$CROSS" == arm64 ]]; then
    in_root CARGO_HOME=/tmp/cargo-home chartreg-build build --config /tmp/warm/content.yaml \
        --platform linux/arm64 --out /tmp/warm/chartreg.arm64 >&2 ||
        die "the arm64 warm-up build failed in the image's root file system"
    # EM_AARCH64 (183) at e_machine, and no interpreter: a static aarch64 executable.
    [[ "$(od -An -tu2 -j18 -N2 "$R/tmp/warm/chartreg.arm64" | tr -d ' ')" == 183 ]] ||
        die "the arm64 warm-up build is no aarch64 executable"
    qemu-aarch64-static "$R/tmp/warm/chartreg.arm64" ls | grep 'charts/hello' >/dev/null ||
        die "the arm64 server built in the image's root file system does not list the sample chart under qemu-aarch64-static"
    ARM64_DIR=$CACHE/build-$KIT_ID/aarch64-unknown-linux-gnu/release
    [[ -d "$ARM64_DIR" ]] || die "the arm64 warm-up build left no $ARM64_DIR"
    rm -f "$ARM64_DIR/chartreg" "$ARM64_DIR"/deps/chartreg-????????????????
fi
WARM=$(size "$CACHE")
# The binary is what the next build replaces (its content differs); the dependencies stay.
rm -f "$TARGET_DIR/chartreg" "$TARGET_DIR"/deps/chartreg-????????????????
rm -rf "$R/tmp/warm" "$R/tmp/cargo-home"
chmod -R a+rwX "$CACHE"
took "cache $(size "$CACHE") (the build left $WARM)"

# -- The image ------------------------------------------------------------------------------------
step "the image: four layers, gzip'd (umoci)"
# layer NAME PATH... [TAR-OPTION...]: a tar of PATHs in the root, owned by root, sorted.
layer() {
    local name=$1
    shift
    tar -C "$R" --sort=name --owner=0 --group=0 --numeric-owner --format=posix \
        --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        -cf "$STAGE/$name.tar" "$@"
}
# The toolchain and the tool have the source's time; the cache keeps its own (cargo compares
# the times of its outputs with their sources').
layer rust --mtime="@$EPOCH" --clamp-mtime ./usr/local/rust
layer tool --mtime="@$EPOCH" --clamp-mtime ./opt/chartreg-build ./usr/local/bin/chartreg-build ./work
layer cache ./var/cache/chartreg
LAYOUT=$STAGE/oci
umoci init --layout "$LAYOUT"
umoci new --image "$LAYOUT:$TAG"
add_layer() {
    umoci raw add-layer --image "$LAYOUT:$TAG" --history.created "$CREATED" \
        --history.created_by "$2" "$1"
}
add_layer "$ROOTFS_TAR" "mmdebstrap --variant=minbase $SUITE $MIRROR, with ${PACKAGES[*]}"
add_layer "$STAGE/rust.tar" "Rust $RUST_RELEASE ($HOST): rustc, cargo, the standard library, rust-lld"
add_layer "$STAGE/tool.tar" "chartreg-build $VERSION and its server kit ($KIT_ID), from $ARCHIVE.tar.xz"
add_layer "$STAGE/cache.tar" "chartreg-build build, offline: the server's dependencies compiled"
LICENSE=$(sed -n 's/^license = "\(.*\)"/\1/p' Cargo.toml | head -1)
ENV_FLAGS=()
for var in "${IMAGE_ENV[@]}"; do ENV_FLAGS+=(--config.env "$var"); done
umoci config --image "$LAYOUT:$TAG" --no-history --created "$CREATED" \
    --architecture "$(case "$ARCH" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; esac)" --os linux \
    "${ENV_FLAGS[@]}" --config.workingdir /work --config.cmd /bin/bash \
    --config.label org.opencontainers.image.title=chartreg-builder \
    --config.label "org.opencontainers.image.version=$VERSION" \
    --config.label "org.opencontainers.image.licenses=$LICENSE" \
    --config.label "org.opencontainers.image.created=$CREATED" \
    --config.label "org.opencontainers.image.description=chartreg-build $VERSION, Rust $RUST_RELEASE, gcc and a warm build cache: builds chartreg servers offline${CROSS:+, for linux/amd64 and linux/$CROSS}" \
    --config.label "io.chartreg.kit.id=$KIT_ID" \
    --config.label "io.chartreg.rust.version=$RUST_RELEASE"
umoci gc --layout "$LAYOUT"
took "layout $(size "$LAYOUT")"

rm -rf "$OUT"
mv "$LAYOUT" "$OUT"
printf '%s\n' "$TAG" >"$TAG_FILE"
printf '%s\n' "$INPUTS" >"$STAMP"
log "wrote $OUT ($TAG; $(size "$OUT") in $((SECONDS - STARTED)) s): layers base $(size "$ROOTFS_TAR"), rust $(size "$STAGE/rust.tar"), tool $(size "$STAGE/tool.tar"), cache $(size "$STAGE/cache.tar") (uncompressed)"
