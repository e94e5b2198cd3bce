#!/usr/bin/env bash
# Prints the folder cargo builds into, as `cargo metadata` reports it (`target_directory`, an
# absolute path): `target/` at the workspace root, unless CARGO_TARGET_DIR (relative to the
# current folder, or absolute) or cargo's configuration (`build.target-dir`,
# CARGO_BUILD_TARGET_DIR) says otherwise. The Makefile, scripts/build-image.sh and
# bench/lookup-flatness.sh find the binaries under it: `release/chartreg`, and
# `<target triple>/release/chartreg` for a `--target` build.
#
#   scripts/target-dir.sh        # run from the repository (CARGO: the cargo to ask)
set -euo pipefail
CARGO=${CARGO:-cargo}
metadata=$("$CARGO" metadata --format-version 1 --no-deps) ||
    { echo "target-dir.sh: \`$CARGO metadata\` failed" >&2; exit 1; }
# JSON escapes `"` and `\` with a `\`: a path holding either is refused rather than misread.
dir=$(sed -n 's/.*"target_directory":"\([^"\\]*\)".*/\1/p' <<<"$metadata")
if [[ -z "$dir" ]]; then
    echo "target-dir.sh: cannot read target_directory from \`$CARGO metadata\` (a path holding \`\"\` or \`\\\` is not supported)" >&2
    exit 1
fi
printf '%s\n' "$dir"
