#!/usr/bin/env bash
# `make stress`: the hardening tests at full size (CHARTREG_STRESS=10), one at a time, then
# their figures written into RELIABILITY.md (the section after the marker below, replaced as a
# whole). `make test` runs the same tests at a tenth of these sizes.
#
#   scripts/stress.sh
#
# Each test prints one line of figures, `<name>: ...` (load, idle, churn, slow, tls, h2,
# big downloads); the report lists them with the date, the machine and the commands. A failing
# test fails this script, and RELIABILITY.md is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
CARGO=${CARGO:-cargo}
LOG=$(mktemp /tmp/chartreg-stress.XXXXXX)
trap 'rm -f "$LOG"' EXIT

COMMANDS=(
    "CHARTREG_STRESS=10 $CARGO test --release --test hardening -- --nocapture --test-threads 1"
    "CHARTREG_STRESS=10 $CARGO test --release --test embed many_downloads -- --nocapture"
)
for command in "${COMMANDS[@]}"; do
    echo "[stress] $command" >&2
    bash -c "$command" 2>&1 | tee -a "$LOG"
    [[ ${PIPESTATUS[0]} == 0 ]] || { echo "[stress] failed: $command" >&2; exit 1; }
done

python3 - "$LOG" RELIABILITY.md "${COMMANDS[@]}" <<'PY'
import datetime, os, platform, re, sys

log, report, *commands = sys.argv[1:]
MARKER = "<!-- stress figures: written by make stress (scripts/stress.sh) -->"
names = ("load", "idle", "churn", "slow", "tls", "h2", "big downloads")
found = {}
for line in open(log, encoding="utf-8", errors="replace"):
    # A figure line starts a line, or follows libtest's `test NAME ... ` on the same line.
    m = re.search(r"(?:^|\.\.\. )(%s): (.*)$" % "|".join(names), line.rstrip("\n"))
    if m:
        found[m.group(1)] = m.group(2)
missing = [n for n in names if n not in found]
if missing:
    sys.exit(f"[stress] no figures printed for: {', '.join(missing)}")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
lines = [
    MARKER,
    "## Figures of the last `make stress`",
    "",
    f"Written by `make stress` on {when} ({cpu}, {os.cpu_count()} CPUs, Linux"
    f" {platform.release()}), client and server sharing the machine. Commands:",
    "",
    "```",
    *commands,
    "```",
    "",
    "Each line is what the test printed (its assertions passed):",
    "",
]
lines += [f"- **{n}**: {found[n]}" for n in names]
text = open(report).read()
if MARKER in text:
    text = text[: text.index(MARKER)]
with open(report, "w") as f:
    f.write(text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
print(f"[stress] wrote the figures into {report}", file=sys.stderr)
PY
