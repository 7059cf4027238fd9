#!/usr/bin/env bash
# Several hosts on this one machine: two network namespaces joined by a veth
# pair, each a "host" with its own address, host name, IPC, /dev/shm and
# process ids (host.sh); mpirun runs on the first and reaches the second
# through a launch agent that enters its namespaces (agent.sh) instead of ssh.
# Nothing leaves the machine: the namespaces see only each other.
#
#   test/multihost/run.sh [BUILD_DIR]          (root; iproute2, util-linux)
#   test/multihost/run.sh --probe              can the hosts be made here? (0 or 77)
#
# Runs pingpong and ordering (test/mpi; UM_MULTIHOST_TESTS="a b": others,
# "all": every MPI test) with their ranks of run-one.sh and the fds proxy with
# 4 ranks, dealt round robin (--map-by node: even ranks on the first host, odd
# on the second), backend auto (UM_MULTIHOST_BACKENDS="a b": others), and prints for
# each job the ranks of each host, the backend and the UCX transports between
# ranks of the same host and of different hosts. A job passes when it
# exits 0 and printed its PASS line, its ranks were on both hosts, every rank
# called a peer "same node" exactly when it was on its host, no shared-memory
# transport of UCX joined two hosts, and no rank used more of our rings than it
# has peers on its host. Exit 0: all passed; 1: a failure; 77: namespaces
# cannot be made here (prints "skipped: ...").
# UM_MULTIHOST_BENCH="posted:0,posted:1024,...": then also the deep-queue
# benchmark (bench/mpi/queue_bench --points ...) between the two hosts (np 2),
# per backend; its numbers are printed, not checked. UM_MULTIHOST_BENCH_PMLS="ubermatch
# ucx ob1" compares with Open MPI's PMLs (ob1 over its TCP BTL).
set -u
cd "$(dirname "$0")/../.."
top=$PWD
probe=false
[ "${1:-}" = --probe ] && { probe=true; shift; }
build=${1:-build}
here=$top/test/multihost
backends=${UM_MULTIHOST_BACKENDS:-auto}

skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root (network namespaces need it)"
command -v ip >/dev/null || skip "no 'ip' (Debian package iproute2)"
command -v unshare >/dev/null || skip "no 'unshare' (Debian package util-linux)"

tag=um$$
ns1=${tag}h1 ns2=${tag}h2
host1=umhost1 host2=umhost2
addr1=10.77.0.1 addr2=10.77.0.2
work=$(mktemp -d /tmp/um-multihost.XXXXXX)
cleanup() {
    ip netns del "$ns1" 2>/dev/null
    ip netns del "$ns2" 2>/dev/null # the veth pair goes with it
    rm -rf "/etc/netns/$ns1" "/etc/netns/$ns2" "$work"
    rmdir /etc/netns 2>/dev/null
    return 0
}
trap cleanup EXIT
ip netns add "$ns1" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$ns2" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
if ! { ip link add "${tag}a" netns "$ns1" type veth peer name "${tag}b" netns "$ns2" &&
       ip -n "$ns1" addr add $addr1/24 dev "${tag}a" && ip -n "$ns2" addr add $addr2/24 dev "${tag}b" &&
       ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up &&
       ip -n "$ns1" link set "${tag}a" up && ip -n "$ns2" link set "${tag}b" up; } 2>"$work/err"; then
    skip "cannot make a veth pair between namespaces: $(cat "$work/err")"
fi
# UCX lists only interfaces that are running when a process starts: wait for the
# pair's carrier (it came up late once in 4 runs, and UCX then had no way between hosts).
for i in $(seq 50); do
    ip -n "$ns1" -o link show dev "${tag}a" | grep -q 'LOWER_UP.* state UP' &&
        ip -n "$ns2" -o link show dev "${tag}b" | grep -q 'LOWER_UP.* state UP' && break
    sleep 0.1
