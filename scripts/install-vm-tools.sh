#!/usr/bin/env bash
# Install what `make cgroup-v2-vm` (scripts/cgroup-v2-vm.sh) needs on this machine, each only
# when missing:
#
#   qemu-system-x86 (qemu-system-x86_64: the VM, under TCG)      (Debian packages)
#   mmdebstrap, debian-archive-keyring (the VM's root file system)
#   e2fsprogs (mkfs.ext4 -d: the root and the inputs as disk images)
#
# The VM's kernel, Debian's linux-image-amd64, is installed into the VM's root by mmdebstrap,
# not onto this machine: its vmlinuz and initrd are taken from there.
#
# Idempotent; a second run takes well under a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '[install-vm-tools] %s\n' "$*" >&2; }
die() { printf '[install-vm-tools] ERROR: %s\n' "$*" >&2; exit 1; }

missing=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || missing+=(debian-archive-keyring)
{ command -v mkfs.ext4 >/dev/null 2>&1 || [[ -x /sbin/mkfs.ext4 ]]; } || missing+=(e2fsprogs)

if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    # shellcheck source=scripts/apt-install.sh
    source "$ROOT/scripts/apt-install.sh"
    apt_install_no_services "${missing[@]}"
fi

for t in qemu-system-x86_64 mmdebstrap; do
    command -v "$t" >/dev/null 2>&1 || die "$t is still missing"
done
printf 'qemu-system-x86_64 %s\n' "$(qemu-system-x86_64 --version | awk 'NR==1{print $4}')"
printf 'mmdebstrap         %s\n' "$(mmdebstrap --version | awk '{print $2}')"
