#!/usr/bin/env bash
# Checks of the components as a user meets them: ompi_info lists every MCA
# parameter with its description and valid values, bad settings stop
# start-up with a message that names the valid choices, and coll/ubermatch
# reports collectives to the PML under pml ubermatch and stays out of the way
# under ob1.
# usage: test/mpi/check-component.sh PROGRAM "list, perpeer, ..." [COLL_PROGRAM [NEWCOMM]]
#   PROGRAM: an MPI program to start (e.g. pingpong_demo); then the registered
#   backends as the engine names them (engine_demo --list-backends, joined by ", ");
#   COLL_PROGRAM: examples/mpi/coll_demo (default: beside PROGRAM);
#   NEWCOMM: the MPI test newcomm (default: build/test/mpi/newcomm of PROGRAM's tree).
set -uo pipefail
program=${1:?usage: check-component.sh PROGRAM BACKENDS [COLL_PROGRAM]}
backends=${2:?usage: check-component.sh PROGRAM BACKENDS [COLL_PROGRAM]}
coll_program=${3:-$(dirname "$program")/coll_demo}
newcomm=${4:-$(dirname "$program")/../../test/mpi/newcomm}
failed=0
check() { # description, command...
    local what=$1
    shift
    if "$@"; then
        echo "PASS $what"
    else
        echo "FAIL $what"
        failed=1
    fi
}

info=$(ompi_info --param pml ubermatch --level 9 2>&1)
for param in backend bins kernel compact_threshold theta k_c k_p index_at list_at index_rent max_index_bytes verbose print_stats ucx_tls ucx_rndv_thresh shm_eager_limit shm_pull shm_stage_max shm_pack_stage assertions hwloc threading priority max_contextid trace trace_direct; do
    check "ompi_info lists pml_ubermatch_$param" grep -q "parameter \"pml_ubermatch_$param\"" <<<"$info"
done
check "ompi_info names the valid backends" grep -qF "Valid values: $backends" <<<"$info"
check "ompi_info lists the pvars" grep -q 'performance "pml_ubermatch_posted_length"' <<<"$info"
check "ompi_info lists the false-positive pvar" grep -q 'performance "pml_ubermatch_false_positives"' <<<"$info"
check "ompi_info reports the SIMD kernel of this CPU" grep -Eq 'informational "pml_ubermatch_kernel_detected" \(current value: "(avx512|avx2|scalar)"' <<<"$info"
check "ompi_info names the valid kernels" grep -qF "Valid values: auto, avx512, avx2, scalar" <<<"$info"

# An unknown backend aborts start-up and names the valid ones.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend hashmap "$program" 2>&1)
rc=$?
check "unknown backend fails start-up" test $rc -ne 0
check "unknown backend names the valid ones" grep -qF "unknown matching backend 'hashmap'; valid backends are: $backends" <<<"$out"

# A relaxed backend for every communicator: rank 0 says once, at start-up, what it
# gives up (PROGRAM's wildcard receives then fail, as they must).
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend overtake "$program" 2>&1)
check "backend overtake: one warning naming its assertions and the reordering" test "$(grep -c "warning: pml_ubermatch_backend = overtake: every communicator matches as if its info asserted mpi_assert_no_any_source,mpi_assert_no_any_tag,mpi_assert_allow_overtaking (messages of one source and tag may be received out of order)" <<<"$out")" -eq 1
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch "$program" 2>&1)
check "the default backend warns of nothing" test "$(grep -c "pml_ubermatch: warning" <<<"$out")" -eq 0

# A parameter out of range is refused with its range.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend bins --mca pml_ubermatch_bins 0 "$program" 2>&1)
rc=$?
check "bins = 0 fails start-up" test $rc -ne 0
check "bins = 0 names the valid range" grep -q "bins = 0 is out of range; valid values are 1 .. 1048576" <<<"$out"

# ... whatever the backend: bins under the default (auto, which has no bins) too.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_bins -3 "$program" 2>&1)
rc=$?
check "bins = -3 under auto fails start-up" test $rc -ne 0
check "bins = -3 under auto names the valid range" grep -q "bins = -3 is out of range; valid values are 1 .. 1048576" <<<"$out"

# A negative rendezvous threshold (UCX would read -2 as its own "auto") is refused.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_ucx_rndv_thresh -2 "$program" 2>&1)
rc=$?
check "ucx_rndv_thresh = -2 fails start-up" test $rc -ne 0
check "ucx_rndv_thresh = -2 names the valid forms" grep -qF "pml_ubermatch_ucx_rndv_thresh = -2 is not a size; valid values: bytes with an optional unit (8k, 64k, 1m), auto or inf" <<<"$out"

out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_shm_eager_limit 100000 "$program" 2>&1)
rc=$?
check "shm_eager_limit = 100000 fails start-up" test $rc -ne 0
check "shm_eager_limit = 100000 names the valid range" grep -q "shm_eager_limit = 100000 is out of range; valid values are 0 .. 65496" <<<"$out"

