#!/usr/bin/env bash
# MPI-level test suite for a PML (ubermatch, or a stock one to check the tests).
#
# usage: test/mpi/run-mpi-tests.sh BUILD_DIR [extra mpirun args...]
#   e.g. test/mpi/run-mpi-tests.sh /tmp/mpitests --mca pml ob1
#        test/mpi/run-mpi-tests.sh /tmp/mpitests --mca pml ob1 --mca btl self,tcp
#        test/mpi/run-mpi-tests.sh /tmp/mpitests --mca pml ubermatch
#
# Compiles every test/mpi/*.c (with test/mpi/mpitest.h) into BUILD_DIR with
# "$MPICC -O2 -Wall -Wextra -Werror -pthread", only when the source or the
# header is newer than the binary, then runs each test as
#   timeout 60 mpirun --allow-run-as-root --oversubscribe -np N [extra args] BUILD_DIR/<test>
# and prints "PASS name (...)" or "FAIL name (reason)" followed by the last
# lines of the test's output. A test passes when mpirun exits 0 and rank 0
# printed "PASS <name> ...". The last line is always
#   mpi tests: N passed, M failed
# and the exit status is non-zero when any test failed (or none ran).
#
# Environment:
#   MPI_TESTS_ONLY="a b"   run only these tests (names without .c)
#   MPI_TESTS_SKIP="x y"   skip these tests
#   MPI_TESTS_TIMEOUT=60   seconds per test (mpirun is killed after that); the
#                          tests' own watchdog (MPITEST_WATCHDOG_S, mpitest.h)
#                          fires 5 s before, unless set
#   MPI_TESTS_VERBOSE=1    print every test's full output
#   MPICC=mpicc MPIRUN=mpirun
# Each test's full output is kept in BUILD_DIR/<test>.log.
#
# Tests and rank counts (ranks are oversubscribed; 2 cores are enough):
#   test         ranks  what
#   pingpong       2    0 B, 1 B, 2^k up to 16 MiB; blocking and nonblocking
#   ordering       6    non-overtaking, wildcard vs specific receives, posted
#                       and unexpected queues, 5 senders
#   unexpected     3    10^5 unexpected messages, drained in MPI order
#   probe          3    Probe/Iprobe/Mprobe/Improbe, Mrecv/Imrecv
#   persistent     2    Send/Recv/Ssend/Bsend/Rsend_init, Start(all), free
#   ssend          2    Issend not complete before matched; Ssend 0 B/1 MiB
#   modes          2    Bsend (attach/detach), Rsend, standard, self, PROC_NULL
#   cancel         2    cancel of receives and sends
#   truncation     2    MPI_ERR_TRUNCATE and no write past the buffer
#                       (fails on stock ob1 for rendezvous sizes: ob1 bug)
#   datatypes      2    vector/indexed/struct/resized, gaps untouched
#   intercomm      5    intercommunicator p2p (groups of 3 and 2), merge
#   threads        2    MPI_THREAD_MULTIPLE, 4 threads per rank
#   thread_order   2    MPI_THREAD_MULTIPLE, 3 sender + 3 receiver threads
#                       on one communicator: every receive gets the message
#                       MPI's order gives it (wildcard/exact, unexpected)
#   collectives    5    blocking and nonblocking collectives, world + split
#   coll_variants  5    the other collectives: v/w variants, scans,
#                       reduce_scatter, intercommunicator, neighbourhood
#   newcomm        8    sends right after Comm_dup/split/create
#   lifetime       2    communicators and datatypes freed with operations
#                       pending (receive posted, unexpected, rendezvous)
#   status_fields  2    blocking receives and probes leave MPI_ERROR alone
#   bigmsg         2    0 B, 1 B, 2^31-1 B, 2100 MiB (derived type), data
#                       checked; BIGMSG_SKIP_HUGE=1: only 0 and 1 B
#   alloc_faults   2    with pml_ubermatch_inject_alloc_failure (and
#                       ALLOC_FAULTS_ARGS=--expect-failures): failed
#                       allocations fail their own receives, nothing else
#   rma            3    Put/Get/Accumulate/atomics: fence, lock, lock_all+flush, PSCW
#   assertions     2    MPI-4 info assertions: traffic on communicators made
#                       with each; under ubermatch the relaxed engine chosen
#                       (pvar), wildcards they rule out fail, set_info
# A test not in this table runs with 2 ranks.
set -u