done
"$here/host.sh" "$ns1" $host1 true 2>"$work/err" ||
    skip "cannot enter a host's namespaces (unshare --uts --ipc --pid, a tmpfs on /dev/shm): $(cat "$work/err")"
if $probe; then
    echo "namespaces and a veth pair can be made here"
    exit 0
fi
for ns in "$ns1" "$ns2"; do # each host resolves both names, as on a cluster
    mkdir -p "/etc/netns/$ns"
    printf '127.0.0.1 localhost\n%s %s\n%s %s\n' $addr1 $host1 $addr2 $host2 >"/etc/netns/$ns/hosts"
done
printf '%s slots=2\n%s slots=2\n' $host1 $host2 >"$work/hostfile"
export UM_MULTIHOST_NETNS="$host1=$ns1 $host2=$ns2"
. scripts/env.sh

echo "hosts: $host1 ($addr1, netns $ns1), $host2 ($addr2, netns $ns2), veth ${tag}a-${tag}b"
# The MPI tests' binaries, from the build tree (make check's programs).
tests=${UM_MULTIHOST_TESTS:-pingpong ordering}
if [ "$tests" = all ]; then
    tests=$(make --no-print-directory -s -C "$build" print-mpi-tests | xargs -n1 basename | grep -vx rma) || exit 1
    # Stock Open MPI 4.1.4 makes no window between these hosts with any PML
    # (MPI_Win_allocate: MPI_ERR_WIN with ob1 over TCP and with pml_ucx too):
    # osc/rdma wants an RDMA network, osc/ucx UCX's RDMA transports.
    echo "SKIP rma between hosts: Open MPI 4.1.4's one-sided components make no window over TCP here (ob1, pml_ucx alike)"
fi
progs=()
for t in $tests; do progs+=("test/mpi/$t"); done
make --no-print-directory -s -C "$build" "${progs[@]}" || exit 1

