#!/usr/bin/env bash
# Scaling study: chartreg built with growing content, through the build-time switch
# CHARTREG_ASSETS. For each content set: release build time and peak build memory (GNU time:
# cargo and the compiler, linker and build script it waits for), binary size, exec-to-first-200
# and idle RSS (bench/scale_probe.py, median of 5 starts), and manifest-by-tag req/s (wrk, server
# pinned to CPU 0, wrk to CPU 1, median of 3 x 3 s). Sets with big blobs are built twice: large
# files linked in as objects (the default, see build.rs) and everything through rust-embed's
# include_bytes! (CHARTREG_LINK_THRESHOLD above the blob), to show what the linked path saves.
#
#   bench/scale.sh                 # every set; 2 GiB only with the linked path (rust-embed would
#                                  # need ~25 GB of compiler memory)
#   SCALE_SETS="versions:10 blob:64" bench/scale.sh     # some sets only
#
# Writes bench/results/scale.jsonl and the "Scaling study" section at the end of BENCHMARKS.md.
# Needs ~8 GB of free disk for the 2 GiB set; content and builds live under target/scale.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=target/scale
TARGET=$WORK/target
BIN=$TARGET/release/chartreg
RESULTS=bench/results/scale.jsonl
SETS=${SCALE_SETS:-"samples versions:10 versions:1000 versions:10000 blob:64 blob:256 blob:1024 blob:2048"}
# rust-embed for sets up to this many MiB of blob (it takes ~12x the content in compiler memory).
BEFORE_MAX_MIB=${SCALE_BEFORE_MAX_MIB:-1024}

log() { printf '[scale %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
for tool in wrk taskset /usr/bin/time python3; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-bench-tools.sh installs wrk)"
done

mkdir -p "$WORK" bench/results
: >"$RESULTS"
log "building dependencies once, with no content (not timed)"
mkdir -p "$WORK/empty"
CHARTREG_ASSETS="$ROOT/$WORK/empty" cargo build --quiet --release --target-dir "$TARGET" --bin chartreg

# measure LABEL SET_KIND SET_SIZE ASSETS MANIFEST_PATH EMBEDDING [ENV...]
measure() {
    local label=$1 kind=$2 size=$3 assets=$4 path=$5 embedding=$6
    shift 6
    log "$label ($embedding): building"
    env CHARTREG_ASSETS="$assets" "$@" /usr/bin/time -f '%e %M' -o "$WORK/time" \
        cargo build --quiet --release --target-dir "$TARGET" --bin chartreg ||
        die "$label: build failed"
    read -r build_s peak_kib <"$WORK/time"
    local bytes
    bytes=$(stat -c %s "$BIN")
    log "$label ($embedding): built in ${build_s}s, peak ${peak_kib} KiB, binary $bytes bytes"
    local probe
    probe=$(python3 bench/scale_probe.py "$BIN" "$path")
    local port rps=()
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    taskset -c 0 "$BIN" serve --listen "127.0.0.1:$port" --shutdown-delay 0s 2>/dev/null &
    local pid=$!
    for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port$path" && break; sleep 0.05; done
    for _ in 1 2 3; do
        rps+=("$(taskset -c 1 wrk -t1 -c32 -d3s "http://127.0.0.1:$port$path" |
            sed -n 's/^Requests\/sec: *//p')")
    done
    kill "$pid"
    wait "$pid" || true
    python3 - "$label" "$kind" "$size" "$embedding" "$build_s" "$peak_kib" "$bytes" "$probe" \
        "${rps[@]}" >>"$RESULTS" <<'PY'
import json, statistics, sys
label, kind, size, embedding, build_s, peak, size_bytes, probe, *rps = sys.argv[1:]
print(json.dumps(dict(json.loads(probe), label=label, kind=kind, size=int(size),
    embedding=embedding, build_s=float(build_s), peak_build_kib=int(peak),
    binary_bytes=int(size_bytes), rps=statistics.median(float(r) for r in rps),
    rps_runs=[float(r) for r in rps])))
PY
    tail -n1 "$RESULTS" >&2
}

for set in $SETS; do
    kind=${set%%:*}
    n=${set#*:}
    if [[ $kind == samples ]]; then
        measure "sample charts (assets/)" samples 0 "$ROOT/assets" \
            /v2/charts/hello/manifests/0.1.0 rust-embed
        continue
    fi
    content=$WORK/content-$kind-$n
    log "$set: generating content"
    if [[ $kind == versions ]]; then
        python3 bench/gen_scale.py "$content" --versions "$n" >"$WORK/gen.json"
        label="$n versions"
    else
        python3 bench/gen_scale.py "$content" --blob-mib "$n" >"$WORK/gen.json"
        label="$n MiB blob"
    fi
    path=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["path"])' "$WORK/gen.json")
    if [[ $kind == blob ]]; then
        measure "$label" "$kind" "$n" "$ROOT/$content" "$path" linked
        if ((n <= BEFORE_MAX_MIB)); then
            measure "$label" "$kind" "$n" "$ROOT/$content" "$path" rust-embed \
                CHARTREG_LINK_THRESHOLD=$((1 << 40))
        fi
    else
        measure "$label" "$kind" "$n" "$ROOT/$content" "$path" default
    fi
    rm -rf "$content"
done
# Leave the big artefacts behind no longer than needed.
rm -f "$BIN"
python3 bench/scale_report.py "$RESULTS" BENCHMARKS.md
log "done: $RESULTS and the scaling section of BENCHMARKS.md"
