#!/usr/bin/env bash
# After `make test`: the build tool was compiled once. Every library `cargo build --release -p
# chartreg-build` (make build-tool) links must be the very artifact `cargo test --release
# --workspace` built (same file name, hash included: same package, features and profile). Both are fresh by
# then, so this takes seconds; a difference means the workspace's tests turn on a feature the
# tool alone does not (crates/feature-set/tests/one_feature_set.rs names which).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
artifacts() {
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact":
        for f in m["filenames"]:
            # deps/libNAME-HASH.rlib; a root unit is also copied out without its hash
            if f.endswith(".rlib") and "-" in f.rsplit("/", 1)[-1]:
                print(m["package_id"], f.rsplit("/", 1)[-1])
' | sort -u
}
tool=$("$CARGO" build --release -p chartreg-build --message-format=json 2>/dev/null | artifacts)
tests=$("$CARGO" test --release --workspace --no-run --message-format=json 2>/dev/null | artifacts)
twice=$(comm -23 <(printf '%s\n' "$tool") <(printf '%s\n' "$tests"))
if [[ -n "$twice" ]]; then
    printf '[one-compile] the build tool was compiled twice: these libraries differ between\n' >&2
    printf '[one-compile] `cargo build -p chartreg-build` and `cargo test --workspace`:\n%s\n' "$twice" >&2
    exit 1
fi
printf '[one-compile] the build tool and the tests share its %s libraries\n' "$(printf '%s\n' "$tool" | grep -c .)" >&2