passed=0
failed=0
# job NAME NP BACKEND PROGRAM [ARGS...]: runs it from the first host and checks it.
job() {
    local name=$1 np=$2 backend=$3
    shift 3
    local log=$work/$name.log start=$SECONDS
    timeout -k 5 60 "$here/host.sh" "$ns1" $host1 mpirun --hostfile "$work/hostfile" \
        --mca plm_rsh_agent "$here/agent.sh" --mca oob_tcp_if_include 10.77.0.0/24 \
        -np "$np" --oversubscribe --map-by node --mca pml ubermatch --mca pml_ubermatch_backend "$backend" \
        --mca pml_ubermatch_verbose 2 "$@" >"$log" 2>&1 </dev/null
    local rc=$?
    # "rank R on H: connected to process P (same|other node), UCX T"
    local conns
    conns=$(sed -n 's/.*pml_ubermatch: rank \([0-9]*\) on \([^:]*\): connected to process \([0-9]*\) (\([a-z]*\) node), UCX \(.*\)$/\1 \2 \3 \4 \5/p' "$log")
    local -A host_of=()
    local r h p where tls bad=""
    while read -r r h p where tls; do
        [ -n "$r" ] && host_of[$r]=$h
    done <<<"$conns"
    local placement=""
    local -A on_host=()
    for h in "${host_of[@]}"; do on_host[$h]=$((${on_host[$h]:-0} + 1)); done
    for ((r = 0; r < np; r++)); do
        placement+="rank $r on ${host_of[$r]:-?}, "
        [ "${host_of[$r]:-}" = "$([ $((r % 2)) -eq 0 ] && echo $host1 || echo $host2)" ] ||
            bad+="rank $r not on its host; "
    done
    local same="" other=""
    while read -r r h p where tls; do
        [ -n "$r" ] || continue
        [ "$p" = "$r" ] && continue # itself: UCX's self transport
        local expect=other
        [ "${host_of[$p]:-}" = "$h" ] && expect=same
        [ "$where" = "$expect" ] || bad+="rank $r ($h) called process $p (${host_of[$p]:-?}) $where node; "
        if [ "$expect" = same ]; then
            same+="$tls"$'\n'
        else
            other+="$tls"$'\n'
            echo "$tls" | grep -Eq '(^| )(posix|sysv|xpmem|knem|cma)/' &&
                bad+="rank $r reached process $p on the other host through shared memory ($tls); "
        fi
    done <<<"$conns"
    [ -n "$other" ] || bad+="no connection between hosts; "
    # "rank R: shared-memory rings: S messages sent through N, ..."
    local rings
    rings=$(sed -n 's/.*rank \([0-9]*\): shared-memory rings: [0-9]* messages sent through \([0-9]*\),.*/\1 \2/p' "$log")
    local peers
    while read -r r n; do
        [ -n "$r" ] || continue
        peers=$((${on_host[${host_of[$r]:-?}]:-1} - 1))
        [ "$n" -gt "$peers" ] && bad+="rank $r wrote to $n rings, it has $peers peers on its host; "
    done <<<"$rings"
    # unanchored: mpirun can split a long stderr line around it (run-one.sh)
    local pass
    pass=$(grep -m1 -o "PASS ${name%% *} .*" "$log")
    if [ $rc -eq 0 ] && [ -n "$pass" ] && [ -z "$bad" ]; then
        passed=$((passed + 1))
        echo "PASS $name, backend $backend, np $np ($((SECONDS - start)) s): $pass"
    else
        failed=$((failed + 1))
        echo "FAIL $name, backend $backend, np $np (exit code $rc, $((SECONDS - start)) s): ${bad:-no PASS line}"
        tail -n 20 "$log" | sed 's/^/    | /'
    fi
    echo "    ${placement%, }"
    echo "    same host:  UCX $(sort -u <<<"$same" | sed '/^$/d' | paste -sd';' | sed 's/;/; /g')"
    echo "    other host: UCX $(sort -u <<<"$other" | sed '/^$/d' | paste -sd';' | sed 's/;/; /g')"
    echo "    rings: $(sort -n <<<"$rings" | awk 'NF { printf "%srank %s %s", s, $1, $2; s = ", " }') (rings written per rank)"
}

for backend in $backends; do
    for t in $tests; do
        job "$t" "$(test/mpi/run-one.sh --ranks "$t")" "$backend" "$build/test/mpi/$t"
    done
    job "fds proxy" 4 "$backend" "$build/examples/proxies/fds" --size 4 --iters 3
done
if [ -n "${UM_MULTIHOST_BENCH:-}" ]; then
    for pml in ${UM_MULTIHOST_BENCH_PMLS:-ubermatch}; do
        runs=$backends
        [ "$pml" = ubermatch ] || runs=-
        for backend in $runs; do
            args=(--mca pml "$pml")
            label="pml $pml"
            [ "$pml" = ubermatch ] && args+=(--mca pml_ubermatch_backend "$backend") &&
                label+=", backend $backend"
            [ "$pml" = ob1 ] && args+=(--mca btl self,vader,tcp)
            # pml_ucx takes only RDMA transports unless told otherwise
            [ "$pml" = ucx ] && args+=(--mca pml_ucx_tls any --mca pml_ucx_devices any)
            echo "queue_bench between the hosts, $label (rank 0 on $host1, rank 1 on $host2):"
            timeout -k 5 300 "$here/host.sh" "$ns1" $host1 mpirun --hostfile "$work/hostfile" \
                --mca plm_rsh_agent "$here/agent.sh" --mca oob_tcp_if_include 10.77.0.0/24 -np 2 \
                --map-by node "${args[@]}" "$build/bench/mpi/queue_bench" \
                --points "$UM_MULTIHOST_BENCH" --reps 3 --time 0.5 </dev/null 2>&1 | sed 's/^/    /' 
        done
    done
fi
echo "multihost: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
