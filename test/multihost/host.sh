#!/usr/bin/env bash
# Runs a command as if on another host of this machine:
#
#   test/multihost/host.sh NETNS HOSTNAME COMMAND [ARGS...]
#
# in network namespace NETNS (its own addresses: nothing else reaches it), with
# its own host name (UTS namespace), System V IPC, /dev/shm, process ids and
# /proc. So nothing that is shared on one real node is shared between two of
# these "hosts": neither Open MPI's idea of a node nor UCX's shared-memory
# transports (which compare IPC and PID namespaces), nor our rings' files.
# Files in /etc/netns/NETNS/ (the hosts file) replace those in /etc. The
# command's process tree ends with it (--kill-child, and it is PID 1).
set -eu
[ $# -ge 3 ] || { echo "usage: $0 NETNS HOSTNAME COMMAND [ARGS...]" >&2; exit 2; }
ns=$1
name=$2
shift 2
exec ip netns exec "$ns" unshare --uts --ipc --pid --fork --kill-child --mount-proc \
    sh -c 'hostname "$0" && mount -t tmpfs -o mode=1777,size=1g um-shm /dev/shm && exec "$@"' \
    "$name" "$@"
