#!/bin/bash
# The bounded-run cases, inside the VM scripts/cgroup-v2-vm.sh boots: run as root by the
# chartreg-cases service from the inputs disk (/inputs: chartreg-build, helm3, helm4,
# unit-tests, runaway-1.0.0.tgz). Each case prints one line the host reads:
#
#   FIGURE|KIND|WHAT|EXIT|BOUND|PEAK|UNIT PEAK|SECONDS|MESSAGE
#
# KIND is how the tool is started (below); WHAT is `helm3`/`helm4` (`images` on the runaway
# chart, --render-memory 512) or `unit` (the unit tests of bounded::, BOUND then being what they
# were told to expect); BOUND and PEAK are what the tool's message says held the run and the
# peak it measured; UNIT PEAK is the kernel's peak of the systemd unit the tool ran in (the
# tool, ~20 MiB, and Helm; `memory.peak`, measured outside the tool; `-` for runuser, which
# runs in this service's own unit); SECONDS is the wall time to the tool's exit.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
I=/inputs
W=/var/tmp/cases
rm -rf "$W"
mkdir -p "$W"
cp "$I/chartreg-build" "$I/helm3" "$I/helm4" "$I/unit-tests" "$I/runaway-1.0.0.tgz" "$W/"
chmod -R a+rX "$W"
chmod 1777 "$W"
UID_B=$(id -u builder)
USER_ENV=(XDG_RUNTIME_DIR=/run/user/$UID_B DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$UID_B/bus)

echo "CASE kernel $(uname -r), /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup), systemd $(systemctl --version | awk 'NR==1{print $2}')"
echo "CASE helm3 $("$W/helm3" version --short), helm4 $("$W/helm4" version --short)"
for _ in $(seq 1 300); do
    systemctl is-active --quiet "user@$UID_B.service" && [[ -S /run/user/$UID_B/bus ]] && break
    sleep 1
done
echo "CASE user@$UID_B.service: $(systemctl is-active "user@$UID_B.service")"

# How the tool is started, by KIND.
launch() {
    local kind=$1
    shift
    case "$kind" in
        root-scope) systemd-run --quiet --scope -- "$@" ;;
        root-service) systemd-run --quiet --wait --pipe --collect -- "$@" ;;
        user-delegated-scope)
            runuser -u builder -- env "${USER_ENV[@]}" \
                systemd-run --user --quiet --scope -p Delegate=yes -- "$@" ;;
        user-delegated-service)
            systemd-run --quiet --wait --pipe --collect -p User=builder -p Delegate=yes -- "$@" ;;
        user-service) systemd-run --quiet --wait --pipe --collect -p User=builder -- "$@" ;;
        user-runuser) runuser -u builder -- "$@" ;;
    esac
}
# measure TOOL ARGS...: the tool, then the peak of the unit's cgroup (the one the tool's leaf is
# in, where it moved this shell) into $W/unit-peak. (No ${...} in it: systemd expands those in a
# service's command line.)
MEASURE='"$@"; code=$?
cg=$(sed -n "s/^0:://p" /proc/self/cgroup)
case "$cg" in */chartreg-build-leaf) cg=$(dirname "$cg") ;; esac
case "$cg" in */chartreg-cases.service) ;; *) cat "/sys/fs/cgroup$cg/memory.peak" >"$W/unit-peak" ;; esac
exit $code'

KINDS=(root-scope root-service user-delegated-scope user-delegated-service user-service user-runuser)

# What each kind must get: its own memory cgroup (v2) as root and where a subtree is delegated,
# the watchdog where none is.
expected() {
    case "$1" in
        root-* | user-delegated-*) echo "cgroup v2" ;;
        *) echo "the watchdog" ;;
    esac
}

for kind in "${KINDS[@]}"; do
    for helm in helm3 helm4; do
        rm -f "$W/out" "$W/err" "$W/unit-peak"
        started=$(date +%s.%N)
        launch "$kind" env W="$W" /bin/sh -c "$MEASURE" measure \
            "$W/chartreg-build" images "$W/runaway-1.0.0.tgz" --helm "$W/$helm" \
            --render-memory 512 --render-timeout 300s >"$W/out" 2>"$W/err" </dev/null
        code=$?
        ended=$(date +%s.%N)
        message=$(grep -m1 'memory bound\|not run\|chartreg-build:' "$W/err" | tr '|' '/' | cut -c1-400)
        bound=$(sed -n 's/.*memory bound: \([^;)]*\).*/\1/p' <<<"$message")
        peak=$(sed -n 's/.*; peak \([0-9]* MiB\).*/\1/p' <<<"$message")
        unit_peak=$(tr -dc 0-9 <"$W/unit-peak" 2>/dev/null)
        unit_peak=$([[ -n "$unit_peak" ]] && echo "$((unit_peak / 1048576)) MiB")
        seconds=$(awk -v a="$started" -v b="$ended" 'BEGIN{printf "%.1f", b-a}')
        echo "FIGURE|$kind|$helm|$code|${bound:-?}|${peak:--}|${unit_peak:--}|$seconds|$message"
        [[ -n "$bound" ]] || sed 's/^/CASE   /' "$W/err" | head -20
    done
done

# The unit tests of the runner, told which bound each kind must get (as root, CI=true makes
# them insist on a cgroup and on namespaces too).
for kind in root-scope root-service user-delegated-service user-service; do
    started=$(date +%s.%N)
    want=$(expected "$kind")
    launch "$kind" env CI=true "CHARTREG_TEST_BOUND=$want" HOME=/var/tmp/cases \
        "$W/unit-tests" --test-threads 2 bounded:: >"$W/out" 2>"$W/err" </dev/null
    code=$?
    ended=$(date +%s.%N)
    seconds=$(awk -v a="$started" -v b="$ended" 'BEGIN{printf "%.1f", b-a}')
    summary=$(grep -m1 '^test result' "$W/out" | tr '|' '/')
    echo "FIGURE|$kind|unit|$code|$want|-|-|$seconds|$summary"
    if [[ $code != 0 ]]; then
        grep -E '^(test .*FAILED|---- |thread )|panicked|assert' "$W/out" "$W/err" | head -40 | sed 's/^/CASE   /'
    fi
done
echo "CASE done"
