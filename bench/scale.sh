#!/usr/bin/env bash
# Scaling study: chartreg built with growing content, through the build-time switch
# CHARTREG_ASSETS. For each content set: release build time and peak build memory (GNU time:
# cargo and the compiler, linker and build script it waits for), binary size, exec-to-first-200
# and idle RSS (bench/scale_probe.py, median of 5 starts), and manifest-by-tag req/s (wrk, server
# pinned to CPU 0, wrk to CPU 1, median of 3 x 3 s). Sets with big blobs are built twice: large
# files linked in as objects (the default, see build.rs) and everything through rust-embed's
# include_bytes! (CHARTREG_LINK_THRESHOLD above the blob), to show what the linked path saves.
#
# Image sets (`images:G`, bench/gen_scale.py --images-gib G: ten charts and images adding up to
# G GiB, one layer of 1 GiB) are measured further: peak build memory as the build's process tree
# held it (bench/peak_memory.py: anonymous memory, summed over cargo, rustc, the build script and
# the linker, apart from file-backed pages such as the objects LLD maps), the largest file, the
# 1 GiB layer's download rate (curl on CPU 1, median of 3, its sha256 checked once), and the
# rebuild after one chart changes (bench/gen_scale.py --bump-chart: a version more in one chart).
#
#   bench/scale.sh                 # every set; 2 GiB only with the linked path (rust-embed would
#                                  # need ~25 GB of compiler memory)
#   SCALE_SETS="versions:10 blob:64" bench/scale.sh     # some sets only
#   SCALE_SETS="images:2 images:4" SCALE_CODE=before bench/scale.sh   # rows labelled `before`
#
# Writes bench/results/scale.jsonl (appending when SCALE_APPEND=1) and the "Scaling study"
# section at the end of BENCHMARKS.md. An image set of G GiB needs about 3.5 G GiB of disk
# (content, objects, binary); each set is removed before the next. Content and builds live under
# target/scale.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=target/scale
TARGET=$WORK/target
BIN=$TARGET/release/chartreg
RESULTS=bench/results/scale.jsonl
SETS=${SCALE_SETS:-"samples versions:10 versions:1000 versions:10000 blob:64 blob:256 blob:1024 blob:2048 images:2 images:4 images:8"}
# Which code the image-set rows measure (the report sets `before` rows beside `after` ones).
CODE=${SCALE_CODE:-after}
# rust-embed for sets up to this many MiB of blob (it takes ~12x the content in compiler memory).
BEFORE_MAX_MIB=${SCALE_BEFORE_MAX_MIB:-1024}

log() { printf '[scale %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
for tool in wrk taskset /usr/bin/time python3; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-bench-tools.sh installs wrk)"
done

mkdir -p "$WORK" bench/results
[[ ${SCALE_APPEND:-0} == 1 ]] || : >"$RESULTS"
log "building dependencies once, with no content (not timed)"
mkdir -p "$WORK/empty"
CHARTREG_ASSETS="$ROOT/$WORK/empty" cargo build --quiet --release --target-dir "$TARGET" --bin chartreg

# serve_pinned PATH: $BIN serving on a free port on CPU 0, waited for until PATH answers; sets
# PORT and PID.
serve_pinned() {
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    taskset -c 0 "$BIN" serve --listen "127.0.0.1:$PORT" --shutdown-delay 0s 2>/dev/null &
    PID=$!
    for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT$1" && break; sleep 0.05; done
}

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
    local rps=()
    serve_pinned "$path"
    local port=$PORT pid=$PID
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

# build_measured OUT_JSON ASSETS: builds chartreg with ASSETS, writing time and memory to OUT_JSON.
build_measured() {
    local out=$1 assets=$2
    CHARTREG_ASSETS="$assets" /usr/bin/time -f '%e %M' -o "$WORK/time" \
        python3 bench/peak_memory.py "$WORK/peak.json" \
        cargo build --quiet --release --target-dir "$TARGET" --bin chartreg || die "build failed"
    local build_s max_rss
    read -r build_s max_rss <"$WORK/time"
    python3 - "$WORK/peak.json" "$build_s" "$max_rss" >"$out" <<'PY'
import json, sys
peak = json.load(open(sys.argv[1]))
print(json.dumps(dict(peak, build_s=float(sys.argv[2]), max_rss_kib=int(sys.argv[3]))))
PY
}

