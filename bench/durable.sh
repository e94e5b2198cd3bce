#!/usr/bin/env bash
# What durable writes cost: `chartreg-build pack` of the scaling study's large content sets
# (bench/gen_scale.py: an add-on set of G GiB of images and charts, and 10,000 chart versions),
# every layout given as `--layout`, timed three ways side by side on this machine:
#   sync     the tool as it is: a new output folder beside the old one, made durable (one
#            syncfs of its file system, then a fsync of its parent once swapped in with
#            renameat2(RENAME_EXCHANGE)), run under strace tracing those calls only
#            (--seccomp-bpf: no other system call stops);
#   no-sync  the same, with strace making syncfs, fsync and fdatasync return 0 without running
#            (-e inject=...:retval=0), so the difference is what making it durable costs;
#   before   the tool before durable writes (DURABLE_BEFORE=PATH to its chartreg-build; left out
#            when not given), which renamed each repository into place and fsync'd nothing.
# Each is timed for a first pack into an empty folder (every blob written) and for a pack after
# one chart version more (the rest linked from the old folder, or left in place by `before`),
# median of DURABLE_RUNS (3) runs, the page cache dropped before none of them (the inputs are
# read warm, as a build machine reads content it just fetched).
#
#   bench/durable.sh                          # images:2 and versions:10000
#   DURABLE_SETS="images:4" bench/durable.sh
#   DURABLE_BEFORE=/work/h-old/target/release/chartreg-build bench/durable.sh
#
# Writes bench/results/durable.jsonl and prints a Markdown table (BENCHMARKS.md, "Durable
# writes", holds the one committed).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=target/durable
RESULTS=bench/results/durable.jsonl
SETS=${DURABLE_SETS:-"images:2 versions:10000"}
RUNS=${DURABLE_RUNS:-3}
TOOL=${DURABLE_TOOL:-target/release/chartreg-build}
BEFORE=${DURABLE_BEFORE:-}

log() { printf '[durable %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
command -v strace >/dev/null || scripts/install-tools.sh
[[ -x $TOOL ]] || cargo build --quiet --release -p chartreg-build
TOOL=$(realpath "$TOOL")
mkdir -p "$WORK" bench/results
: >"$RESULTS"

# seconds CMD...: the command's wall time in seconds (it must succeed).
seconds() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    python3 -c "print(f'{$end - $start:.3f}')"
}

median() { python3 -c 'import statistics,sys; print(f"{statistics.median(map(float, sys.argv[1:])):.3f}")' "$@"; }

for set in $SETS; do
    kind=${set%%:*}
    size=${set#*:}
    gen=$WORK/gen-$kind-$size
    log "generating $set into $gen"
    case $kind in
        images) python3 bench/gen_scale.py "$gen" --images-gib "$size" >/dev/null ;;
        versions) python3 bench/gen_scale.py "$gen" --versions "$size" >/dev/null ;;
        *) die "unknown set $set" ;;
    esac
    # Every repository of the set as a layout input.
    layouts=()
    while IFS= read -r marker; do
        dir=$(dirname "$marker")
        layouts+=(--layout "$ROOT/$dir=${dir#"$gen"/}")
    done < <(find "$gen" -name oci-layout | sort)
    files=$(find "$gen" -type f | wc -l)
    bytes=$(du -sb "$gen" | cut -f1)
    syncs=syncfs,fsync,fdatasync
    for who in sync no-sync before; do
        case $who in
            sync) run=(strace -f --seccomp-bpf -o /dev/null -e trace=$syncs "$TOOL") ;;
            no-sync) run=(strace -f --seccomp-bpf -o /dev/null -e trace=$syncs -e inject=$syncs:retval=0 "$TOOL") ;;
            before) [[ -n $BEFORE ]] || continue; run=("$BEFORE") ;;
        esac
        first=() again=()
        for _ in $(seq "$RUNS"); do
            out=$WORK/out
            rm -rf "$out" "$WORK"/.out.*
            first+=("$(seconds "${run[@]}" pack --out "$out" "${layouts[@]}")")
            # One version more of one chart (versions: the app's layout gains a tag).
            python3 bench/gen_scale.py "$gen" --bump-chart >/dev/null 2>&1 || true
            again+=("$(seconds "${run[@]}" pack --out "$out" "${layouts[@]}")")
        done
        f=$(median "${first[@]}")
        a=$(median "${again[@]}")
        log "$set $who: first pack ${f}s, after a change ${a}s"
        printf '{"set":"%s","who":"%s","files":%s,"bytes":%s,"first_s":%s,"again_s":%s,"runs":%s}\n' \
            "$set" "$who" "$files" "$bytes" "$f" "$a" "$RUNS" >>"$RESULTS"
    done
    rm -rf "$gen" "$WORK/out"
done

python3 - "$RESULTS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| set | files | GiB | who | first pack (s) | pack after a change (s) |")
print("|---|---:|---:|---|---:|---:|")
for r in rows:
    print(f"| {r['set']} | {r['files']:,} | {r['bytes'] / 2**30:.2f} | {r['who']} | {r['first_s']:.2f} | {r['again_s']:.2f} |")
EOF
