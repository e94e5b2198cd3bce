# Sourced by scripts/install-tools.sh, scripts/install-cross.sh and scripts/install-bench-tools.sh (not run on its own).
#
#   apt_install_no_services PACKAGE...
#
# Installs Debian packages quietly, with sudo when not root, while forbidding the services they
# bring to start (docker-registry would listen on :5000, chartreg's default port; nginx on :80):
# a policy-rc.d that answers 101 ("action not allowed") is put in place for the install unless
# one already exists, in which case it is left untouched. Exits with a message naming the
# packages when the install fails. The caller defines `die`.
apt_install_no_services() {
    local sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo)
    local policy=/usr/sbin/policy-rc.d own_policy=0 apt_ok=1
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 0755 "$policy"
        own_policy=1
    fi
    "${sudo[@]}" apt-get update -qq || apt_ok=0
    if ((apt_ok)); then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "$@" >/dev/null || apt_ok=0
    fi
    if ((own_policy)); then
        "${sudo[@]}" rm -f "$policy"
    fi
    ((apt_ok)) || die "apt-get install $* failed"
}
