#!/usr/bin/env bash
# mpirun's launch agent in place of ssh (--mca plm_rsh_agent): called as
#
#   agent.sh HOSTNAME COMMAND WORDS...
#
# it runs the command words, joined and read by a shell as ssh does, on the
# "host" HOSTNAME of test/multihost/run.sh: in the namespaces of host.sh. The
# host-to-namespace map is UM_MULTIHOST_NETNS ("host1=netns1 host2=netns2").
set -eu
host=$1
shift
ns=""
for pair in ${UM_MULTIHOST_NETNS:-}; do
    [ "${pair%%=*}" = "$host" ] && ns=${pair#*=}
done
[ -n "$ns" ] || { echo "agent.sh: unknown host '$host'; known: ${UM_MULTIHOST_NETNS:-none}" >&2; exit 255; }
exec "$(dirname "$0")/host.sh" "$ns" "$host" sh -c "$*"
