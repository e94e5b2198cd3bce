#!/usr/bin/env bash
# `make bench`: chartreg against nginx (static files) and CNCF distribution (filesystem storage)
# on the same content, in the same run; writes bench/BENCHMARKS.md and bench/results/.
#
#   bench/run.sh
#
# Steps:
#   1. scripts/install-bench-tools.sh (wrk, nginx, gnuplot, oha, docker-registry, ...).
#   2. Content (cached in target/bench-content while the generators are unchanged):
#      bench/gen_content.py  -> OCI image layouts (1,000-tag repository, 1,000 one-tag
#                               repositories, a 32 MiB blob)
#      bench/nginx_site.py   -> the same as a static /v2/ tree for nginx
#      bench/dist_storage.py -> the same as distribution's filesystem storage
#   3. chartreg built with the layouts embedded, in its own target dir (target/bench), and the
#      control examples/bare_actix (the least actix-web can do: see its doc).
#   4. The servers on 127.0.0.1 (HTTP and HTTPS each; the control HTTP only), waited for, then
#      checked once per case
#      with curl (bench/helper.py check): a target that answers a case wrongly is not
#      benchmarked on it.
#   5. For each case, BENCH_REPS rounds; in each round every target gets BENCH_DURATION of load,
#      in rotation (chartreg, nginx, distribution, actix; then nginx, distribution, actix,
#      chartreg; ...).
#   6. Report: medians and min-max per target and case, ratios, BENCHMARKS.md, a PNG chart and
#      the raw numbers under bench/results/.
#
# Settings (environment):
#   BENCH_DURATION=4s         load per run          BENCH_REPS=3        repetitions
#   BENCH_CONNECTIONS=32      connections           BENCH_BIG_CONNECTIONS=4  for the 32 MiB blob
#   BENCH_PIN=1               servers on CPU 0, load generator on CPU 1 (0: no pinning)
#   BENCH_CASES="base ..."    only these cases      BENCH_REPORT=BENCHMARKS.md
#   BENCH_RESULTS=bench/results  where the PNG and the raw numbers go
#   BENCH_REDO=12             how many runs starved of CPU by other processes (neither the
#                             server nor wrk kept its CPU 75 % busy) may be measured again
#
# Every server is stopped by its PID when the script exits, however it exits.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH:/usr/sbin:$ROOT/.tools/oha/bin"

