#!/usr/bin/env bash
# MPI-level test suite for a PML (ubermatch, or a stock one to check the tests).
#
# usage: test/mpi/run-mpi-tests.sh LOG_DIR [extra mpirun args...]
#   e.g. test/mpi/run-mpi-tests.sh /tmp/mpitests --mca pml ob1
#        test/mpi/run-mpi-tests.sh /tmp/mpitests --mca pml ob1 --mca btl self,tcp
#        test/mpi/run-mpi-tests.sh /tmp/mpitests --mca pml ubermatch
#
# The tests are the build tree's (UM_BUILD, default build/ of this clone;
# test/mpi/local.mk's UM_MPI_TESTS, in that order), brought up to date with
# make first. Each runs through test/mpi/run-one.sh (mpirun, ranks, time limit,
# verdict: the same as in `make check`) with the extra arguments, which prints
# "PASS name (...)" or "FAIL name (reason)"; a failure is followed by the last
# lines of the test's output. The last line is always
#   mpi tests: N passed, M failed
# and the exit status is non-zero when any test failed (or none ran).
#
# Environment:
#   MPI_TESTS_ONLY="a b"   run only these tests (names without directory)
#   MPI_TESTS_SKIP="x y"   skip these tests
#   MPI_TESTS_VERBOSE=1    print every test's full output
#   UM_BUILD=build         the configured build tree
#   MPI_TESTS_TIMEOUT, MPIRUN: see run-one.sh
# Each test's full output is kept in LOG_DIR/<test>.log.
#
# Tests (ranks: run-one.sh):
#   pingpong       0 B, 1 B, 2^k up to 16 MiB; blocking and nonblocking
#   ordering       non-overtaking, wildcard vs specific receives, posted
#                  and unexpected queues, 5 senders
#   unexpected     10^5 unexpected messages, drained in MPI order
#   probe          Probe/Iprobe/Mprobe/Improbe, Mrecv/Imrecv
#   persistent     Send/Recv/Ssend/Bsend/Rsend_init, Start(all), free
#   ssend          Issend not complete before matched; Ssend 0 B/1 MiB
#   modes          Bsend (attach/detach, space reused once delivered: fails
#                  on stock ob1 and pml_ucx, which give up), Rsend,
#                  standard, self, PROC_NULL
#   cancel         cancel of receives and sends
#   truncation     MPI_ERR_TRUNCATE and no write past the buffer
#                  (fails on stock ob1 for rendezvous sizes: ob1 bug)
#   datatypes      vector/indexed/struct/resized, gaps untouched
#   intercomm      intercommunicator p2p (groups of 3 and 2), merge
#   threads        MPI_THREAD_MULTIPLE, 4 threads per rank
#   thread_order   MPI_THREAD_MULTIPLE, 3 sender + 3 receiver threads
#                  on one communicator: every receive gets the message
#                  MPI's order gives it (wildcard/exact, unexpected)
#   collectives    blocking and nonblocking collectives, world + split
#   coll_variants  the other collectives: v/w variants, scans,
#                  reduce_scatter, intercommunicator, neighbourhood
#   newcomm        sends right after Comm_dup/split/create (NEWCOMM_LIMIT=L:
#                  dups until one is refused, below L)
#   rma            Put/Get/Accumulate/atomics: fence, lock, lock_all+flush, PSCW
#   lifetime       communicators and datatypes freed with operations
#                  pending (receive posted, unexpected, rendezvous)
#   status_fields  blocking receives and probes leave MPI_ERROR alone
#   assertions     MPI-4 info assertions: traffic on communicators made
#                  with each; under ubermatch the relaxed engine chosen
#                  (pvar), wildcards they rule out fail, set_info
#   alloc_faults   with pml_ubermatch_inject_alloc_failure (and
#                  ALLOC_FAULTS_ARGS=--expect-failures): failed
#                  allocations fail their own receives, nothing else
#   bigmsg         0 B, 1 B, 2^31-1 B, 2100 MiB (derived type), data
#                  checked; BIGMSG_SKIP_HUGE=1: only 0 and 1 B
set -u

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
    echo "mpi tests: 0 passed, 1 failed"
    exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${UM_BUILD:-$here/../../build}
LOG_DIR=$1
shift
mkdir -p "$LOG_DIR" || {
    echo "cannot create $LOG_DIR"
    echo "mpi tests: 0 passed, 1 failed"
    exit 2
}
LOG_DIR=$(cd "$LOG_DIR" && pwd)
ONLY=${MPI_TESTS_ONLY:-}
SKIP=${MPI_TESTS_SKIP:-}
VERBOSE=${MPI_TESTS_VERBOSE:-0}

# The tests, in local.mk's order, built (only what changed) by the build tree.
make_q() { make --no-print-directory -s -C "$build" "$@"; }
if ! all=$(make_q print-mpi-tests) || [ -z "$all" ]; then
    echo "no configured build tree in $build (bash scripts/build.sh, or set UM_BUILD)"
    echo "mpi tests: 0 passed, 1 failed"
    exit 2
fi
if ! make_q $all >"$LOG_DIR/build.log" 2>&1; then
    echo "FAIL building the tests (make -C $build)"
    tail -n 15 "$LOG_DIR/build.log" | sed 's/^/    | /'
    echo "mpi tests: 0 passed, 1 failed"
    exit 1
fi

in_list() { # word, list
    case " $2 " in *" $1 "*) return 0 ;; esac
    return 1
}

names=""
for prog in $all; do names="$names $(basename "$prog")"; done
if [ -n "$ONLY" ]; then
    for t in $ONLY; do
        in_list "$t" "$names" || echo "warning: MPI_TESTS_ONLY names unknown test '$t'"
    done
fi

passed=0
failed=0
suite_start=$SECONDS

for prog in $all; do
    t=$(basename "$prog")
    if [ -n "$ONLY" ] && ! in_list "$t" "$ONLY"; then continue; fi
    if in_list "$t" "$SKIP"; then
        echo "SKIP $t"
        continue
    fi
    log="$LOG_DIR/$t.log"
    if "$here/run-one.sh" "$@" "$build/$prog" >"$log" 2>&1; then
        tail -n 1 "$log"
        [ "$VERBOSE" = 1 ] && sed '$d; s/^/    | /' "$log"
        passed=$((passed + 1))
    else
        tail -n 1 "$log"
        reason=$(grep -m1 "^FAIL $t:" "$log" || true)
        [ -n "$reason" ] && echo "    reason: $reason"
        if [ "$VERBOSE" = 1 ]; then sed '$d; s/^/    | /' "$log"; else sed '$d' "$log" | tail -n 15 | sed 's/^/    | /'; fi
        failed=$((failed + 1))
    fi
done

echo "(suite wall time $((SECONDS - suite_start)) s, logs in $LOG_DIR)"
echo "mpi tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