# measure_images LABEL GIB ASSETS GEN_JSON
measure_images() {
    local label=$1 gib=$2 assets=$3 gen=$4
    log "$label ($CODE): building"
    build_measured "$WORK/build.json" "$assets"
    local bytes largest
    bytes=$(stat -c %s "$BIN")
    largest=$(find "$assets" -type f -printf '%s\n' | sort -n | tail -1)
    log "$label ($CODE): $(cat "$WORK/build.json"), binary $bytes bytes"
    local path layer
    path=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["path"])' "$gen")
    layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layer_path"])' "$gen")
    local probe
    probe=$(python3 bench/scale_probe.py "$BIN" "$path")
    local rates=()
    serve_pinned "$path"
    local port=$PORT pid=$PID
    local digest
    digest=$(taskset -c 1 curl -sf "http://127.0.0.1:$port$layer" | sha256sum | cut -d' ' -f1)
    [[ "sha256:$digest" == "${layer##*/}" ]] || die "$label: the 1 GiB layer came back as sha256:$digest"
    for _ in 1 2 3; do
        rates+=("$(taskset -c 1 curl -sf -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$port$layer")")
    done
    kill "$pid"
    wait "$pid" || true
    log "$label ($CODE): one chart changed, rebuilding"
    local bumped
    bumped=$(python3 bench/gen_scale.py "$assets" --bump-chart)
    build_measured "$WORK/rebuild.json" "$assets"
    local new_path
    new_path=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["path"])' "$bumped")
    python3 bench/scale_probe.py "$BIN" "$new_path" --runs 1 >/dev/null ||
        die "$label: the rebuilt binary does not serve the new chart version"
    python3 - "$label" "$gib" "$CODE" "$WORK/build.json" "$WORK/rebuild.json" "$bytes" \
        "$largest" "$gen" "$probe" "${rates[@]}" >>"$RESULTS" <<'PY'
import json, statistics, sys
label, gib, code, build, rebuild, size_bytes, largest, gen, probe, *rates = sys.argv[1:]
build, rebuild, gen = (json.load(open(p)) for p in (build, rebuild, gen))
print(json.dumps(dict(json.loads(probe), label=label, kind="images", size=int(gib), code=code,
    embedding="linked", build_s=build["build_s"], peak_build_kib=build["max_rss_kib"],
    peak_anon_kib=build["peak_anon_kib"], peak_anon_holders=build["peak_anon_holders"],
    peak_file_kib=build["peak_file_kib"], binary_bytes=int(size_bytes),
    largest_file=int(largest), content_bytes=gen["bytes"], images=gen["images"],
    layer_mb_s=statistics.median(float(r) for r in rates) / 1e6,
    layer_mb_s_runs=[float(r) / 1e6 for r in rates],
    rebuild_s=rebuild["build_s"], rebuild_peak_anon_kib=rebuild["peak_anon_kib"])))
PY
    tail -n1 "$RESULTS" >&2
    # Leave the big artefacts behind no longer than needed.
    rm -f "$BIN" "$TARGET"/release/deps/chartreg-*
}

log "no content: building (timed)"
touch "$WORK/empty"
build_measured "$WORK/empty.json" "$ROOT/$WORK/empty"
python3 - "$CODE" "$WORK/empty.json" >>"$RESULTS" <<'PY'
import json, sys
code, build = sys.argv[1], json.load(open(sys.argv[2]))
print(json.dumps(dict(label="no content", kind="empty", size=0, code=code, embedding="-",
    build_s=build["build_s"], peak_build_kib=build["max_rss_kib"],
    peak_anon_kib=build["peak_anon_kib"], peak_anon_holders=build["peak_anon_holders"],
    peak_file_kib=build["peak_file_kib"])))
PY

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
    if [[ $kind == images ]]; then
        python3 bench/gen_scale.py "$content" --images-gib "$n" >"$WORK/gen.json"
        measure_images "$n GiB image set" "$n" "$ROOT/$content" "$WORK/gen.json"
        rm -rf "$content"
        continue
    elif [[ $kind == versions ]]; then
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
