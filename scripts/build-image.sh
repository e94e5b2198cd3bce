#!/usr/bin/env bash
# `make image`: the container image of chartreg, written as an OCI image layout under
# target/image/oci (at the repository root, whatever CARGO_TARGET_DIR says), tagged with the
# version, so that skopeo can copy it to any registry without an engine:
#
#   skopeo copy oci:target/image/oci:0.1.0 docker://REGISTRY/chartreg:0.1.0
#
# 1. The statically linked release binary, for the host's architecture
#    (RUSTFLAGS=-Ctarget-feature=+crt-static with --target, so that the flag does not reach
#    proc-macro crates and build scripts, which stay shared with the ordinary build), found in
#    the folder cargo builds into (scripts/target-dir.sh: CARGO_TARGET_DIR or cargo's
#    configuration, else target/) and copied to target/image/bin/<arch>/chartreg.
# 2. The image from the Containerfile with buildah, podman or docker, whichever is installed
#    (in that order; CONTAINER_ENGINE=... chooses), with private storage under target/image
#    (buildah: --storage-driver vfs --isolation chroot, which work without a daemon or cgroups).
#
# Settings (environment): IMAGE_BASE (the Containerfile's BASE: scratch by default, since no
# registry is reachable here; gcr.io/distroless/static-debian12:nonroot elsewhere),
# SOURCE_DATE_EPOCH (the `created` label and layer times; default: the last commit's time),
# CONTAINER_ENGINE, CARGO, CARGO_TARGET_DIR.
set -euo pipefail
# Relative folders are the caller's, as cargo takes them.
absolute() { if [[ "$1" == /* ]]; then printf '%s' "$1"; else printf '%s/%s' "$PWD" "$1"; fi; }
for name in CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR; do
    if [[ -n "${!name:-}" ]]; then export "$name=$(absolute "${!name}")"; fi
done
cd "$(dirname "$0")/.."
ROOT=$PWD
CARGO=${CARGO:-cargo}
BASE=${IMAGE_BASE:-scratch}
OUT=$ROOT/target/image
log() { printf '[image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case "$(uname -m)" in
    x86_64) TRIPLE=x86_64-unknown-linux-gnu ARCH=amd64 ;;
    aarch64) TRIPLE=aarch64-unknown-linux-gnu ARCH=arm64 ;;
    *) die "no static build set up for $(uname -m)" ;;
esac
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
SOURCE=$(git config --get remote.origin.url 2>/dev/null || echo unknown)
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)

TARGET_DIR=$(CARGO="$CARGO" scripts/target-dir.sh)
log "static release build for $TRIPLE ($TARGET_DIR/$TRIPLE)"
RUSTFLAGS="${RUSTFLAGS:-} -Ctarget-feature=+crt-static" \
    "$CARGO" build --quiet --release --locked -p chartreg --target "$TRIPLE"
BIN=$TARGET_DIR/$TRIPLE/release/chartreg
[[ -x "$BIN" ]] || die "$BIN is missing after the build"
if readelf -l "$BIN" | grep -q 'Requesting program interpreter'; then
    die "$BIN is dynamically linked"
fi
mkdir -p "$OUT/bin/$ARCH"
cp "$BIN" "$OUT/bin/$ARCH/chartreg"

ENGINE=${CONTAINER_ENGINE:-}
if [[ -z "$ENGINE" ]]; then
    for candidate in buildah podman docker; do
        if command -v "$candidate" >/dev/null 2>&1; then ENGINE=$candidate; break; fi
    done
fi
[[ -n "$ENGINE" ]] || die "no container engine: install buildah (scripts/install-tools.sh does), podman or docker"
ARGS=(--build-arg "BASE=$BASE" --build-arg "TARGETARCH=$ARCH" --build-arg "VERSION=$VERSION"
      --build-arg "REVISION=$REVISION" --build-arg "CREATED=$CREATED" --build-arg "SOURCE=$SOURCE"
      -f Containerfile -t "chartreg:$VERSION")
rm -rf "$OUT/oci"
case "$ENGINE" in
    buildah)
        STORE=(--root "$OUT/storage" --runroot "$OUT/run" --storage-driver vfs)
        log "buildah build (base $BASE)"
        buildah "${STORE[@]}" build --quiet --isolation chroot --timestamp "$EPOCH" "${ARGS[@]}" . >/dev/null
        buildah "${STORE[@]}" push --quiet "chartreg:$VERSION" "oci:$OUT/oci:$VERSION"
        ;;
    podman)
        log "podman build (base $BASE)"
        podman build --quiet --timestamp "$EPOCH" "${ARGS[@]}" . >/dev/null
        podman push --quiet "chartreg:$VERSION" "oci:$OUT/oci:$VERSION"
        ;;
    docker)
        log "docker build (base $BASE)"
        SOURCE_DATE_EPOCH=$EPOCH docker build --quiet "${ARGS[@]}" . >/dev/null
        command -v skopeo >/dev/null || die "skopeo is needed to write docker's image as an OCI layout"
        skopeo copy --quiet "docker-daemon:chartreg:$VERSION" "oci:$OUT/oci:$VERSION"
        ;;
    *) die "CONTAINER_ENGINE must be buildah, podman or docker, not $ENGINE" ;;
esac
log "wrote $OUT/oci (chartreg:$VERSION, $ENGINE, base $BASE): skopeo copy oci:target/image/oci:$VERSION docker://REGISTRY/chartreg:$VERSION"
