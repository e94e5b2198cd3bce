#!/usr/bin/env bash
# The largest content the linux/arm64 server builds with and serves (`make arm64-large`): an
# image set of GIB GiB (bench/gen_scale.py --images-gib: ten charts, images whose layers reach
# GIB GiB of distinct bytes, one layer of 1 GiB) compiled into the aarch64 server from the kit,
# its large files linked as AArch64 objects, as `chartreg-build build --platform linux/arm64`
# compiles (Debian's rustc-web, the aarch64 cross gcc; its cache is the Makefile's kit cache, so
# only the crate that embeds the content compiles); then the server run under qemu-user serves
# the 1 GiB layer, checked by its digest, and stops on SIGTERM.
#
#   bench/arm64-large.sh KIT KIT_CACHE GIB...     (make arm64-large ARM64_GIB="1 2 3")
#
# Prints one line per size: the compile's time, its peak anonymous memory summed over its
# processes (bench/peak_memory.py) and the largest process's resident set (GNU time), the
# binary's size, the time to answer under qemu, the layer's rate; or why it did not build
# or serve. Work in $KIT_CACHE/arm64-large (removed at the end).
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 KIT KIT_CACHE GIB..." >&2; exit 2; }
KIT=$1 CACHE=$2
shift 2
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$CACHE/arm64-large
# The kit's cache, as `chartreg-build build` names it.
TARGET=$CACHE/build-$(cat "$KIT/KIT_ID")
log() { printf '[arm64-large] %s\n' "$*" >&2; }
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
QEMU=$(command -v qemu-aarch64-static) || { log "qemu-aarch64-static is missing (make tools)"; exit 1; }

for gib in "$@"; do
    content=$WORK/content
    log "$gib GiB: generating"
    python3 bench/gen_scale.py "$content" --images-gib "$gib" >"$WORK/gen.json"
    out=$WORK/chartreg
    log "$gib GiB: compiling for linux/arm64"
    # The generated set is already a packed folder: cargo is run on the kit as `build` runs it
    # after packing (the same variables, so the kit cache's other crates stay fresh), with the
    # set as CHARTREG_ASSETS.
    if ! (cd "$KIT" && /usr/bin/time -f '%e %M' -o "$WORK/time" \
        python3 "$ROOT/bench/peak_memory.py" "$WORK/peak.json" \
        env CHARTREG_ASSETS="$content" CHARTREG_SIGNER= \
        CARGO_TARGET_DIR="$TARGET" CARGO_BUILD_BUILD_DIR="$TARGET" \
        CARGO_ENCODED_RUSTFLAGS=-Ctarget-feature=+crt-static RUSTC=/usr/bin/rustc \
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
        CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
        cargo build --release --locked --offline -p chartreg-bin --bin chartreg \
        --target aarch64-unknown-linux-gnu >"$WORK/build.log" 2>&1); then
        log "$gib GiB: the compile failed:"
        tail -n 20 "$WORK/build.log" >&2
        python3 -c 'import json,sys; print(json.load(open(sys.argv[1])))' "$WORK/peak.json" >&2 || true
        continue
    fi
    cp "$TARGET/aarch64-unknown-linux-gnu/release/chartreg" "$out"
    read -r build_s max_rss <"$WORK/time"
    peak=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["peak_anon_kib"]//1024, "(" + str(p["peak_anon_holders"]) + ")")' "$WORK/peak.json")
    bytes=$(stat -c %s "$out")
    layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layer_path"])' "$WORK/gen.json")
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    t0=$(date +%s.%N)
    "$QEMU" "$out" serve --listen "127.0.0.1:$port" --shutdown-delay 0s 2>"$WORK/serve.log" &
    pid=$!
    for _ in $(seq 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/v2/" && break; sleep 0.1; done
    up=$(echo "$(date +%s.%N) - $t0" | bc)
    t1=$(date +%s.%N)
    digest=$(curl -sf "http://127.0.0.1:$port$layer" | sha256sum | cut -d' ' -f1)
    took=$(echo "$(date +%s.%N) - $t1" | bc)
    kill -TERM "$pid"
    status=0
    wait "$pid" || status=$?
    served=no
    [[ "sha256:$digest" == "${layer##*/}" ]] && served=yes
    printf 'arm64 %s GiB: compile %s s, peak anon %s MiB, largest process %s MiB, binary %s MiB; under qemu: answered after %s s, 1 GiB layer byte-exact %s in %s s (%s MB/s), SIGTERM exit %s\n' \
        "$gib" "$build_s" "$peak" "$((max_rss / 1024))" "$((bytes / 1048576))" "$up" "$served" "$took" \
        "$(echo "1073.741824 / $took" | bc)" "$status"
    rm -f "$out"
done