DURATION="${BENCH_DURATION:-4s}"
REPS="${BENCH_REPS:-3}"
CONNS="${BENCH_CONNECTIONS:-32}"
BIG_CONNS="${BENCH_BIG_CONNECTIONS:-4}"
PIN="${BENCH_PIN:-1}"
REPORT="${BENCH_REPORT:-BENCHMARKS.md}"
RESULTS="${BENCH_RESULTS:-bench/results}"
CONTENT="target/bench-content"
BIN="target/bench/release/chartreg"
HELPER=(python3 "$ROOT/bench/helper.py")
START_TIME=$(date +%s)
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Processes: every server we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------------------------
RUN="$(mktemp -d /tmp/chartreg-bench.XXXXXX)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        # chartreg keeps serving for --shutdown-delay (set to 0 below); give each 10 s.
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if declare -F remove_half_group >/dev/null; then remove_half_group; fi
    rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ "$PIN" == 1 && "$(nproc)" -ge 2 ]]; then
    SERVER_CPU=(taskset -c 0)
    LOAD_CPU=(taskset -c 1)
    NGINX_WORKERS=1
    CPU_SHARING="pinned with taskset: the three servers on CPU 0, the load generator (one wrk
  thread) on CPU 1; only one server is under load at a time. Each server sizes itself to the one
  CPU it may use: chartreg runs 1 worker (its default, the CPUs it may use), distribution
  GOMAXPROCS=1 (Go's default, likewise), nginx 1 worker process (\`worker_processes 1\`:
  nginx 1.22's \`auto\` would count both CPUs of the machine)."
else
    SERVER_CPU=()
    LOAD_CPU=()
    NGINX_WORKERS=$(nproc) # what `worker_processes auto` gives
    CPU_SHARING="not pinned: servers and the load generator share all $(nproc) CPUs
  (servers use their defaults: one worker per CPU)."
fi

# ---------------------------------------------------------------------------------------------
# 1. Tools
# ---------------------------------------------------------------------------------------------
log "tools"
scripts/install-bench-tools.sh >"$RUN/tools.txt" || die "scripts/install-bench-tools.sh failed"

# ---------------------------------------------------------------------------------------------
# 2. Content, regenerated only when a generator changed
# ---------------------------------------------------------------------------------------------
# Each output carries a stamp of the scripts it comes from; the layouts are left untouched
# (and chartreg is not rebuilt) unless gen_content.py changed.
stamp_of() { cat "$@" | sha256sum | cut -c1-16; }
fresh() { [[ -e "$1" && "$(cat "$1.stamp" 2>/dev/null)" == "$2" ]]; }
mkdir -p "$CONTENT"
s_layouts=$(stamp_of bench/gen_content.py)
s_nginx=$(stamp_of bench/gen_content.py bench/nginx_site.py)
s_dist=$(stamp_of bench/gen_content.py bench/dist_storage.py)
if ! fresh "$CONTENT/layouts" "$s_layouts" || [[ ! -s "$CONTENT/content.json" ]]; then
    log "generating content in $CONTENT/layouts"
    rm -f "$CONTENT/layouts.stamp" "$CONTENT/nginx.stamp" "$CONTENT/distribution.stamp"
    python3 bench/gen_content.py "$CONTENT/layouts" --summary "$CONTENT/content.json"
    echo "$s_layouts" >"$CONTENT/layouts.stamp"
fi
if ! fresh "$CONTENT/nginx" "$s_nginx"; then
    python3 bench/nginx_site.py "$CONTENT/layouts" "$CONTENT/nginx" >&2
    echo "$s_nginx" >"$CONTENT/nginx.stamp"
fi
if ! fresh "$CONTENT/distribution" "$s_dist"; then
    python3 bench/dist_storage.py "$CONTENT/layouts" "$CONTENT/distribution/data" >&2
    echo "$s_dist" >"$CONTENT/distribution.stamp"
fi
SUMMARY="$CONTENT/content.json"
content() { "${HELPER[@]}" content "$SUMMARY" "$1"; }
APP=$(content app_manifest.name)
APP_TAG=$(content app_manifest.tag)
APP_MANIFEST=$(content app_manifest.digest)
APP_LAYER=$(content app_layer.digest)
BIG=$(content big_layer.name)
BIG_LAYER=$(content big_layer.digest)

# ---------------------------------------------------------------------------------------------
# 3. chartreg with the content embedded
# ---------------------------------------------------------------------------------------------
log "building chartreg with the benchmark content (target/bench; minutes the first time)"
CHARTREG_ASSETS="$ROOT/$CONTENT/layouts" cargo build --quiet --release --target-dir target/bench \
    --bin chartreg || die "cargo build failed"
"$BIN" ls --json >"$RUN/ls.json"
python3 - "$RUN/ls.json" <<'PY' || die "the chartreg build does not hold the benchmark content"
import json, sys
text = open(sys.argv[1]).read()
try:
    doc = json.loads(text)
    items = doc if isinstance(doc, list) else doc.get("repositories") or doc.get("tags") or []
    n = len(items)
except ValueError:
    n = len([l for l in text.splitlines() if l.strip()])
assert n >= 2001, f"chartreg ls lists {n} entries"
PY
CHARTREG_ASSETS="$ROOT/$CONTENT/layouts" cargo build --quiet --release --target-dir target/bench \
    --example bare_actix || die "cargo build of the bare actix-web control failed"

# ---------------------------------------------------------------------------------------------
# 4. Servers
# ---------------------------------------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$RUN/key.pem" -out "$RUN/cert.pem" 2>/dev/null || die "openssl could not make a certificate"

mapfile -t P < <("${HELPER[@]}" ports 5)
NGINX_PORT=${P[0]} NGINX_TLS_PORT=${P[1]} DIST_PORT=${P[2]} DIST_TLS_PORT=${P[3]} ACTIX_PORT=${P[4]}

# chartreg: as it ships, access log included (one line per request, written off the request
# path); BENCH_CHARTREG_ACCESS_LOG=off measures it without (nginx and distribution run without
# theirs).
# --shutdown-delay 0: stop at once at the end instead of draining for 5 s.
CHARTREG_FLAGS=(--shutdown-delay 0s)
if [[ "${BENCH_CHARTREG_ACCESS_LOG:-on}" == off ]]; then
    CHARTREG_RUST_LOG="info,chartreg::access=off"
else
    CHARTREG_RUST_LOG="info"
fi
export CHARTREG_RUST_LOG
declare -A SPID=() SPID_TLS=() # target -> server PID (HTTP, HTTPS), for CPU accounting
start_chartreg() { # LOGFILE [FLAGS...]
    local logfile="$1"; shift
    RUST_LOG="$CHARTREG_RUST_LOG" "${SERVER_CPU[@]}" "$BIN" serve --listen 127.0.0.1:0 \
        "${CHARTREG_FLAGS[@]}" "$@" 2>"$logfile" &
    PIDS+=($!)
}
start_chartreg "$RUN/chartreg.log"
SPID[chartreg]=$!
start_chartreg "$RUN/chartreg-tls.log" --tls-cert-file "$RUN/cert.pem" --tls-private-key-file "$RUN/key.pem"
SPID_TLS[chartreg]=$!

python3 bench/nginx_site.py --conf "$RUN/nginx" "$CONTENT/nginx" "$NGINX_PORT" \
    "$NGINX_TLS_PORT" "$RUN/cert.pem" "$RUN/key.pem" --workers "$NGINX_WORKERS"
"${SERVER_CPU[@]}" nginx -p "$RUN/nginx" -c "$RUN/nginx/nginx.conf" -e stderr 2>"$RUN/nginx.log" &
PIDS+=($!)
SPID[nginx]=$! SPID_TLS[nginx]=$!

"${SERVER_CPU[@]}" scripts/run-distribution.sh "$CONTENT/distribution" "127.0.0.1:$DIST_PORT" \
    >"$RUN/distribution.log" 2>&1 &
PIDS+=($!)
SPID[distribution]=$!
# The same storage over HTTPS: run-distribution.sh's config with a TLS listener added (read
# once that registry answers, so the file is complete).
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$DIST_PORT/v2/" 2>/dev/null && break; sleep 0.1; done
sed -e "s/^  addr: .*/  addr: 127.0.0.1:$DIST_TLS_PORT/" \
    -e "/^http:/a\\  tls:\\n    certificate: $RUN/cert.pem\\n    key: $RUN/key.pem" \
    "$CONTENT/distribution/config.yml" >"$RUN/distribution-tls.yml"
env $(env | sed -n 's/^\(REGISTRY_[^=]*\)=.*/-u \1/p') \
    "${SERVER_CPU[@]}" docker-registry serve "$RUN/distribution-tls.yml" >"$RUN/distribution-tls.log" 2>&1 &
PIDS+=($!)
SPID_TLS[distribution]=$!

# The control: bare actix-web answering from the nginx site's files (HTTP only).
"${SERVER_CPU[@]}" target/bench/release/examples/bare_actix "$CONTENT/nginx" "127.0.0.1:$ACTIX_PORT" \
    2>"$RUN/actix.log" &
PIDS+=($!)
SPID[actix]=$!

listen_addr() { # LOGFILE SCHEME -> the address chartreg logged
    local addr=""
    for _ in $(seq 100); do
        addr=$(sed -n "s|.* on $2://\([0-9.:]*\).*|\1|p" "$1" | head -1)
        [[ -n "$addr" ]] && { echo "$addr"; return 0; }
        sleep 0.1
    done
    cat "$1" >&2
    return 1
}
CHARTREG_ADDR=$(listen_addr "$RUN/chartreg.log" http) || die "chartreg did not start"
CHARTREG_TLS_ADDR=$(listen_addr "$RUN/chartreg-tls.log" https) || die "chartreg (TLS) did not start"
# chartreg's page, for nginx to serve as a static file (case `page`; the other two have none).
curl -sf "http://$CHARTREG_ADDR/" -o "$CONTENT/nginx/html/index.html" || die "chartreg did not answer its page"

declare -A URL=(
    [chartreg]="http://$CHARTREG_ADDR"
    [nginx]="http://127.0.0.1:$NGINX_PORT"
    [distribution]="http://127.0.0.1:$DIST_PORT"
    [actix]="http://127.0.0.1:$ACTIX_PORT"
)
declare -A TLS_URL=(
    [chartreg]="https://$CHARTREG_TLS_ADDR"
    [nginx]="https://127.0.0.1:$NGINX_TLS_PORT"
    [distribution]="https://127.0.0.1:$DIST_TLS_PORT"
)
TARGETS=(chartreg nginx distribution actix)
for t in "${TARGETS[@]}"; do
    for u in "${URL[$t]}" ${TLS_URL[$t]:+"${TLS_URL[$t]}"}; do
        ok=0
        for _ in $(seq 100); do
            curl -fsSk -o /dev/null "$u/v2/" 2>/dev/null && { ok=1; break; }
            sleep 0.1
        done
        ((ok)) || { tail -20 "$RUN"/*.log >&2; die "$t did not answer on $u/v2/"; }
    done
done
log "ready: ${URL[*]} ${TLS_URL[*]}"
NGINX_WORKER_COUNT=$(pgrep -c -P "${SPID[nginx]}" || true)

# CPU time (clock ticks, user + system) used so far by a server: the process (all its threads)
# and its child processes (nginx's workers).
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { # PID
    local total=0 p f
    for p in "$1" $(pgrep -P "$1" || true); do
        read -r -a f <"/proc/$p/stat" || continue
        total=$((total + f[13] + f[14]))
    done
    echo "$total"
}
# CPU time of this shell's finished children (the load generator just waited for).
children_ticks() {
    local f
    read -r -a f <"/proc/$$/stat"
    echo $((f[15] + f[16]))
}

# ---------------------------------------------------------------------------------------------
# 5. Cases: NAME|TITLE|SHORT|METHOD|PATH|CONNECTIONS|TLS|EXPECTED STATUS
#    (TLS: 0 plain HTTP/1.1, wrk; 1 HTTPS HTTP/1.1, wrk; 2 HTTP/2, h2load -m1; 3 HTTP/2, h2load -m10)
# ---------------------------------------------------------------------------------------------
ALL_CASES=(
    "base|GET /v2/|/v2/|GET|/v2/|$CONNS|0|200"
    "manifest-tag|manifest by tag (GET)|manifest tag|GET|/v2/$APP/manifests/$APP_TAG|$CONNS|0|200"
    "manifest-tag-head|manifest by tag (HEAD)|manifest HEAD|HEAD|/v2/$APP/manifests/$APP_TAG|$CONNS|0|200"
    "manifest-digest|manifest by digest|manifest digest|GET|/v2/$APP/manifests/$APP_MANIFEST|$CONNS|0|200"
    "blob-small|4 KiB blob (chart layer)|blob 4 KiB|GET|/v2/$APP/blobs/$APP_LAYER|$CONNS|0|200"
    "blob-32mib|32 MiB blob|blob 32 MiB|GET|/v2/$BIG/blobs/$BIG_LAYER|$BIG_CONNS|0|200"
    "tags-list|tags list (1,000 tags)|tags list|GET|/v2/$APP/tags/list|$CONNS|0|200"
    "catalog|catalog (?n=1000 of 1,002)|catalog|GET|/v2/_catalog?n=1000|$CONNS|0|200"
    "not-found|unknown manifest (404)|404|GET|/v2/$APP/manifests/9.9.9|$CONNS|0|404"
    "page|the page (/)|page|GET|/|$CONNS|0|200"
    "h2-seq-manifest-tag|manifest by tag over HTTP/2, one connection, sequential|HTTP/2 sequential|GET|/v2/$APP/manifests/$APP_TAG|1|2|200"
    "tls-blob-32mib|32 MiB blob over HTTPS|HTTPS blob 32 MiB|GET|/v2/$BIG/blobs/$BIG_LAYER|$BIG_CONNS|1|200"
    "h2-blob-32mib|32 MiB blob over HTTPS, HTTP/2|HTTP/2 blob 32 MiB|GET|/v2/$BIG/blobs/$BIG_LAYER|$BIG_CONNS|2|200"
    "tls-blob-32mib-half|32 MiB blob over HTTPS, server on half a CPU|HTTPS blob, half CPU|GET|/v2/$BIG/blobs/$BIG_LAYER|$BIG_CONNS|1|200"
)
SMALL=(
    "base|GET /v2/|/v2/|/v2/"
    "manifest-tag|manifest by tag|manifest tag|/v2/$APP/manifests/$APP_TAG"
    "manifest-digest|manifest by digest|manifest digest|/v2/$APP/manifests/$APP_MANIFEST"
    "blob-small|4 KiB blob|blob 4 KiB|/v2/$APP/blobs/$APP_LAYER"
    "tags-list|tags list (1,000 tags)|tags list|/v2/$APP/tags/list"
    "catalog|catalog (?n=1000 of 1,002)|catalog|/v2/_catalog?n=1000"
    "page|the page (/)|page|/"
)
for c in "${SMALL[@]}"; do
    IFS='|' read -r name title short path <<<"$c"
    ALL_CASES+=(
        "tls-$name|$title over HTTPS|HTTPS $short|GET|$path|$CONNS|1|200"
        "h2-$name|$title over HTTP/2|HTTP/2 $short|GET|$path|$CONNS|2|200"
        "h2m-$name|$title over HTTP/2, 10 streams a connection|HTTP/2 x10 $short|GET|$path|$CONNS|3|200"
    )
done
CASES=()
for c in "${ALL_CASES[@]}"; do
    name="${c%%|*}"
    if [[ -z "${BENCH_CASES:-}" || " $BENCH_CASES " == *" $name "* ]]; then CASES+=("$c"); fi
done
((${#CASES[@]})) || die "BENCH_CASES matches no case"

# Cases named `*-half` hold the server to half a CPU (a CFS quota of 50 ms per 100 ms, cgroup v1
# or v2) while its load runs: over HTTPS the load generator, decrypting on its own CPU, can be
# slower than an efficient server, which then idles; held to half a CPU, every server is the
# bound, and the rates compare the servers.
HALF_GROUP=""
half_group() {
    [[ -n "$HALF_GROUP" ]] && return 0
    if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
        grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
            echo +cpu >/sys/fs/cgroup/cgroup.subtree_control || return 1
        HALF_GROUP=/sys/fs/cgroup/chartreg-bench-half
        mkdir -p "$HALF_GROUP" && echo "50000 100000" >"$HALF_GROUP/cpu.max" || return 1
        HALF_ROOT=/sys/fs/cgroup
    elif [[ -d /sys/fs/cgroup/cpu ]]; then
        HALF_GROUP=/sys/fs/cgroup/cpu/chartreg-bench-half
        mkdir -p "$HALF_GROUP" && echo 100000 >"$HALF_GROUP/cpu.cfs_period_us" &&
            echo 50000 >"$HALF_GROUP/cpu.cfs_quota_us" || return 1
        HALF_ROOT=/sys/fs/cgroup/cpu
    else
        return 1
    fi
}
server_pids() { echo "$1"; pgrep -P "$1" || true; }
hold_to_half() { # PID: the server (and its children) into the half-CPU group
    local p
    for p in $(server_pids "$1"); do echo "$p" >"$HALF_GROUP/cgroup.procs"; done
}
release_from_half() { # PID
    local p
    for p in $(server_pids "$1"); do echo "$p" >"$HALF_ROOT/cgroup.procs"; done
}
remove_half_group() {
    [[ -n "$HALF_GROUP" ]] && rmdir "$HALF_GROUP" 2>/dev/null || true
}
for c in "${CASES[@]}"; do
    if [[ "${c%%|*}" == *-half ]]; then
        half_group || die "cases *-half need a writable cgroup cpu controller (root): leave them out with BENCH_CASES"
        break
    fi
done

# ---------------------------------------------------------------------------------------------
# 6. Sanity check: each target answers each case once, correctly, before any load.
# ---------------------------------------------------------------------------------------------
declare -A SKIP=()
CHECK_NOTES=()
CHARTREG_WRONG=0
for c in "${CASES[@]}"; do
    IFS='|' read -r name title short method path conns tls expect <<<"$c"
    for t in "${TARGETS[@]}"; do
        if ((tls)) && [[ -z "${TLS_URL[$t]:-}" ]]; then
            SKIP["$name/$t"]="no HTTPS listener (the control serves HTTP only)"
            continue
        fi
        base="${URL[$t]}"; ((tls)) && base="${TLS_URL[$t]}"
        if out=$("${HELPER[@]}" check "$CONTENT/layouts" "$SUMMARY" "$name" "$method" "$base$path"); then
            status=ok
        else
            status=WRONG
            SKIP["$name/$t"]="$(echo "$out" | grep '^WRONG' | sed 's/^WRONG: //' | paste -sd';' -)"
            [[ "$t" == chartreg ]] && CHARTREG_WRONG=1
        fi
        while IFS= read -r line; do
            [[ "$line" == "note: "* ]] && CHECK_NOTES+=("$t, $title: ${line#note: }")
        done <<<"$out"
        printf '[bench] check %-18s %-13s %s\n' "$name" "$t" "$status$( [[ -n "$out" ]] && printf ' (%s)' "$(echo "$out" | paste -sd';' -)")" >&2
    done
done

# ---------------------------------------------------------------------------------------------
# 7. Load
# ---------------------------------------------------------------------------------------------
mkdir -p "$RESULTS" "$RUN/out"
RAW="$RESULTS/raw.jsonl"
: >"$RAW"
: >"$RESULTS/discarded.jsonl"
REDO_BUDGET="${BENCH_REDO:-12}"
REDONE=0
COMMANDS=()

# The wrk script: method, the Accept header, and a done() that prints the totals as JSON
# (exact counts instead of wrk's rounded text).
wrk_script() { # METHOD FILE
    cat >"$2" <<EOF
wrk.method = "$1"
wrk.headers["Accept"] = "application/vnd.oci.image.manifest.v1+json"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(99)))
end
EOF
}
wrk_script GET "$RUN/get.lua"

# A command as it can be pasted (quotes only where the shell needs them), with the Lua file
# under its own name.
show_cmd() {
    local w out=()
    for w in "$@"; do
        w="${w/#$RUN\//}"
        if [[ "$w" =~ [^A-Za-z0-9_./:=,+@%-] ]]; then out+=("'$w'"); else out+=("$w"); fi
    done
    echo "${out[*]}"
}

BENCH_START=$(date +%s)
rustc_seen=0
for c in "${CASES[@]}"; do
    IFS='|' read -r name title short method path conns tls expect <<<"$c"
    tool=wrk
    if ((tls >= 2)); then
        command -v h2load >/dev/null 2>&1 || die "h2load is missing (HTTP/2 case); run scripts/install-bench-tools.sh"
        tool=h2load
    elif [[ "$method" == HEAD ]]; then
        command -v oha >/dev/null 2>&1 || die "oha is missing (HEAD case); run scripts/install-bench-tools.sh"
        tool=oha
    fi
    for ((rep = 1; rep <= REPS; rep++)); do
        for ((k = 0; k < ${#TARGETS[@]}; k++)); do
            t="${TARGETS[$(((k + rep - 1) % ${#TARGETS[@]}))]}"
            [[ -n "${SKIP[$name/$t]:-}" ]] && continue
            base="${URL[$t]}"; ((tls)) && base="${TLS_URL[$t]}"
            # A long timeout: slow answers (distribution's catalog takes up to 2 s under this
            # load) count in the latencies instead of being dropped as errors.
            if [[ "$tool" == wrk ]]; then
                cmd=(wrk -t1 "-c$conns" "-d$DURATION" --timeout 10s --latency -s "$RUN/get.lua" "$base$path")
            elif [[ "$tool" == h2load ]]; then
                # -m: streams at once on each connection (3: ten, as browsers and Go clients do).
                cmd=(h2load -t1 "-c$conns" "-m$( ((tls == 3)) && echo 10 || echo 1)" -D "${DURATION%s}" -H "Accept: application/vnd.oci.image.manifest.v1+json" "$base$path")
            else
                cmd=(oha --no-tui --output-format json -z "$DURATION" -w -c "$conns" -m "$method" --insecure
                    -H "Accept: application/vnd.oci.image.manifest.v1+json" "$base$path")
            fi
            out="$RUN/out/$name-$t-$rep.txt"
            spid="${SPID[$t]}"; ((tls)) && spid="${SPID_TLS[$t]}"
            while :; do
                n=$(pgrep -c -x rustc || true); ((n > rustc_seen)) && rustc_seen=$n
                [[ "$name" == *-half ]] && hold_to_half "$spid"
                before=$(cpu_ticks "$spid")
                client_before=$(children_ticks)
                "${LOAD_CPU[@]}" "${cmd[@]}" >"$out" 2>&1 || { cat "$out" >&2; die "$tool failed for $name on $t"; }
                client=$(( $(children_ticks) - client_before ))
                server=$(( $(cpu_ticks "$spid") - before ))
                [[ "$name" == *-half ]] && release_from_half "$spid"
                printf '[bench] %-18s %-13s round %d: ' "$name" "$t" "$rep" >&2
                rc=0
                rec=$("${HELPER[@]}" parse "$tool" "$name" "$t" "$rep" "$expect" "$out" \
                    "$(python3 -c "print($server / $CLK_TCK, $client / $CLK_TCK)")") || rc=$?
                ((rc == 0 || rc == 3)) || die "could not read $tool's output for $name on $t"
                if ((rc == 3 && REDONE < REDO_BUDGET)); then
                    # Starved by other processes: keep it aside and measure again.
                    echo "$rec" >>"$RESULTS/discarded.jsonl"
                    REDONE=$((REDONE + 1))
                    sleep 1
                    continue
                fi
                echo "$rec" >>"$RAW"
                break
            done
            if [[ $rep == 1 ]]; then
                COMMANDS+=("$(show_cmd "${LOAD_CPU[@]}" "${cmd[@]:0:${#cmd[@]}-1}" "$( ((tls)) && echo https || echo http)://TARGET$path")")
            fi
        done
        sleep 0.5
    done
done
BENCH_END=$(date +%s)

# Still answering correctly after the load?
AFTER_LOAD=()
for t in "${TARGETS[@]}"; do
    if ! out=$("${HELPER[@]}" check "$CONTENT/layouts" "$SUMMARY" manifest-tag GET "${URL[$t]}/v2/$APP/manifests/$APP_TAG"); then
        AFTER_LOAD+=("$t: $(echo "$out" | paste -sd';' -)")
        [[ "$t" == chartreg ]] && CHARTREG_WRONG=1
        log "after the load, $t answers the manifest wrongly: $out"
    fi
done

# ---------------------------------------------------------------------------------------------
# 8. Report
# ---------------------------------------------------------------------------------------------
END_TIME=$(date +%s)
export META_CASES="$(printf '%s\n' "${CASES[@]}")"
export META_SKIP="$(for k in "${!SKIP[@]}"; do printf '%s\t%s\n' "$k" "${SKIP[$k]}"; done)"
export META_NOTES="$(printf '%s\n' "${CHECK_NOTES[@]}")"
export META_AFTER="$(printf '%s\n' "${AFTER_LOAD[@]}")"
export META_COMMANDS="$(printf '%s\n' "${COMMANDS[@]}" | awk '!seen[$0]++')"
export META_CPU_SHARING="$CPU_SHARING"
export META_TOOLS="$(cat "$RUN/tools.txt")"
python3 - "$RUN/meta.json" <<PY
import json, os, platform, subprocess, sys, time

def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()

def dur(s):
    return f"{s // 60} min {s % 60:02d} s"

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
tools = dict(l.split(None, 1) for l in os.environ["META_TOOLS"].splitlines() if l.strip())
cases = []
for line in os.environ["META_CASES"].splitlines():
    name, title, short, method, path, conns, tls, expect = line.split("|")
    cases.append(dict(name=name, title=title, short=short, method=method, path=path,
                      connections=int(conns), tls=tls != "0", expect=int(expect)))
git = sh("git rev-parse --short=12 HEAD")
if sh("git status --porcelain -- src Cargo.toml Cargo.lock build.rs"):
    git += " plus uncommitted changes in src/ or Cargo files"
meta = {
    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    "cpu": cpu,
    "cores": os.cpu_count(),
    "memory": f"{int(mem) / 2**20:.0f} GiB",
    "kernel": platform.release(),
    "os": sh(". /etc/os-release && echo \$PRETTY_NAME"),
    "cpu_sharing": os.environ["META_CPU_SHARING"],
    "load_before": "$LOAD_BEFORE",
    "load_after": " ".join(open("/proc/loadavg").read().split()[:3]),
    "rustc_seen": $rustc_seen,
    "nginx_workers": $NGINX_WORKER_COUNT,
    "chartreg_version": sh("$BIN --version").replace("chartreg ", ""),
    "git": git,
    "nginx_version": "nginx " + tools.get("nginx", "?"),
    "distribution_version": tools.get("docker-registry", "?"),
    "wrk_version": "wrk " + tools.get("wrk", "?"),
    "oha_version": ("oha " + tools["oha"]) if "oha" in tools else "",
    "h2load_version": ("h2load " + tools["h2load"]) if "h2load" in tools else "",
    "elapsed": dur($END_TIME - $START_TIME),
    "bench_elapsed": dur($BENCH_END - $BENCH_START),
    "duration": "$DURATION",
    "reps": $REPS,
    "connections": $CONNS,
    "big_connections": $BIG_CONNS,
    "cases": cases,
    "skipped": dict(l.split("\t", 1) for l in os.environ["META_SKIP"].splitlines() if l.strip()),
    "check_notes": [l for l in os.environ["META_NOTES"].splitlines() if l.strip()],
    "after_load": [l for l in os.environ["META_AFTER"].splitlines() if l.strip()],
    "redone": $REDONE,
    "redo_budget": $REDO_BUDGET,
    "commands": [l for l in os.environ["META_COMMANDS"].splitlines() if l.strip()],
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY
"${HELPER[@]}" report "$RAW" "$RUN/meta.json" "$REPORT" "$RESULTS"
cp "$RUN/meta.json" "$RESULTS/meta.json"
cp "$RUN/get.lua" "$RESULTS/get.lua"
gnuplot -e "results='$RESULTS'" "$ROOT/bench/req-per-s.gp" 2>"$RUN/gnuplot.log" || { cat "$RUN/gnuplot.log" >&2; die "gnuplot failed"; }
log "wrote $REPORT, $RESULTS/req-per-s.png, $RESULTS/raw.jsonl, $RESULTS/summary.csv ($(( $(date +%s) - START_TIME )) s in all)"
if ((CHARTREG_WRONG)); then
    die "chartreg answered some case wrongly (see the check lines above and $REPORT)"
fi
