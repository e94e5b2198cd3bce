#!/usr/bin/env bash
# Print the path of cargo-vendor-filterer (https://github.com/coreos/cargo-vendor-filterer, the
# pinned release below), which scripts/make-kit.sh vendors the kit's dependencies with.
#
#   VENDOR_FILTERER=PATH   use that binary (it must print the pinned version);
#   otherwise .tools/cargo-vendor-filterer/bin/cargo-vendor-filterer, installed there from
#   crates.io with its own Cargo.lock (`cargo install --locked`) when missing: about a minute
#   of compiling, once.
set -euo pipefail
VERSION=0.5.18
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARGO=${CARGO:-cargo}
log() { printf '[vendor-filterer] %s\n' "$*" >&2; }

works() { [[ -x "$1" ]] && [[ "$("$1" vendor-filterer --version 2>/dev/null)" == *" $VERSION" ]]; }

if [[ -n "${VENDOR_FILTERER:-}" ]]; then
    works "$VENDOR_FILTERER" || { log "error: VENDOR_FILTERER=$VENDOR_FILTERER is not cargo-vendor-filterer $VERSION"; exit 1; }
    printf '%s\n' "$VENDOR_FILTERER"
    exit 0
fi
DEST="$ROOT/.tools/cargo-vendor-filterer"
BIN="$DEST/bin/cargo-vendor-filterer"
if ! works "$BIN"; then
    log "installing cargo-vendor-filterer $VERSION into $DEST"
    mkdir -p "$ROOT/.tools"
    STAGE=$(mktemp -d "$ROOT/.tools/.vendor-filterer.XXXXXX")
    trap 'rm -rf "$STAGE"' EXIT
    "$CARGO" install --quiet --locked --root "$STAGE" --version "=$VERSION" cargo-vendor-filterer >&2
    works "$STAGE/bin/cargo-vendor-filterer" || { log "error: the installed binary does not run"; exit 1; }
    rm -rf "$DEST"
    mv "$STAGE" "$DEST"
fi
printf '%s\n' "$BIN"
