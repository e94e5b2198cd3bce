#!/usr/bin/env bash
# The release archive a build machine installs: `make dist`.
#
#   scripts/make-dist.sh BUILD_TOOL OUT_DIR
#
# writes OUT_DIR/chartreg-build-VERSION-ARCH-linux.tar.gz, which unpacks into one folder,
# chartreg-build-VERSION-ARCH-linux/, holding
#   bin/chartreg-build     the build tool (BUILD_TOOL: the release binary; it links the C library
#                          dynamically, glibc 2.36 or later, as Debian 12 has)
#   share/chartreg/kit/    the server kit (scripts/make-kit.sh: the server's crates and the
#                          source of every dependency), found by the tool beside itself
#   LICENSE, README.md
# and nothing else from this repository. Unpacked anywhere, `bin/chartreg-build build` compiles
# the server offline (it needs a Rust toolchain and a C compiler with the static C library; the
# builder image, `make builder-image`, has them). The archive is deterministic: sorted names,
# owner 0, times from SOURCE_DATE_EPOCH (default: the last commit's time).
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_TOOL OUT_DIR" >&2; exit 2; }
TOOL=$(realpath -ms "$1")
OUT=$(realpath -ms "$2")
cd "$(dirname "$0")/.."
log() { printf '[dist] %s\n' "$*" >&2; }
[[ -x "$TOOL" ]] || { log "error: $TOOL is not an executable (make build-tool builds it)"; exit 1; }

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
case "$(uname -m)" in
    x86_64) ARCH=x86_64 ;;
    aarch64) ARCH=aarch64 ;;
    *) log "error: no release archive for $(uname -m)"; exit 1 ;;
esac
NAME=chartreg-build-$VERSION-$ARCH-linux
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

mkdir -p "$OUT"
STAGE=$(mktemp -d "$OUT/.dist.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/$NAME/bin" "$STAGE/$NAME/share/chartreg"
cp "$TOOL" "$STAGE/$NAME/bin/chartreg-build"
cp LICENSE README.md "$STAGE/$NAME/"
scripts/make-kit.sh "$STAGE/$NAME/share/chartreg/kit"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$STAGE" -cf - "$NAME" | gzip -n >"$STAGE/archive.tar.gz"
mv "$STAGE/archive.tar.gz" "$OUT/$NAME.tar.gz"
log "wrote $OUT/$NAME.tar.gz ($(du -h "$OUT/$NAME.tar.gz" | cut -f1), kit $(cat "$STAGE/$NAME/share/chartreg/kit/KIT_ID"))"
