#!/usr/bin/env bash
# The server kit: what `chartreg-build build` compiles the server from, with no network.
#
#   scripts/make-kit.sh OUT [ID]
#
# OUT becomes a Cargo workspace holding only the server's crates, as this tree has them:
#   Cargo.toml     the root package `chartreg-bin` (the binary that embeds content: build.rs, build/,
#                  src/main.rs) and the workspace of crates/server, crates/core, crates/embed, crates/trust;
#                  every [dev-dependencies] table left out (tests are not built from a kit);
#   Cargo.lock     this tree's lock, without the packages the kit does not use: every version
#                  pinned as the project pins it;
#   vendor/        the source of every dependency a Linux target compiles (`cargo vendor`,
#                  filtered by platform: the others are stubs), and .cargo/config.toml pointing
#                  cargo at it, offline;
#   KIT_ID         VERSION-<12 hex>: the version and a digest of everything above but vendor/
#                  (vendor/ follows from Cargo.lock), naming the build cache a kit may share;
#                  ID instead when given (the Makefile's `VERSION-dev`, so that a developer's
#                  edits keep one cache and cargo recompiles only what changed);
#   .digest        that digest: a kit whose sources have not changed is left as it is (the
#                  files keep their times, and cargo recompiles nothing).
#
# Vendoring reads crates from cargo's local cache when it has them and fetches the others (the
# one step that may need the network). The kit is written beside OUT and renamed into place.
set -euo pipefail
[[ $# -eq 1 || $# -eq 2 ]] || { echo "usage: $0 OUT [ID]" >&2; exit 2; }
OUT=$1
ID=${2:-}
[[ "$OUT" == /* ]] || OUT=$PWD/$OUT
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
CARGO=${CARGO:-cargo}
log() { printf '[kit] %s\n' "$*" >&2; }

STAGE=$(dirname "$OUT")/.$(basename "$OUT").new
rm -rf "$STAGE"
mkdir -p "$STAGE"
trap 'rm -rf "$STAGE"' EXIT

# The sources: what git tracks (no build output), else the folders as they are.
FILES=(build.rs build src crates/server crates/core crates/embed crates/trust)
# (A tree is taken from git only when it is a work tree's top: an unpacked source release
# inside another repository's ignored folder is a tree without git.)
if [[ "$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null)" == "$ROOT" ]]; then
    git -C "$ROOT" ls-files -z --cached --others --exclude-standard -- "${FILES[@]}" |
        while IFS= read -r -d '' file; do
            [[ -f "$file" ]] || continue
            mkdir -p "$STAGE/$(dirname "$file")"
            cp -p "$file" "$STAGE/$file"
        done
else
    for f in "${FILES[@]}"; do
        mkdir -p "$STAGE/$(dirname "$f")"
        cp -rp "$f" "$STAGE/$(dirname "$f")/"
    done
fi
cp -p Cargo.lock LICENSE "$STAGE/"

# The manifests, without what a kit does not build.
python3 - "$ROOT" "$STAGE" <<'PY'
import re, sys
root, stage = sys.argv[1], sys.argv[2]

def without_tables(text, names):
    """The TOML text without the tables whose header is one of `names` (to the next header)."""
    out, skip = [], False
    for line in text.splitlines(keepends=True):
        header = re.match(r"\s*\[([^\]]+)\]\s*(#.*)?$", line)
        if header:
            skip = header.group(1).strip() in names
        if not skip:
            out.append(line)
    return "".join(out)

text = open(f"{root}/Cargo.toml").read()
text = without_tables(text, {"dev-dependencies"})
members = '["." , "crates/server", "crates/core", "crates/embed", "crates/trust"]'.replace(" ,", ",")
text = re.sub(r"(?m)^members = \[.*\]$", f"members = {members}", text)
text = re.sub(r"(?m)^default-members = \[.*\]\n", "", text)
text = re.sub(r"(?m)^exclude = \[.*\]\n", "", text)
text = re.sub(r"(?m)^# cargo-fuzz's crate.*\n", "", text)
header = ("# The server kit (scripts/make-kit.sh): the chartreg binary's crates and their\n"
          "# dependencies' source, from which `chartreg-build build` compiles the server offline.\n")
open(f"{stage}/Cargo.toml", "w").write(header + text)
for crate in ["crates/server", "crates/core", "crates/embed", "crates/trust"]:
    path = f"{stage}/{crate}/Cargo.toml"
    kept = without_tables(open(path).read(), {"dev-dependencies"})
    open(path, "w").write(kept)
PY

# The lock without what the kit does not use (versions stay as pinned), then the sources.
( cd "$STAGE" && "$CARGO" metadata --format-version 1 --offline >/dev/null 2>&1 ||
    "$CARGO" metadata --format-version 1 >/dev/null )
mkdir -p "$STAGE/.cargo"
cat >"$STAGE/.cargo/config.toml" <<'TOML'
# Every dependency from vendor/, never from the network.
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "vendor"

[net]
offline = true
TOML

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
DIGEST=$(cd "$STAGE" && find . -path ./vendor -prune -o -type f ! -name KIT_ID ! -name .digest -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
printf '%s\n' "${ID:-$VERSION-$DIGEST}" >"$STAGE/KIT_ID"
printf '%s\n' "$DIGEST" >"$STAGE/.digest"
if cmp -s "$STAGE/KIT_ID" "$OUT/KIT_ID" 2>/dev/null && cmp -s "$STAGE/.digest" "$OUT/.digest" &&
    [[ -d "$OUT/vendor" ]]; then
    log "unchanged: $OUT (kit $(cat "$OUT/KIT_ID"))"
    exit 0
fi
# Only what a Linux build compiles: cargo-vendor-filterer (coreos, a pinned release, installed
# into .tools/ by scripts/cargo-vendor-filterer.sh) vendors as `cargo vendor` does, then
# replaces each crate no Linux target uses (windows-sys, winapi, their import libraries: about
# 100 MB) with a stub holding its manifest only, which Cargo.lock still resolves and nothing
# compiles; and leaves out every crate's tests/ and benches/ (and tracing's 9 MB of
# test-macros/), which a dependency's build never compiles (examples/ stay: winnow's docs
# include_str! them). The kit's .cargo/config.toml points cargo at vendor/, so it stands aside
# meanwhile.
log "vendoring the dependencies a Linux build compiles"
FILTERER=$(scripts/cargo-vendor-filterer.sh)
mv "$STAGE/.cargo" "$STAGE/.cargo.aside"
# (It takes no --locked: the lock is compared after, and a vendoring that changed it fails.)
cp "$STAGE/Cargo.lock" "$STAGE/.Cargo.lock.pinned"
vendor() {
    ( cd "$STAGE" && "$FILTERER" vendor-filterer "$@" \
        --platform=x86_64-unknown-linux-gnu --platform=aarch64-unknown-linux-gnu \
        --exclude-crate-path='*#tests' --exclude-crate-path='*#benches' \
        --exclude-crate-path='tracing#test-macros' vendor )
}
vendor --offline >/dev/null 2>&1 || { rm -rf "$STAGE/vendor"; vendor >/dev/null; }
cmp -s "$STAGE/Cargo.lock" "$STAGE/.Cargo.lock.pinned" ||
    { log "error: vendoring changed the kit's Cargo.lock"; exit 1; }
rm "$STAGE/.Cargo.lock.pinned"
mv "$STAGE/.cargo.aside" "$STAGE/.cargo"

rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
mv "$STAGE" "$OUT"
trap - EXIT
log "wrote $OUT (kit $(cat "$OUT/KIT_ID"), $(du -sh "$OUT" | cut -f1))"
