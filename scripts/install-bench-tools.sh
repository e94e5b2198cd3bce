#!/usr/bin/env bash
# Install what `make bench` (bench/run.sh) needs, each only when missing:
#
#   wrk, nginx (nginx-light), gnuplot-nox, openssl, curl,   (Debian packages)
#   h2load (nghttp2-client: the HTTP/2 large-blob case)
#   .tools/oha/bin/oha   oha 1.16.0 (crates.io, `cargo install --locked`; a few minutes once)
#   skopeo, docker-registry (CNCF distribution), ...         (scripts/install-tools.sh)
#
# oha is there for HEAD requests only: Debian's wrk 4.1.0 waits for a body after a HEAD
# answer that has a Content-Length, so it cannot measure HEAD.
#
# nginx is only ever run by the benchmark itself, in the foreground, as the
# calling user, with its own configuration: the packaged system service must
# not start (it would take port 80). Service starts are forbidden during the
# install (scripts/apt-install.sh), and the service is
# stopped and disabled afterwards in case it started anyway.
#
# Idempotent; a second run takes well under a second (plus install-tools.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '[install-bench-tools] %s\n' "$*" >&2; }
die() { printf '[install-bench-tools] ERROR: %s\n' "$*" >&2; exit 1; }

SUDO=()
[[ "$(id -u)" == 0 ]] || SUDO=(sudo)

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
{ command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]]; } || missing+=(nginx-light)
command -v gnuplot >/dev/null 2>&1 || missing+=(gnuplot-nox)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)

if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    # shellcheck source=scripts/apt-install.sh
    source "$ROOT/scripts/apt-install.sh"
    apt_install_no_services "${missing[@]}"
fi

# Make sure the packaged nginx service is not running and will not start at boot.
if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
    if systemctl list-unit-files nginx.service >/dev/null 2>&1; then
        "${SUDO[@]}" systemctl disable --now nginx.service >/dev/null 2>&1 || true
    fi
fi
if [[ -x /etc/init.d/nginx ]]; then
    "${SUDO[@]}" /etc/init.d/nginx stop >/dev/null 2>&1 || true
fi

# oha, pinned, built from crates.io into .tools/oha (ignored by git, like Helm in .tools/).
OHA_VERSION=1.16.0
OHA="$ROOT/.tools/oha/bin/oha"
if [[ "$("$OHA" --version 2>/dev/null)" != "oha $OHA_VERSION" ]]; then
    log "cargo install oha $OHA_VERSION (a few minutes, once)"
    export PATH="$HOME/.cargo/bin:$PATH"
    cargo install --quiet --locked --force oha --version "$OHA_VERSION" --root "$ROOT/.tools/oha" \
        || die "cargo install oha failed"
fi

# skopeo, docker-registry (and Helm, gnupg for the tests): the project's own installer.
"$ROOT/scripts/install-tools.sh" >/dev/null

export PATH="$PATH:/usr/sbin"
for t in wrk nginx gnuplot openssl curl h2load docker-registry; do
    command -v "$t" >/dev/null 2>&1 || die "$t is still missing"
done
printf 'wrk             %s\n' "$(wrk -v 2>&1 | awk 'NR==1{print $2}')"
printf 'nginx           %s\n' "$(nginx -v 2>&1 | sed 's/.*nginx\///')"
printf 'gnuplot         %s\n' "$(gnuplot --version | awk '{print $2"."$4}')"
printf 'docker-registry %s\n' "$(docker-registry --version 2>&1 | awk '{print $3}')"
printf 'oha             %s\n' "$("$OHA" --version | awk '{print $2}')"
printf 'h2load          %s\n' "$(h2load --version | awk 'NR==1{print $2}')"
