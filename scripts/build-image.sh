#!/usr/bin/env bash
# `make image`: the container image of chartreg, written as an OCI image layout,
# target/image/oci (at the repository root, wherever cargo builds), so that skopeo can copy it
# to any registry without an engine. Its tag names the version and the content:
# VERSION-CONTENT, the crate's version and the first 12 hex digits of the content digest the
# binary prints (`chartreg ls --content-digest`, over every embedded file), e.g.
# 0.1.0-3f2a9c1d4e5b, so that each change of content is a new tag and the same content the same
# tag; IMAGE_TAG=... overrides it. The tag is written to target/image/tag (IMAGE_OUT=DIR writes
# DIR/oci and DIR/tag instead):
#
#   TAG=$(cat target/image/tag)
#   skopeo copy oci:target/image/oci:$TAG docker://REGISTRY/chartreg:$TAG
#
# 1. The statically linked server binary SERVER_BIN (`chartreg-build build` compiles it; make
#    image passes it), for the host's architecture, copied to target/image/bin/<arch>/chartreg.
# 2. The tag and the labels: `org.opencontainers.image.version` (the tag),
#    `io.chartreg.content.digest` (the whole content digest), `created`; `revision` (HEAD's
#    commit) only when the work tree is clean (`git status --porcelain` prints nothing: the
#    commit then holds everything built); `source` only when a URL is known (IMAGE_SOURCE, or
#    `git remote get-url origin` when it is an https URL), any user and password in it left
#    out; never a local path.
# 3. The image, written by `chartreg-build image` (BUILD_TOOL; no engine: the same bytes for the
#    same binary, labels and SOURCE_DATE_EPOCH), on scratch or on IMAGE_BASE, an OCI image
#    layout `DIR[:TAG]`. Or, with CONTAINER_ENGINE=buildah, podman or docker, from the
#    Containerfile, for teams that build with their own engine (IMAGE_BASE is then an image
#    reference), with private storage under target/image (buildah: --storage-driver vfs
#    --isolation chroot, which work without a daemon or cgroups); the build context is
#    target/image/bin alone.
#
# With SERVER_BIN_ARM64 (the same content's server for linux/arm64: make image-multiplatform),
# chartreg-build writes an image index of linux/amd64 and linux/arm64 instead.
#
# Settings (environment): IMAGE_TAG, IMAGE_SOURCE, IMAGE_OUT, IMAGE_BASE (scratch by default,
# since no registry is reachable here; a distroless layout, or with an engine
# gcr.io/distroless/static-debian12:nonroot, elsewhere), SOURCE_DATE_EPOCH (the `created` label
# and layer times; default: the last commit's time), CONTAINER_ENGINE, SERVER_BIN, BUILD_TOOL.
set -euo pipefail
# Relative folders are the caller's, as cargo takes them.
absolute() { if [[ "$1" == /* ]]; then printf '%s' "$1"; else printf '%s/%s' "$PWD" "$1"; fi; }
for name in SERVER_BIN SERVER_BIN_ARM64 IMAGE_OUT; do
    if [[ -n "${!name:-}" ]]; then export "$name=$(absolute "${!name}")"; fi
done
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE=${IMAGE_BASE:-scratch}
OUT=${IMAGE_OUT:-$ROOT/target/image}
log() { printf '[image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case "$(uname -m)" in
    x86_64) ARCH=amd64 ;;
    aarch64) ARCH=arm64 ;;
    *) die "no static build set up for $(uname -m)" ;;
esac
# An OCI tag: letters, digits, `_`, `.`, `-`, at most 128, not starting with `.` or `-`.
TAG_PATTERN='^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$'
if [[ -n "${IMAGE_TAG:-}" && ! "$IMAGE_TAG" =~ $TAG_PATTERN ]]; then
    die "IMAGE_TAG=$IMAGE_TAG is not an image tag (letters, digits, _ . -; at most 128 characters; not starting with . or -)"
fi
# A URL without its user and password (a token in a remote's URL stays out of the image).
without_credentials() { sed -E 's#^(https?://)[^/@]*@#\1#' <<<"$1"; }
if [[ -n "${IMAGE_SOURCE:-}" ]]; then
    [[ "$IMAGE_SOURCE" =~ ^https?://[^[:space:]]+$ ]] ||
        die "IMAGE_SOURCE=$IMAGE_SOURCE is not an http(s) URL (the source label is never a local path)"
    SOURCE=$(without_credentials "$IMAGE_SOURCE")
else
    ORIGIN=$(git remote get-url origin 2>/dev/null || true)
    SOURCE=
    if [[ "$ORIGIN" =~ ^https://[^[:space:]]+$ ]]; then SOURCE=$(without_credentials "$ORIGIN"); fi
fi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)

BIN=${SERVER_BIN:-}
[[ -n "$BIN" ]] || die "SERVER_BIN must name the server binary (make image: chartreg-build build writes it)"
[[ -x "$BIN" ]] || die "SERVER_BIN=$BIN is not an executable"
if readelf -l "$BIN" | grep -q 'Requesting program interpreter'; then
    die "$BIN is dynamically linked"
fi
CONTENT=$("$BIN" ls --content-digest) || die "$BIN ls --content-digest failed"
[[ "$CONTENT" =~ ^sha256:[0-9a-f]{64}$ ]] || die "$BIN ls --content-digest printed '$CONTENT'"
TAG=${IMAGE_TAG:-$VERSION-${CONTENT:7:12}}
# Read after the build, so that the label names a commit holding everything the binary holds.
REVISION=
if STATUS=$(git --no-optional-locks status --porcelain 2>/dev/null) && [[ -z "$STATUS" ]]; then
    REVISION=$(git rev-parse HEAD)
else
    log "no revision label: the work tree is not a clean git checkout"
fi
mkdir -p "$OUT/bin/$ARCH"
cp "$BIN" "$OUT/bin/$ARCH/chartreg"

ENGINE=${CONTAINER_ENGINE:-chartreg-build}
LABELS=(--label "org.opencontainers.image.version=$TAG"
        --label "io.chartreg.content.digest=$CONTENT"
        --label "org.opencontainers.image.created=$CREATED")
[[ -z "$REVISION" ]] || LABELS+=(--label "org.opencontainers.image.revision=$REVISION")
[[ -z "$SOURCE" ]] || LABELS+=(--label "org.opencontainers.image.source=$SOURCE")
ARGS=(--build-arg "BASE=$BASE" --build-arg "TARGETARCH=$ARCH" "${LABELS[@]}"
      -f "$ROOT/Containerfile" -t "chartreg:$TAG")
rm -rf "$OUT/oci" "$OUT/tag"
case "$ENGINE" in
    chartreg-build)
        [[ -x "${BUILD_TOOL:-}" ]] || die "BUILD_TOOL must name chartreg-build (make image passes it)"
        WRITER=(--binary "$BIN" --content-digest "$CONTENT" --tag "$TAG" --out "$OUT/oci")
        if [[ -n "${SERVER_BIN_ARM64:-}" ]]; then
            # An image index of both platforms: the arm64 server of the same content beside.
            [[ "$ARCH" == amd64 ]] || die "SERVER_BIN_ARM64 is for an amd64 build machine"
            [[ -x "$SERVER_BIN_ARM64" ]] || die "SERVER_BIN_ARM64=$SERVER_BIN_ARM64 is not an executable"
            WRITER=(--binary "linux/amd64=$BIN" --binary "linux/arm64=$SERVER_BIN_ARM64"
                    "${WRITER[@]:2}")
        fi
        [[ "$BASE" == scratch ]] || WRITER+=(--base "$BASE")
        [[ -z "$REVISION" ]] || WRITER+=(--label "org.opencontainers.image.revision=$REVISION")
        [[ -z "$SOURCE" ]] || WRITER+=(--label "org.opencontainers.image.source=$SOURCE")
        log "chartreg-build image (base $BASE)"
        SOURCE_DATE_EPOCH=$EPOCH "$BUILD_TOOL" image "${WRITER[@]}" >&2
        ;;
    buildah)
        STORE=(--root "$OUT/storage" --runroot "$OUT/run" --storage-driver vfs)
        log "buildah build (base $BASE)"
        buildah "${STORE[@]}" build --quiet --isolation chroot --timestamp "$EPOCH" "${ARGS[@]}" "$OUT/bin" >/dev/null
        buildah "${STORE[@]}" push --quiet "chartreg:$TAG" "oci:$OUT/oci:$TAG"
        ;;
    podman)
        log "podman build (base $BASE)"
        podman build --quiet --timestamp "$EPOCH" "${ARGS[@]}" "$OUT/bin" >/dev/null
        podman push --quiet "chartreg:$TAG" "oci:$OUT/oci:$TAG"
        ;;
    docker)
        log "docker build (base $BASE)"
        SOURCE_DATE_EPOCH=$EPOCH docker build --quiet "${ARGS[@]}" "$OUT/bin" >/dev/null
        command -v skopeo >/dev/null || die "skopeo is needed to write docker's image as an OCI layout"
        skopeo copy --quiet "docker-daemon:chartreg:$TAG" "oci:$OUT/oci:$TAG"
        ;;
    *) die "CONTAINER_ENGINE must be chartreg-build (the default), buildah, podman or docker, not $ENGINE" ;;
esac
printf '%s\n' "$TAG" >"$OUT/tag"
log "wrote $OUT/oci (chartreg:$TAG, content $CONTENT, $ENGINE, base $BASE) and its tag in $OUT/tag: skopeo copy oci:$OUT/oci:$TAG docker://REGISTRY/chartreg:$TAG"
