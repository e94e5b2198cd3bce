#!/usr/bin/env bash
# The bounded runs on a real cgroup v2 kernel: `make cgroup-v2-vm`.
#
#   scripts/cgroup-v2-vm.sh BUILD_TOOL OUT_DIR
#
# boots Debian 12's kernel (linux-image-amd64) in QEMU under TCG (this machine's /dev/kvm is
# too slow for an unmodified kernel), on a root file system made by mmdebstrap from Debian's
# packages (systemd, a user `builder` whose manager lingering starts), with a second disk
# holding BUILD_TOOL (the release chartreg-build), the build tool's unit-test binary (built
# here: cargo test --release -p chartreg-build --lib --no-run; CARGO names the cargo),
# .tools/helm3/helm and .tools/helm4/helm (scripts/install-tools.sh), a runaway chart, and
# scripts/cgroup-v2-vm/cases.sh, which a service runs there: `images` on the runaway chart
# with --render-memory 512 under Helm 3 and Helm 4, then the unit tests of bounded::, as root
# (a scope, a service), as a user with a delegated subtree (a scope under the user's systemd,
# a `Delegate=yes` service) and as a user without one (a service, runuser: the watchdog). It
# prints, per case, which bound held the run, the peak, the time to stop and the exit, writes
# the table to OUT_DIR/figures.txt and the VM's console to OUT_DIR/console.log, and exits 1
# when a case did not get the bound it should (or the unit tests failed).
#
# The root file system is cached in OUT_DIR (root-<key>.ext4 and its kernel and initrd), keyed
# by everything mmdebstrap is given: delete it to take newer packages. The VM's disk is used
# with snapshot=on, so a run never changes the cache. Runs as root (mmdebstrap --mode=root,
# mkfs.ext4 -d keeps owners); needs qemu-system-x86_64, mmdebstrap and mkfs.ext4
# (scripts/install-vm-tools.sh) and reaches http://deb.debian.org once, for the root. The
# first run takes about 5 minutes more than the next (the root); a run, about 10.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_TOOL OUT_DIR" >&2; exit 2; }
BUILD_TOOL=$(realpath -e "$1")
OUT=$(realpath -m "$2")
CARGO=${CARGO:-cargo}
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '[cgroup-v2-vm] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
STARTED=$SECONDS

[[ "$(id -u)" == 0 ]] || die "needs root (mmdebstrap --mode=root, mkfs.ext4 -d): sudo -E $0 $*"
for tool in mmdebstrap qemu-system-x86_64 mkfs.ext4 sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: scripts/install-vm-tools.sh installs it"
done
HELM3=$ROOT/.tools/helm3/helm
HELM4=$ROOT/.tools/helm4/helm
[[ -x "$HELM3" && -x "$HELM4" ]] || die "Helm 3 and 4 are missing from .tools: scripts/install-tools.sh installs them"
mkdir -p "$OUT"