out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_assertions strict "$program" 2>&1)
rc=$?
check "assertions = strict fails start-up" test $rc -ne 0
check "assertions = strict names the valid values" grep -q "pml_ubermatch_assertions = strict is not valid; valid values are honour (or honor), all, ignore" <<<"$out"
check "ompi_info lists the relaxed-engine pvar" grep -q 'performance "pml_ubermatch_relaxed"' <<<"$info"

# PARAM VALUE WHY: pml_ubermatch_PARAM = VALUE stops start-up, saying "pml_ubermatch_PARAM = VALUE WHY".
refused() {
    local out rc
    out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca "pml_ubermatch_$1" "$2" "$program" 2>&1)
    rc=$?
    check "$1 = $2 fails start-up" test $rc -ne 0
    check "$1 = $2 says why: $3" grep -qF "pml_ubermatch_$1 = $2 $3" <<<"$out"
}
# PARAM VALUE RANGE: the same, naming RANGE.
refused_range() {
    refused "$1" "$2" "is out of range; valid values are $3"
}
# An unknown threading mode is refused (whatever the thread level), naming the valid ones.
refused threading lockfree "is not valid; valid values: global, tailq"
# How the trace is written: a typo is refused with or without a trace asked for.
refused trace_direct yes "is not valid; valid values: false, true, auto"
check "trace_direct defaults to auto" grep -q 'parameter "pml_ubermatch_trace_direct" (current value: "auto"' <<<"$info"
for bins in 0 257; do
    refused_range tailq_bins $bins "1 .. 256"
done
check "ompi_info lists tailq_bins" grep -q 'parameter "pml_ubermatch_tailq_bins"' <<<"$(ompi_info --param pml ubermatch --level 9)"
check "max_contextid defaults to ob1's 65535" grep -q 'parameter "pml_ubermatch_max_contextid" (current value: "65535"' <<<"$info"
for max in 10 4294967295; do
    refused_range max_contextid $max "64 .. 4294967294"
done
for max in 100 67108865; do
    refused_range shm_stage_max $max "0 (never) and 12288 .. 67108864"
done
check "shm_stage_max defaults to 8 MiB" grep -q 'parameter "pml_ubermatch_shm_stage_max" (current value: "8388608"' <<<"$info"
check "shm_pack_stage defaults to measure" grep -q 'parameter "pml_ubermatch_shm_pack_stage" (current value: "measure"' <<<"$info"
refused shm_pack_stage sometimes "is not valid; valid values: measure, always, never"
# The limit holds: with 100 context ids the 100th MPI_Comm_dup fails (an error,
# not an abort), and once the communicators are freed a dup works again.
out=$(timeout 120 mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_max_contextid 100 -x NEWCOMM_LIMIT=100 \
    "$newcomm" 2>&1)
check "max_contextid = 100: a dup refused before the 100th, then freed and made again" \
    grep -qE "newcomm: round F: [0-9]+ dups made, the next refused" <<<"$out"
check "max_contextid = 100: newcomm passes" grep -q "PASS newcomm" <<<"$out"

# auto: list_at must stay below index_at (the hysteresis gap).
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend auto --mca pml_ubermatch_index_at 16 --mca pml_ubermatch_list_at 16 "$program" 2>&1)
rc=$?
check "list_at = index_at fails start-up" test $rc -ne 0
check "list_at = index_at names the valid range" grep -q "list_at = 16 is out of range; valid values are 0 .. 15" <<<"$out"
check "the default backend is auto" grep -q 'parameter "pml_ubermatch_backend" (current value: "auto"' <<<"$info"

# auto indexes deep queues (pingpong_demo queues 16 unexpected messages; index_at 4
# indexes them) and reports it.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_index_at 4 --mca pml_ubermatch_list_at 2 --mca pml_ubermatch_print_stats 1 "$program" 2>&1)
check "auto with index_at 4 runs" test $? -eq 0
check "auto reports its changes of form" grep -Eq 'auto: [0-4] of 4 queues indexed now, [1-9][0-9]* changes of form' <<<"$out"

# An unknown SIMD kernel is refused whatever the backend, with the valid ones.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_kernel sse9 "$program" 2>&1)
rc=$?
check "unknown kernel fails start-up" test $rc -ne 0
check "unknown kernel names the valid ones" grep -qF "unknown kernel 'sse9'; valid kernels are: auto, avx512, avx2, scalar" <<<"$out"

# Collective traffic reaches the engine as collective (negative tags give the hint),
# and print_stats reports what each engine did.
out=$(timeout 60 mpirun -np 3 --mca pml ubermatch --mca pml_ubermatch_print_stats 1 "$program" 2>&1)
check "print_stats reports every rank's MPI_COMM_WORLD engine" test "$(grep -c 'MPI_COMM_WORLD (cid 0), engine' <<<"$out")" -eq 3
check "collective messages carry the collective hint" grep -Eq '[1-9][0-9]* collective\)' <<<"$out"
check "point-to-point messages carry none" grep -Eq '\([1-9][0-9]* p2p' <<<"$out"

