#!/usr/bin/env bash
# Lookups stay flat as content grows: instructions per manifest-by-tag request, counted by
# callgrind (independent of machine noise), through the whole application in-process, for a
# repository of 10 and of 10,000 tags, and with 10,000 more repositories beside it.
#
#   bench/lookup-flatness.sh            # prints a table; exits non-zero if 10,000 is >10% over 10
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --quiet --example lookup_cost
# Wherever cargo builds (CARGO_TARGET_DIR, cargo's configuration, else target/).
lookup_cost="$(scripts/target-dir.sh)/release/examples/lookup_cost"
requests=2000
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A per_request
printf '%-8s %-13s %15s %15s\n' tags repositories instructions per-request
for case in "10 0" "1000 0" "10000 0" "10 10000"; do
    read -r tags repos <<<"$case"
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect='*serve_requests*' \
        "$lookup_cost" --tags "$tags" --repositories "$repos" \
        --requests "$requests" >/dev/null 2>"$out/log"
    total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log")
    per=$((total / requests))
    per_request["$tags/$repos"]=$per
    printf '%-8s %-13s %15s %15s\n' "$tags" "$repos" "$total" "$per"
done
small=${per_request["10/0"]}
large=${per_request["10000/0"]}
many=${per_request["10/10000"]}
echo "10,000 tags vs 10: $(python3 -c "print(f'{$large/$small:.3f}x')"); 10,000 extra repositories: $(python3 -c "print(f'{$many/$small:.3f}x')")"
python3 -c "import sys; sys.exit(0 if $large <= 1.10*$small and $many <= 1.10*$small else 1)"
