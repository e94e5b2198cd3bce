#!/usr/bin/env bash
# A fresh clone builds with plain cargo and an empty cargo cache:
#
#   scripts/fresh-clone.sh
#
# Clones this tree's HEAD into a temporary folder and, with an empty CARGO_HOME (crates.io
# reachable: cargo downloads what each step needs) and a target folder of its own, runs
#   1. `cargo build -p chartreg-bin`: the build script lists the crates linked in with
#      `cargo tree --offline`, which needs only what the build itself downloaded (no
#      dev-dependency, as `cargo metadata --offline` would);
#   2. scripts/licences.py for the build tool (the licence step of `make dist`), whose
#      `cargo metadata` fetches the manifests it lacks rather than failing offline.
# Prints each step's time; exits non-zero at the first step that fails. Not part of `make
# test`: it compiles the server from nothing (measured: 402 s on 2 shared cores) and downloads every
# crate (about 30 s).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
CARGO=${CARGO:-cargo}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { printf '[fresh-clone] %s\n' "$*" >&2; }

git clone --quiet --no-hardlinks "$ROOT" "$WORK/clone"
mkdir "$WORK/cargo-home"
export CARGO_HOME="$WORK/cargo-home" CARGO_TARGET_DIR="$WORK/target"
cd "$WORK/clone"

start=$SECONDS
"$CARGO" build --locked -p chartreg-bin
log "cargo build -p chartreg-bin: $((SECONDS - start)) s, from an empty CARGO_HOME"

start=$SECONDS
python3 scripts/licences.py "$WORK/licences" --workspace . --package chartreg-build
log "scripts/licences.py: $((SECONDS - start)) s"