# hwloc sizes the rings from this machine's L2 and says so at verbose 1 (4 processes:
# 6 rings each, smaller than 256 KiB where the L2 is under 1.5 MiB); the rings each
# rank mapped have that size; off: 256 KiB.
ring_sizes() { # the KiB per ring that each rank mapped, one line per rank that mapped any
    sed -n 's/.*received through \([1-9][0-9]*\) of \([0-9]*\) KiB in all.*/\1 \2/p' | awk '{ print $2 / $1 }'
}
out=$(timeout 60 mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_verbose 1 "$program" 2>&1)
check "hwloc sizes the rings (verbose 1)" test "$(grep -Ec 'hwloc: L2 cache [0-9]+ [KM]iB per core, 4 processes on this node, 6 rings per process: rings of [0-9]+ KiB' <<<"$out")" -eq 4
kib=$(sed -n 's/.*hwloc: .* rings of \([0-9]*\) KiB (.*/\1/p' <<<"$out" | sort -u)
grep -m1 'hwloc: ' <<<"$out" | sed 's/^.*pml_ubermatch: /    /'
check "the rings mapped have hwloc's size ($kib KiB)" test -n "$(ring_sizes <<<"$out")" -a "$(ring_sizes <<<"$out" | sort -u)" = "$kib"
out=$(timeout 60 mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_verbose 1 --mca pml_ubermatch_hwloc 0 "$program" 2>&1)
check "pml_ubermatch_hwloc 0: says so" grep -q 'hwloc: not asked (pml_ubermatch_hwloc 0, shm_eager_limit 32768): rings of 256 KiB' <<<"$out"
check "pml_ubermatch_hwloc 0: rings of 256 KiB" test "$(ring_sizes <<<"$out" | sort -u)" = 256

# A good setting runs.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend bins --mca pml_ubermatch_bins 7 "$program" 2>&1)
check "bins = 7 runs" test $? -eq 0

# coll/ubermatch: its parameters; under pml ubermatch it is active and the PML hears of
# every collective of coll_demo with its message size and communicator size (verbose 3),
# the messages of MPI_Iallreduce are hinted as that call's through its tags, and none
# falls back to its tag (print_stats).
info=$(ompi_info --param coll ubermatch --level 9 2>&1)
for param in priority verbose; do
    check "ompi_info lists coll_ubermatch_$param" grep -q "parameter \"coll_ubermatch_$param\"" <<<"$info"
done
out=$(timeout 60 mpirun -np 4 --mca pml ubermatch --mca coll_ubermatch_verbose 1 \
    --mca pml_ubermatch_verbose 3 --mca pml_ubermatch_print_stats 1 "$coll_program" 2>&1)
rc=$?
check "coll_demo runs under pml ubermatch" test $rc -eq 0
check "coll/ubermatch is active on every rank" test "$(grep -c 'coll_ubermatch: active' <<<"$out")" -eq 4
check "MPI_Allreduce of 1000 doubles reaches the PML as 8000 bytes on 4 processes" \
    test "$(grep -c 'MPI_COMM_WORLD (cid 0): allreduce begins: 8000 bytes, 4 processes' <<<"$out")" -eq 4
check "MPI_Bcast of 256 ints reaches the PML as 1024 bytes" \
    test "$(grep -c 'MPI_COMM_WORLD (cid 0): bcast begins: 1024 bytes, 4 processes' <<<"$out")" -eq 4
check "MPI_Iallreduce reaches the PML with the tags it reserved" \
    test "$(grep -Ec 'MPI_COMM_WORLD \(cid 0\): iallreduce started: 2000 bytes, 4 processes, tags -[0-9]+\.\.-[0-9]+' <<<"$out")" -eq 4
check "messages of a nonblocking collective are hinted as its call, by their tags" \
    grep -Eq "MPI_COMM_WORLD \(cid 0\): coll/ubermatch reported 5 calls \(1 nonblocking, 0 nested\); .* by a nonblocking call's tags [1-9]" <<<"$out"
check "no collective message of coll_demo falls back to its tag" \
    test "$(grep -c 'coll/ubermatch reported 5 calls .*by their tag alone 0$' <<<"$out")" -eq 4
check "collective messages reach the engine as collective" grep -Eq '[1-9][0-9]* collective\)' <<<"$out"

# Without coll/ubermatch the tags still classify the collective traffic.
out=$(timeout 60 mpirun -np 4 --mca pml ubermatch --mca coll ^ubermatch --mca pml_ubermatch_print_stats 1 \
    "$coll_program" 2>&1)
check "without coll/ubermatch collective messages are hinted by their tags" \
    grep -Eq 'coll/ubermatch reported 0 calls .*by their tag alone [1-9]' <<<"$out"

# Under another PML it stays inactive, and the collectives run.
out=$(timeout 60 mpirun -np 4 --mca pml ob1 --mca coll_ubermatch_verbose 1 "$coll_program" 2>&1)
rc=$?
check "coll_demo runs under pml ob1" test $rc -eq 0
check "coll/ubermatch is inactive under pml ob1" \
    test "$(grep -c 'coll_ubermatch: not active: the PML is ob1, not ubermatch' <<<"$out")" -eq 4
check "coll_demo's collectives are right under pml ob1" grep -q 'coll_demo: 4 ranks, .* 0 errors, OK' <<<"$out"

exit $failed
