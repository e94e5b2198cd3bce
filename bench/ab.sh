#!/usr/bin/env bash
# A/B of two chartreg binaries on single requests: does a change pay? Each binary serves on
# 127.0.0.1 pinned to CPU 0 (one worker), wrk loads it from CPU 1 (one thread, 32 keep-alive
# connections); runs alternate A, B, A, B, ... and the median req/s of each is reported with
# the ratio B/A. Both binaries must embed the same content.
#
#   bench/ab.sh BIN_A BIN_B PATH [PATH...]
#
# Settings (environment): AB_RUNS=3 (runs of each binary per path), AB_DURATION=4s,
# AB_CONNECTIONS=32. Prints one line per path: `PATH  A req/s  B req/s  B/A`.
set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: bench/ab.sh BIN_A BIN_B PATH [PATH...]" >&2; exit 2; }
A=$1 B=$2
shift 2
RUNS=${AB_RUNS:-3}
DURATION=${AB_DURATION:-4s}
CONNS=${AB_CONNECTIONS:-32}
for tool in wrk taskset curl; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (scripts/install-bench-tools.sh)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/chartreg-ab.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME BIN: serves BIN on CPU 0 (access log on, into a file, as in `make bench`); sets the
# variable NAME to its address, from its summary line.
start() {
    local log="$WORK/$1.log" addr=""
    taskset -c 0 "$2" serve --listen 127.0.0.1:0 --workers 1 --shutdown-delay 0s 2>"$log" &
    PIDS+=($!)
    for _ in $(seq 200); do
        addr=$(grep -o ' on http://[0-9.:]*' "$log" | head -1 | sed 's| on http://||' || true)
        [[ -n "$addr" ]] && break
        sleep 0.05
    done
    [[ -n "$addr" ]] || { echo "$2 did not start: $(cat "$log")" >&2; exit 1; }
    printf -v "$1" '%s' "$addr"
}
start ADDR_A "$A"
start ADDR_B "$B"

rate() { # ADDR PATH -> requests per second
    taskset -c 1 wrk -t1 "-c$CONNS" "-d$DURATION" "http://$1$2" | awk '/^Requests\/sec/ {print $2}'
}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for path in "$@"; do
    code_a=$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR_A$path")
    code_b=$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR_B$path")
    [[ "$code_a" == "$code_b" ]] || { echo "$path answers $code_a on A, $code_b on B" >&2; exit 1; }
    : >"$WORK/a" ; : >"$WORK/b"
    for _ in $(seq "$RUNS"); do
        rate "$ADDR_A" "$path" >>"$WORK/a"
        rate "$ADDR_B" "$path" >>"$WORK/b"
    done
    a=$(median <"$WORK/a") b=$(median <"$WORK/b")
    printf '%s (%s)  A %s  B %s  B/A %s  (A: %s; B: %s)\n' "$path" "$code_a" "$a" "$b" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')" \
        "$(tr '\n' ' ' <"$WORK/a" | sed 's/ $//')" "$(tr '\n' ' ' <"$WORK/b" | sed 's/ $//')"
done
