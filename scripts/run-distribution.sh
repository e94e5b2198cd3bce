#!/usr/bin/env bash
# Run the CNCF distribution registry (Debian package "docker-registry") in the
# foreground, as a throwaway reference registry for tests:
#
#   scripts/run-distribution.sh ROOTDIR ADDR [HTPASSWD]
#
#   ROOTDIR  a directory owned by the caller (created if missing); the config
#            is written to ROOTDIR/config.yml and blobs go under ROOTDIR/data.
#            Remove it when done.
#   ADDR     listen address, e.g. 127.0.0.1:5001
#   HTPASSWD optional: an htpasswd file (bcrypt, `htpasswd -Bbn USER PASS`);
#            every request then needs basic auth as one of its users
#
# No auth (unless HTPASSWD), no TLS (clients need --plain-http / --tls-verify=false), deletes
# enabled, only errors logged (no access log). The process is exec'd, so the
# PID the caller gets from `... &` is the registry's own; SIGTERM stops it.
# Callers wait for readiness with e.g. `curl -fsS http://ADDR/v2/`.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "usage: $0 ROOTDIR ADDR [HTPASSWD]" >&2
    exit 2
fi
root="$1" addr="$2" htpasswd="${3:-}"

command -v docker-registry >/dev/null 2>&1 \
    || { echo "$0: docker-registry not found; run scripts/install-tools.sh" >&2; exit 1; }

mkdir -p "$root/data"
root="$(cd "$root" && pwd)"

cat >"$root/config.yml" <<EOF
version: 0.1
log:
  level: error
  formatter: text
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $root/data
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $addr
  # Fixed secret: silences the "generated random secret" warning. Only used
  # to sign upload state, which never leaves this single instance.
  secret: chartreg-test-registry
EOF
if [[ -n "$htpasswd" ]]; then
    [[ -f "$htpasswd" ]] || { echo "$0: $htpasswd: no such file" >&2; exit 1; }
    cat >>"$root/config.yml" <<EOF
auth:
  htpasswd:
    realm: chartreg-test
    path: $(cd "$(dirname "$htpasswd")" && pwd)/$(basename "$htpasswd")
EOF
fi

# Settings in the environment (REGISTRY_HTTP_ADDR, ...) would override the
# file; make sure none leak in from the caller.
while IFS='=' read -r name _; do
    [[ "$name" == REGISTRY_* ]] && unset "$name"
done < <(env)

exec docker-registry serve "$root/config.yml"