# -- The root file system -------------------------------------------------------------------------
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
PACKAGES=(
    linux-image-amd64 # the kernel (6.1: cgroup v2 only under systemd 252, cgroup.kill, memory.peak)
    systemd-sysv      # systemd as init: scopes, services, Delegate=yes, the user manager
    libpam-systemd    # logind: lingering starts the user's manager (user@1000.service) at boot
    dbus              # the system bus systemd-run talks to
    dbus-user-session # the user's bus, for systemd-run --user
    udev              # /dev/vdb by the time the case service starts
    util-linux        # runuser, unshare (the user namespace the non-root runs isolate in)
    procps            # ps, for what the console shows
    python3-minimal   # the unit tests allocate memory with python3
)
MMDEBSTRAP=(
    --variant=minbase --mode=root --format=directory
    "--include=$(IFS=,; printf '%s' "${PACKAGES[*]}")"
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    # The user whose runs are delegated or not; lingering starts its manager at boot.
    --customize-hook='chroot "$1" useradd --create-home --uid 1000 --shell /bin/bash builder'
    --customize-hook='mkdir -p "$1/var/lib/systemd/linger" && touch "$1/var/lib/systemd/linger/builder"'
    --customize-hook='echo chartreg-vm >"$1/etc/hostname"; printf "/dev/vda / ext4 rw 0 1\n" >"$1/etc/fstab"'
    # The case service: the inputs disk's cases.sh on the console, then power off.
    --customize-hook='cat >"$1/etc/systemd/system/chartreg-cases.service" <<EOF
[Unit]
Description=chartreg bounded-run cases
After=multi-user.target user@1000.service
Wants=user@1000.service
[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /inputs
ExecStartPre=/bin/mount -o ro /dev/vdb /inputs
ExecStart=/bin/bash /inputs/cases.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStopPost=/bin/systemctl --no-block poweroff
[Install]
WantedBy=multi-user.target
EOF
chroot "$1" systemctl enable chartreg-cases.service
chroot "$1" systemctl mask getty@tty1.service serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer'
    "$SUITE"
)
SOURCES=(
    "deb $MIRROR $SUITE main"
    "deb $MIRROR $SUITE-updates main"
    "deb $MIRROR-security $SUITE-security main"
)
KEY=$(printf '%s\n' "${MMDEBSTRAP[@]}" "${SOURCES[@]}" | sha256sum | cut -c1-16)
IMAGE=$OUT/root-$KEY.ext4
KERNEL=$OUT/vmlinuz-$KEY
INITRD=$OUT/initrd-$KEY
if [[ -f "$IMAGE" && -f "$KERNEL" && -f "$INITRD" ]]; then
    log "root file system: cached, $IMAGE"
else
    log "root file system from $MIRROR: minbase + ${PACKAGES[*]} (a few minutes, once)"
    started=$SECONDS
    rm -rf "$OUT/root.new"
    mmdebstrap --quiet "${MMDEBSTRAP[@]}" "$OUT/root.new" "${SOURCES[@]}"
    cp "$(ls "$OUT"/root.new/boot/vmlinuz-* | head -1)" "$KERNEL.new"
    cp "$(ls "$OUT"/root.new/boot/initrd.img-* | head -1)" "$INITRD.new"
    rm -f "$IMAGE.new"
    mkfs.ext4 -q -L root -d "$OUT/root.new" "$IMAGE.new" 2G
    rm -rf "$OUT/root.new"
    mv "$KERNEL.new" "$KERNEL"
    mv "$INITRD.new" "$INITRD"
    mv "$IMAGE.new" "$IMAGE"
    for old in "$OUT"/root-*.ext4 "$OUT"/vmlinuz-* "$OUT"/initrd-*; do
        [[ "$old" == "$IMAGE" || "$old" == "$KERNEL" || "$old" == "$INITRD" ]] || rm -f "$old"
    done
    log "  $IMAGE ($((SECONDS - started)) s)"
fi

# -- The inputs disk ------------------------------------------------------------------------------
log "the unit tests: $CARGO test --release -p chartreg-build --lib --no-run"
UNIT_TESTS=$("$CARGO" test --release -p chartreg-build --lib --no-run --message-format=json |
    grep '"kind":\["lib"\]' | grep '"test":true' |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[[ -x "$UNIT_TESTS" ]] || die "cargo named no unit-test binary of chartreg-build"
INPUTS=$(mktemp -d "$OUT/.inputs.XXXXXX")
trap 'rm -rf "$INPUTS" "$OUT/inputs.ext4"' EXIT
cp "$BUILD_TOOL" "$INPUTS/chartreg-build"
cp "$UNIT_TESTS" "$INPUTS/unit-tests"
cp "$HELM3" "$INPUTS/helm3"
cp "$HELM4" "$INPUTS/helm4"
cp scripts/cgroup-v2-vm/cases.sh "$INPUTS/cases.sh"
# The runaway chart of the hostile corpus (render-runaway-range): 24 GB before the OOM killer,
# unbounded.
mkdir -p "$INPUTS/chart/runaway/templates"
printf 'apiVersion: v2\nname: runaway\nversion: 1.0.0\n' >"$INPUTS/chart/runaway/Chart.yaml"
printf '{{ range $i := until 2000000000 }}{{ $i }}{{ end }}\n' \
    >"$INPUTS/chart/runaway/templates/x.yaml"
tar -C "$INPUTS/chart" -czf "$INPUTS/runaway-1.0.0.tgz" runaway
rm -rf "$INPUTS/chart"
SIZE_MB=$(($(du -sm "$INPUTS" | cut -f1) + 64))
mkfs.ext4 -q -L inputs -d "$INPUTS" "$OUT/inputs.ext4" "${SIZE_MB}M"

# -- The VM ---------------------------------------------------------------------------------------
log "booting Debian's kernel under QEMU (TCG, 2 CPUs, 3 GiB); the console is $OUT/console.log"
BOOTED=$SECONDS
rm -f "$OUT/console.log"
timeout 60m qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 3072 -no-reboot \
    -display none -monitor none -serial stdio \
    -kernel "$KERNEL" -initrd "$INITRD" \
    -append "root=/dev/vda rw console=ttyS0 panic=-1 quiet systemd.show_status=0" \
    -drive "file=$IMAGE,format=raw,if=virtio,snapshot=on" \
    -drive "file=$OUT/inputs.ext4,format=raw,if=virtio,readonly=on" \
    </dev/null | sed -u 's/\r$//' | tee "$OUT/console.log" | grep --line-buffered -E '^(FIGURE|CASE)' |
    sed -u 's/^/[vm] /' >&2 || true
log "the VM ran $((SECONDS - BOOTED)) s"

# -- The figures ----------------------------------------------------------------------------------
grep -q '^CASE done' "$OUT/console.log" || die "the cases did not finish: see $OUT/console.log"
{
    grep -m1 '^CASE kernel' "$OUT/console.log" | sed 's/^CASE //'
    grep -m1 '^CASE helm3' "$OUT/console.log" | sed 's/^CASE //'
    printf '%-24s %-6s %-4s %-13s %-9s %-9s %-8s %s\n' \
        KIND RUN EXIT BOUND PEAK 'UNIT PEAK' SECONDS MESSAGE
    grep '^FIGURE|' "$OUT/console.log" |
        awk -F'|' '{ printf "%-24s %-6s %-4s %-13s %-9s %-9s %-8s %s\n", $2, $3, $4, $5, $6, $7, $8, $9 }'
} >"$OUT/figures.txt"
cat "$OUT/figures.txt"
failed=0
while IFS='|' read -r _ kind run code bound _ _ _ message; do
    case "$kind" in
        root-* | user-delegated-*) want="cgroup v2" ;;
        *) want="the watchdog" ;;
    esac
    if [[ "$run" == unit ]]; then
        [[ "$code" == 0 ]] || { log "FAILED: $kind: the unit tests: $message"; failed=1; }
    elif [[ "$bound" != "$want" || "$code" != 1 ]]; then
        log "FAILED: $kind $run: bound '$bound' (exit $code), expected '$want': $message"
        failed=1
    fi
done < <(grep '^FIGURE|' "$OUT/console.log")
log "done in $((SECONDS - STARTED)) s"
exit "$failed"
