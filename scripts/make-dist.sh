#!/usr/bin/env bash
# The release archive a build machine installs: `make dist`.
#
#   scripts/make-dist.sh BUILD_TOOL OUT_DIR
#
# writes OUT_DIR/chartreg-VERSION-src.tar.gz, the source release (chartreg-VERSION/: the tree
# without .git), and OUT_DIR/chartreg-build-VERSION-ARCH-linux.tar.xz, which unpacks into one folder,
# chartreg-build-VERSION-ARCH-linux/, holding
#   bin/chartreg-build     the build tool (BUILD_TOOL: the release binary; it links the C library
#                          dynamically, glibc 2.36 or later, as Debian 12 has); ARCH is the
#                          machine it was built for (x86_64, or aarch64 cross-compiled)
#   share/chartreg/kit/    the server kit (scripts/make-kit.sh: the server's crates and the
#                          source of every dependency a Linux build compiles), found by the
#                          tool beside itself
#   share/chartreg/chart/  the deploy chart (deploy/chart), installed with the values file
#                          `chartreg-build init` writes
#   share/chartreg/licenses/  THIRD-PARTY.md: every crate the tool links and the kit compiles,
#                          with its licence (scripts/licences.py), and the tool's crates' texts
#   LICENSE, README.md
#   SHA256SUMS             the digest of every other file, for `sha256sum -c SHA256SUMS`
# and nothing else from this repository. Unpacked anywhere, `bin/chartreg-build build` compiles
# the server offline (it needs a Rust toolchain and a C compiler with the static C library; the
# builder image, `make builder-image`, has them). The archive is deterministic: sorted names,
# owner 0, times from SOURCE_DATE_EPOCH (default: the last commit's time; without git, 0).
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_TOOL OUT_DIR" >&2; exit 2; }
TOOL=$(realpath -ms "$1")
OUT=$(realpath -ms "$2")
cd "$(dirname "$0")/.."
log() { printf '[dist] %s\n' "$*" >&2; }
[[ -x "$TOOL" ]] || { log "error: $TOOL is not an executable (make build-tool builds it)"; exit 1; }

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The archive is named for the machine the tool was built for (its ELF header), which is this
# one's or, cross-compiled (make dist-aarch64), another; its own strip removes the symbols.
case "$(LC_ALL=C readelf -h "$TOOL" | sed -n 's/^ *Machine: *//p')" in
    *X86-64*) ARCH=x86_64 STRIP=strip ;;
    AArch64) ARCH=aarch64 STRIP=strip ;;
    *) log "error: $TOOL is built for no machine a release archive is made for"; exit 1 ;;
esac
if [[ "$ARCH" != "$(uname -m)" ]]; then STRIP=$ARCH-linux-gnu-strip; fi
NAME=chartreg-build-$VERSION-$ARCH-linux
if [[ "$(git rev-parse --show-toplevel 2>/dev/null)" == "$(pwd -P)" ]]; then
    EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
else
    EPOCH=${SOURCE_DATE_EPOCH:-0}
fi

mkdir -p "$OUT"
STAGE=$(mktemp -d "$OUT/.dist.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
# A deterministic tar of the folder STAGE/$1 (sorted names, owner 0, times EPOCH).
tarball() {
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" \
        --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        -C "$STAGE" -cf - "$1"
}

# The source release first: what git tracks (and new files it does not ignore), without .git,
# as `git archive` gives it; in a tree without git, the tree without what builds write. The
# release archive's kit is made from the unpacked source, so every release shows that a copy
# of the source without git builds (the dist test compiles the server from that kit).
SRC=chartreg-$VERSION
mkdir -p "$STAGE/$SRC"
if [[ "$(git rev-parse --show-toplevel 2>/dev/null)" == "$(pwd -P)" ]]; then
    git ls-files -z --cached --others --exclude-standard
else
    find . \( -path ./target -o -path ./.tools -o -path ./.git -o -path ./fuzz/target \
        -o -path ./fuzz/artifacts -o -path ./fuzz/coverage \) -prune -o \
        \( -type f -o -type l \) -printf '%P\0'
fi | while IFS= read -r -d '' file; do
    [[ -f "$file" || -L "$file" ]] || continue
    mkdir -p "$STAGE/$SRC/$(dirname "$file")"
    cp -P --preserve=mode "$file" "$STAGE/$SRC/$file"
done
tarball "$SRC" | gzip -9 -n >"$STAGE/src.tar.gz"

mkdir -p "$STAGE/$NAME/bin" "$STAGE/$NAME/share/chartreg"
# Without its symbols (20 MB -> 16 MB): a panic's backtrace shows addresses only.
"$STRIP" -o "$STAGE/$NAME/bin/chartreg-build" "$TOOL"
cp "$STAGE/$SRC/LICENSE" "$STAGE/$SRC/README.md" "$STAGE/$NAME/"
VENDOR_FILTERER=$(scripts/cargo-vendor-filterer.sh) \
    "$STAGE/$SRC/scripts/make-kit.sh" "$STAGE/$NAME/share/chartreg/kit"
cp -r "$STAGE/$SRC/deploy/chart" "$STAGE/$NAME/share/chartreg/chart"
python3 "$STAGE/$SRC/scripts/licences.py" "$STAGE/$NAME/share/chartreg/licenses" \
    --workspace "$STAGE/$SRC" --kit "$STAGE/$NAME/share/chartreg/kit"
( cd "$STAGE/$NAME" && find . -type f ! -name SHA256SUMS -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 sha256sum >SHA256SUMS )
# xz, not gzip: 18 MB, not 28 MB, of the same files (the kit is ~640 crates of source). Two
# threads, always: xz's multi-threaded output depends on the block size, not the thread count,
# and differs from its single-threaded output.
tarball "$NAME" | xz -6 -T2 >"$STAGE/archive.tar.xz"
mv "$STAGE/src.tar.gz" "$OUT/$SRC-src.tar.gz"
mv "$STAGE/archive.tar.xz" "$OUT/$NAME.tar.xz"
log "wrote $OUT/$SRC-src.tar.gz ($(du -h "$OUT/$SRC-src.tar.gz" | cut -f1))"
log "wrote $OUT/$NAME.tar.xz ($(du -h "$OUT/$NAME.tar.xz" | cut -f1), kit $(cat "$STAGE/$NAME/share/chartreg/kit/KIT_ID"))"
