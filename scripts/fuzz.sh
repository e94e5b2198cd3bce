#!/usr/bin/env bash
# make fuzz: runs every fuzz target (crates/fuzz-targets, driven by libFuzzer through fuzz/)
# for FUZZ_SECONDS each (default 60) on the stable toolchain: cargo-fuzz with `-s none` (no
# sanitizer; coverage instrumentation only, which stable rustc has). Starts from the seeds and
# the committed corpus (fuzz/corpus/<target>/), minimises the corpus afterwards (commit it:
# `cargo test` replays it), and prints executions and time per target. A crash stops the run
# with its input in fuzz/artifacts/<target>/: fix it and add the input to the corpus, which
# makes it a regression test.
#
# Settings (environment): FUZZ_SECONDS=60, FUZZ_TARGETS="route parsers ..." (all by default).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '[fuzz %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    log "installing cargo-fuzz (cargo install cargo-fuzz --locked)"
    cargo install cargo-fuzz --locked
fi
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"route parsers registry facts chart_package chart_folder image_layout"}

cargo run --quiet --release -p chartreg-fuzz-targets --example seeds -- fuzz/corpus
summary=()
for t in $targets; do
    log "$t: ${seconds}s"
    out=$(mktemp)
    if ! cargo fuzz run "$t" -s none --release -- -max_total_time="$seconds" -print_final_stats=1 \
        -rss_limit_mb=4096 -timeout=10 >"$out" 2>&1; then
        tail -40 "$out" >&2
        log "$t: crashed; the input is in fuzz/artifacts/$t/"
        exit 1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)
    cargo fuzz cmin "$t" -s none --release >/dev/null 2>&1 || log "$t: cmin failed (corpus kept as is)"
    files=$(find "fuzz/corpus/$t" -type f | wc -l)
    summary+=("$t: ${execs:-?} executions in ${seconds}s (${rate:-?}/s), corpus $files files")
    rm -f "$out"
done
printf '%s\n' "${summary[@]}"
