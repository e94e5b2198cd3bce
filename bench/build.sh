#!/usr/bin/env bash
# The build path a team waits for, against the one it replaces, on this machine in one run:
# writes bench/results/build.txt and the "Building" section figures (paste them into
# BENCHMARKS.md).
#
#   bench/build.sh            # after `make dist` (the release archive under target/dist)
#
# New path (the release archive, unpacked outside the tree, network off, empty CARGO_HOME,
# empty cache): `chartreg-build build` cold; one chart added and `build` again (only the crate
# that embeds content recompiles); `chartreg-build image` on it.
# Old path (OLD_REV, default 4b3d14c: the last commit before the kit, in a git worktree, cold
# target folder): the four compiles of a fresh clone (see below), then one chart added to its
# charts/ and `make build` + `make image` again. OLD=0 skips it (about 10 minutes here).
#
# Times are wall-clock seconds from `date +%s.%N`, one run each: the cold runs are minutes long,
# so one run is enough to compare them; the rebuilds are repeated REPS times (default 3) and the
# median taken.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OLD=${OLD:-1}
OLD_REV=${OLD_REV:-4b3d14c}
REPS=${REPS:-3}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
ARCHIVE=$ROOT/target/dist/chartreg-build-$VERSION-$(uname -m)-linux.tar.xz
[[ -f "$ARCHIVE" ]] || { echo "bench/build.sh: $ARCHIVE is missing: make dist" >&2; exit 1; }
WORK=$(mktemp -d /tmp/chartreg-bench-build.XXXXXX)
trap 'git -C "$ROOT" worktree remove --force "$WORK/old" 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p bench/results
OUT=bench/results/build.txt
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
log() { printf '[bench-build] %s\n' "$*" >&2; }
# A step failed: its log's end, then stop (the work folder is removed on exit).
fail() { log "failed; the end of $1:"; tail -30 "$1" >&2; exit 1; }
SYSROOT=$(rustc --print sysroot)

# --- new path ---------------------------------------------------------------------------------
tar xzf "$ARCHIVE" -C "$WORK"
TOOL=$WORK/chartreg-build-$VERSION-$(uname -m)-linux/bin/chartreg-build
mkdir -p "$WORK/home" "$WORK/cargo-home"
offline() {
    unshare -n env -i PATH=/usr/bin:/bin HOME="$WORK/home" CARGO_HOME="$WORK/cargo-home" \
        CARGO="$SYSROOT/bin/cargo" RUSTC="$SYSROOT/bin/rustc" SOURCE_DATE_EPOCH=0 "$@"
}
offline "$TOOL" init "$WORK/team" >/dev/null
cp charts/hello-*.tgz "$WORK/team/charts/"
log "new: cold build (empty cache, no network)"
t=$(now)
offline "$TOOL" build --config "$WORK/team/content.yaml" --cache "$WORK/cache" >/dev/null 2>"$WORK/cold.log" || fail "$WORK/cold.log"
NEW_COLD=$(since "$t")
rebuilds=() images=()
for i in $(seq "$REPS"); do
    # One chart more each time (a new version of a chart folder), then build and image.
    mkdir -p "$WORK/team/charts/extra-$i/templates"
    printf 'apiVersion: v2\nname: extra\nversion: 1.0.%s\n' "$i" >"$WORK/team/charts/extra-$i/Chart.yaml"
    t=$(now)
    offline "$TOOL" build --config "$WORK/team/content.yaml" --cache "$WORK/cache" >/dev/null 2>"$WORK/re.log" || fail "$WORK/re.log"
    rebuilds+=("$(since "$t")")
    grep -c '^ *Compiling' "$WORK/re.log" | grep -qx 1 || { log "a rebuild compiled more than the content crate"; cat "$WORK/re.log" >&2; exit 1; }
    t=$(now)
    offline "$TOOL" image --binary "$WORK/team/chartreg" --out "$WORK/image" >/dev/null
    images+=("$(since "$t")")
done
NEW_REBUILD=$(printf '%s\n' "${rebuilds[@]}" | median)
NEW_IMAGE=$(printf '%s\n' "${images[@]}" | median)
log "new: cold ${NEW_COLD}s, rebuild ${NEW_REBUILD}s, image ${NEW_IMAGE}s"

# --- old path ---------------------------------------------------------------------------------
# What a team compiled on a fresh clone before the kit: `make build` (the build tool without
# fetch, then the server, for `make run`), the build tool again with fetch (`make fetch`'s
# compile, without fetching), and `make image` (the static server, then buildah). A rebuild
# after one chart more: `make build` (for `make run`) and `make image`.
OLD_COLD=- OLD_PARTS=- OLD_BUILD=- OLD_IMAGE=- OLD_REBUILD=-
if [[ "$OLD" == 1 ]]; then
    git worktree add --quiet --detach "$WORK/old" "$OLD_REV"
    # That Makefile builds into the worktree's target/ (it knew no other folder): cold.
    oldmake() { env -u CARGO_TARGET_DIR make -C "$WORK/old" "$@" >/dev/null 2>"$WORK/old.log" || fail "$WORK/old.log"; }
    log "old ($OLD_REV): cold make build, the fetch tool, make image (empty target folder)"
    t=$(now); oldmake build; c1=$(since "$t")
    t=$(now)
    (cd "$WORK/old" && env -u CARGO_TARGET_DIR cargo build --quiet --release -p chartreg-build) 2>"$WORK/old.log" || fail "$WORK/old.log"
    c2=$(since "$t")
    t=$(now); oldmake image; c3=$(since "$t")
    OLD_COLD=$(awk -v a="$c1" -v b="$c2" -v c="$c3" 'BEGIN { printf "%.1f", a + b + c }')
    OLD_PARTS="make build ${c1} s + fetch tool ${c2} s + make image ${c3} s"
    builds=() images=() sums=()
    for i in $(seq "$REPS"); do
        mkdir -p "$WORK/old/charts/extra-$i/templates"
        printf 'apiVersion: v2\nname: extra\nversion: 1.0.%s\n' "$i" >"$WORK/old/charts/extra-$i/Chart.yaml"
        t=$(now); oldmake build; b=$(since "$t")
        t=$(now); oldmake image; m=$(since "$t")
        builds+=("$b") images+=("$m")
        sums+=("$(awk -v a="$b" -v c="$m" 'BEGIN { printf "%.1f", a + c }')")
    done
    OLD_BUILD=$(printf '%s\n' "${builds[@]}" | median)
    OLD_IMAGE=$(printf '%s\n' "${images[@]}" | median)
    OLD_REBUILD=$(printf '%s\n' "${sums[@]}" | median)
    log "old: cold ${OLD_COLD}s ($OLD_PARTS), rebuild ${OLD_BUILD}s, image ${OLD_IMAGE}s"
fi

{
    echo "# bench/build.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(rustc --version)"
    echo "path  cold_build_s  one_chart_rebuild_s  image_s  rebuild_plus_image_s"
    echo "new   $NEW_COLD  $NEW_REBUILD  $NEW_IMAGE  $(awk -v a="$NEW_REBUILD" -v b="$NEW_IMAGE" 'BEGIN { printf "%.1f", a + b }')"
    echo "old   $OLD_COLD  $OLD_BUILD  $OLD_IMAGE  $OLD_REBUILD"
    echo "# old cold: $OLD_PARTS"
} | tee "$OUT"
