#!/bin/sh
# in-root.sh ROOT ARG...: `env -i ARG...` chrooted into the root file system ROOT, as a container
# runs it: /proc, a /dev of the nodes compilers open (null, zero, full, random, urandom, fd).
# Run it in new mount and network namespaces (`unshare --net --mount --fork -- scripts/in-root.sh
# ...`): the mounts end with the namespace. Used by make-builder-image.sh and the builder image's
# test.
set -e
root=$1
shift
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=0755,size=1m dev "$root/dev"
for node in null zero full random urandom; do
    touch "$root/dev/$node"
    mount --bind "/dev/$node" "$root/dev/$node"
done
ln -s /proc/self/fd "$root/dev/fd"
exec chroot "$root" /usr/bin/env -i "$@"
