#!/usr/bin/env bash
# Install what builds and runs the other platform's server on this machine (linux/arm64 on an
# amd64 one, linux/amd64 on an arm64 one): Debian's own Rust (rustc-web, bookworm-security:
# /usr/bin/rustc, sysroot /usr) with the other architecture's standard library
# (libstd-rust-web-dev:ARCH, a multiarch package: dpkg learns the architecture first), the cross
# C compiler and static C library that link it, and qemu-user (qemu-aarch64-static,
# qemu-x86_64-static) with the other architecture's C library, which run the results in the
# tests. `chartreg-build build` finds that
# library in /usr's sysroot when rustup's rustc has none.
#
# Used by the other platform's make targets (build-arm64, image-multiplatform, test-arm64,
# dist-aarch64), not by `make tools`: `make test` builds and tests linux/amd64 only.
# Idempotent: with everything present it installs nothing. Run from anywhere.
set -euo pipefail

log() { printf '[install-cross] %s\n' "$*" >&2; }
die() { printf '[install-cross] ERROR: %s\n' "$*" >&2; exit 1; }

case "$(dpkg --print-architecture)" in
    amd64) OTHER=arm64 OTHER_GNU=aarch64-linux-gnu OTHER_CROSS=gcc-aarch64-linux-gnu OTHER_QEMU=qemu-aarch64-static
           OTHER_LIBC=libc6-dev-arm64-cross OTHER_TRIPLE=aarch64-unknown-linux-gnu
           OTHER_LD=/lib/ld-linux-aarch64.so.1 ;;
    arm64) OTHER=amd64 OTHER_GNU=x86_64-linux-gnu OTHER_CROSS=gcc-x86-64-linux-gnu OTHER_QEMU=qemu-x86_64-static
           OTHER_LIBC=libc6-dev-amd64-cross OTHER_TRIPLE=x86_64-unknown-linux-gnu
           OTHER_LD=/lib64/ld-linux-x86-64.so.2 ;;
    *) die "no cross build set up for $(dpkg --print-architecture)" ;;
esac
cross=()
[[ -x /usr/bin/rustc ]] || cross+=(rustc-web)
compgen -G "/usr/lib/rustlib/$OTHER_TRIPLE/lib/libstd-*.rlib" >/dev/null || cross+=("libstd-rust-web-dev:$OTHER")
command -v "$OTHER_GNU-gcc" >/dev/null 2>&1 || cross+=("$OTHER_CROSS")
[[ -f "/usr/$OTHER_GNU/lib/libc.a" ]] || cross+=("$OTHER_LIBC")
command -v "$OTHER_QEMU" >/dev/null 2>&1 || cross+=(qemu-user-static)
# The other architecture's own C library (multiarch), which qemu-user runs the other platform's
# dynamically linked programs with (the build tool): the cross packages' copy under
# /usr/$OTHER_GNU, given with `qemu -L`, hangs in pthread_create under Debian 12's qemu 7.2.
[[ -e "$OTHER_LD" ]] || cross+=("libc6:$OTHER")
if ((${#cross[@]})); then
    if ! dpkg --print-foreign-architectures | grep -qx "$OTHER"; then
        log "dpkg --add-architecture $OTHER"
        sudo_=(); [[ "$(id -u)" == 0 ]] || sudo_=(sudo)
        "${sudo_[@]}" dpkg --add-architecture "$OTHER"
    fi
    log "apt-get install ${cross[*]}"
    # shellcheck source=scripts/apt-install.sh
    source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
    apt_install_no_services "${cross[@]}"
fi
compgen -G "/usr/lib/rustlib/$OTHER_TRIPLE/lib/libstd-*.rlib" >/dev/null ||
    die "libstd-rust-web-dev:$OTHER installed no standard library for $OTHER_TRIPLE"
for t in /usr/bin/rustc "$OTHER_GNU-gcc" "$OTHER_QEMU"; do
    command -v "$t" >/dev/null 2>&1 || die "$t is still missing"
done
[[ -e "$OTHER_LD" ]] || die "libc6:$OTHER installed no $OTHER_LD"

printf 'rustc (Debian)  %s  (/usr/bin/rustc, with %s)\n' "$(/usr/bin/rustc --version | awk '{print $2}')" "$OTHER_TRIPLE"
printf '%-15s %s\n' "$OTHER_GNU-gcc" "$("$OTHER_GNU-gcc" -dumpfullversion)"
printf '%-15s %s\n' "$OTHER_QEMU" "$("$OTHER_QEMU" --version | awk 'NR==1{print $3}')"
