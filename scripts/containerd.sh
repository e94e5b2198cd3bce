#!/usr/bin/env bash
# Run containerd in the foreground as a node's image puller without Kubernetes, for the tests
# that check what a cluster node pulls through chartreg (hosts.toml mirrors, `ctr images pull`):
#
#   scripts/containerd.sh DIR
#
#   DIR  a directory owned by the caller (created if missing); the config is written to
#        DIR/config.toml, everything containerd keeps or creates goes under DIR:
#          DIR/root              content store, metadata, snapshots (`root`)
#          DIR/state             runtime state (`state`)
#          DIR/tmp               its temporary files (`temp`, and TMPDIR)
#          DIR/opt               the opt plugin's folder (default /opt/containerd)
#          DIR/containerd.sock   the gRPC socket (`ctr --address DIR/containerd.sock`)
#          DIR/containerd.sock.ttrpc   the ttrpc socket
#        Remove it when done (as root: the native snapshotter keeps images' files with their
#        own modes).
#
# Nothing is shared with a containerd of the host (/var/lib/containerd, /run/containerd,
# /opt/containerd) or with another instance of this script: each has its own DIR. containerd
# runs in a mount namespace of its own (unshare, private propagation): the bind mounts it makes
# while unpacking a layer (DIR/root/tmpmounts, even with the native snapshotter) are never seen
# outside it and go away with it, however it ends, so DIR can always be removed. The CRI plugin
# is disabled (no Kubernetes); debug and metrics listeners stay off (containerd's defaults). The
# ocicrypt stream processors' defaults name /etc/containerd/ocicrypt, read only to decrypt
# encrypted layers, which no test pulls. Runs as root (containerd needs it). Logs go to stderr.
# unshare and then containerd are exec'd, so the PID the caller gets is containerd's own; SIGTERM
# or SIGKILL stops it. Callers wait for readiness with `ctr --address DIR/containerd.sock version`.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi

for tool in containerd unshare; do
    command -v "$tool" >/dev/null 2>&1 \
        || { echo "$0: $tool not found; run scripts/install-tools.sh" >&2; exit 1; }
done

mkdir -p "$1"
dir="$(cd "$1" && pwd)"
mkdir -p "$dir/root" "$dir/state" "$dir/tmp" "$dir/opt"

# A unix socket's path is limited to 107 bytes: say so instead of containerd's bind error.
sock="$dir/containerd.sock"
if ((${#sock} + 6 > 107)); then
    echo "$0: $sock.ttrpc is longer than a unix socket path may be; use a shorter DIR" >&2
    exit 1
fi

cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
temp = "$dir/tmp"
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
EOF

# CONTAINERD_ADDRESS and the like are read by ctr, not containerd; nothing in the environment
# changes the daemon's paths. Its own temporary files follow TMPDIR.
export TMPDIR="$dir/tmp"
exec unshare --mount --propagation private containerd --config "$dir/config.toml"