TEST_ORDER="pingpong ordering unexpected probe persistent ssend modes cancel truncation datatypes intercomm threads thread_order collectives coll_variants newcomm rma lifetime status_fields assertions alloc_faults bigmsg"
ranks_of() {
    case "$1" in
    ordering) echo 6 ;;
    unexpected | probe | rma) echo 3 ;;
    intercomm | collectives | coll_variants) echo 5 ;;
    newcomm) echo 8 ;;
    *) echo 2 ;;
    esac
}

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
    echo "mpi tests: 0 passed, 1 failed"
    exit 2
fi

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD_DIR=$1
shift
mkdir -p "$BUILD_DIR" || {
    echo "cannot create $BUILD_DIR"
    echo "mpi tests: 0 passed, 1 failed"
    exit 2
}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
TIMEOUT=${MPI_TESTS_TIMEOUT:-60}
# A longer time limit must reach the tests too: their watchdog (45 s by
# default) would otherwise fail a slow but sound run, e.g. bigmsg's 2 GiB
# messages on a loaded machine (~110 s at load 20).
export MPITEST_WATCHDOG_S=${MPITEST_WATCHDOG_S:-$((TIMEOUT > 10 ? TIMEOUT - 5 : TIMEOUT))}
ONLY=${MPI_TESTS_ONLY:-}
SKIP=${MPI_TESTS_SKIP:-}
VERBOSE=${MPI_TESTS_VERBOSE:-0}

# the tests: the table's order first, then any other *.c
all=""
for t in $TEST_ORDER; do
    [ -f "$SRC_DIR/$t.c" ] && all="$all $t"
done
for f in "$SRC_DIR"/*.c; do
    [ -f "$f" ] || continue
    t=$(basename "$f" .c)
    case " $all " in *" $t "*) ;; *) all="$all $t" ;; esac
done

in_list() { # word, list
    case " $2 " in *" $1 "*) return 0 ;; esac
    return 1
}

if [ -n "$ONLY" ]; then
    for t in $ONLY; do
        in_list "$t" "$all" || echo "warning: MPI_TESTS_ONLY names unknown test '$t'"
    done
fi

passed=0
failed=0
suite_start=$SECONDS

show_tail() { # file
    tail -n 15 "$1" | sed 's/^/    | /'
}

for t in $all; do
    if [ -n "$ONLY" ] && ! in_list "$t" "$ONLY"; then continue; fi
    if in_list "$t" "$SKIP"; then
        echo "SKIP $t"
        continue
    fi
    src="$SRC_DIR/$t.c"
    bin="$BUILD_DIR/$t"
    log="$BUILD_DIR/$t.log"
    if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ "$SRC_DIR/mpitest.h" -nt "$bin" ]; then
        if ! "$MPICC" -O2 -Wall -Wextra -Werror -pthread -I"$SRC_DIR" -o "$bin" "$src" >"$log" 2>&1; then
            echo "FAIL $t (compile error)"
            show_tail "$log"
            rm -f "$bin"
            failed=$((failed + 1))
            continue
        fi
    fi
    np=$(ranks_of "$t")
    start=$(date +%s.%N)
    timeout -k 10 "$TIMEOUT" "$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" "$@" "$bin" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc -eq 0 ] && grep -q "^PASS $t\b" "$log"; then
        echo "PASS $t (np $np, $secs s)"
        [ "$VERBOSE" = 1 ] && sed 's/^/    | /' "$log"
        passed=$((passed + 1))
    else
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            why="timeout after $TIMEOUT s"
        elif [ $rc -eq 0 ]; then
            why="exit code 0 but no 'PASS $t' line"
        else
            why="exit code $rc"
        fi
        echo "FAIL $t ($why, np $np, $secs s)"
        reason=$(grep -m1 "^FAIL $t" "$log" || true)
        [ -n "$reason" ] && echo "    reason: $reason"
        if [ "$VERBOSE" = 1 ]; then sed 's/^/    | /' "$log"; else show_tail "$log"; fi
        failed=$((failed + 1))
    fi
done

echo "(suite wall time $((SECONDS - suite_start)) s, logs in $BUILD_DIR)"
echo "mpi tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
